"""What linking does when the work room announces something (subscribed in
``LinkingConfig.ready()``); cheap for every other stage: a look at the stage row
the announcement carries, then a task queued through the outbox, after commit.

- ``stage_published``: a linking stage gets spans and Wikidata candidates ready
  (``linking.prefetch_stage``) before workers arrive.
- ``answer_stored``: entity agreement is judged on the HIT
  (``linking.entity_agreement_check``) when the stage has an ``entity_agreement``
  escalation rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from campaigns.design.stage_rules import RuleChecks, stage_rule_checks_register
from campaigns.tasktypes import task_type_get
from campaigns.tasktypes.entity_linking import redirect_resolver_register
from campaigns.work.events import answer_stored, stage_published
from linking import agreement
from linking.agreement import EscalationRule
from linking.selectors import entries_resolve_redirects
from linking.services import hits_entity_agreement_check
from qaportal.outbox import task_after_commit, task_batch_register

if TYPE_CHECKING:
    from campaigns.models import Assignment, Stage


def on_stage_published(*, stage: Stage, **_: Any) -> None:
    """Queue ``linking.prefetch_stage`` after commit when ``stage`` links entities."""
    if task_type_get(stage.task_type).links_entities:
        task_after_commit("linking.prefetch_stage", stage.pk)


def on_answer_stored(*, assignment: Assignment, stage: Stage, task_type: Any, **_: Any) -> None:
    """Queue ``linking.entity_agreement_check`` after commit for a linking stage with
    an ``entity_agreement`` escalation rule."""
    if task_type.links_entities and EscalationRule.from_json(stage.escalation_rule):
        task_after_commit("linking.entity_agreement_check", assignment.hit_id)


def _agreement_checks_run(args_lists: list[list[Any]]) -> None:
    """Queued ``linking.entity_agreement_check`` messages drained in one go."""
    hits_entity_agreement_check(hit_ids=[int(args[0]) for args in args_lists])


RULE_CHECKS = RuleChecks(
    owner="linking",
    bonus_rules=frozenset({agreement.BONUS_RULE}),
    escalation_rules=frozenset({agreement.ESCALATION_RULE}),
    bonus_rules_validate=agreement.bonus_rules_validate,
    escalation_rule_validate=agreement.escalation_rule_validate,
    bonus_rule_params=agreement.BONUS_PARAMS,
    escalation_rule_params=agreement.ESCALATION_PARAMS,
    rule_help=agreement.RULE_HELP,
)


def subscribe() -> None:
    """Listen to the work room's events and check linking's rules in stage settings
    (from ``LinkingConfig.ready()``)."""
    stage_published.subscribe(on_stage_published)
    answer_stored.subscribe(on_answer_stored)
    stage_rule_checks_register(RULE_CHECKS)
    redirect_resolver_register(entries_resolve_redirects)
    task_batch_register("linking.entity_agreement_check", _agreement_checks_run)
