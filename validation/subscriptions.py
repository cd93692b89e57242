"""What validation does when the work room announces something, and the rule settings
it checks for the design room (both from ``ValidationConfig.ready()``).

- ``answer_stored``: ``validation.review_submission`` is queued after commit when the
  stage has rules that review each submission (``REVIEWING_RULES``) or an early-stop
  rule; a queue of them drained at once (``qaportal.outbox.outbox_deferred``) runs
  through ``validation.services.assignments_review``.
- stage settings: the review rules, the bonus rules linking does not own and the
  ``early_stop`` escalation rule are checked when a stage is saved (``RULE_CHECKS``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from campaigns.design.stage_rules import RuleChecks, stage_rule_checks_register
from campaigns.work.events import answer_stored
from qaportal.outbox import task_after_commit, task_batch_register
from validation.rules.settings import (
    BONUS_RULES,
    ESCALATION_RULES,
    RULE_HELP,
    RULES,
    bonus_rules_validate,
    escalation_rule_validate,
    review_rules_validate,
)
from validation.rules.verdicts import REVIEWING_RULES
from validation.services import assignments_review

RULE_CHECKS = RuleChecks(
    owner="validation",
    bonus_rules=None,  # every bonus rule linking does not own
    escalation_rules=frozenset({"early_stop"}),
    review_rules_validate=review_rules_validate,
    bonus_rules_validate=bonus_rules_validate,
    escalation_rule_validate=escalation_rule_validate,
    review_rule_params=RULES,
    bonus_rule_params=BONUS_RULES,
    escalation_rule_params=ESCALATION_RULES,
    rule_help=RULE_HELP,
)


def needs_review_after_submit(review_rules: Any, escalation_rule: Any) -> bool:
    """Whether a submission in a stage so configured goes to ``validation.review_submission``:
    a rule other than ``auto_approve`` that decides or acts on gold, or an early-stop rule."""
    rules = review_rules if isinstance(review_rules, list) else []
    reviewing = any(isinstance(r, Mapping) and r.get("rule") in REVIEWING_RULES for r in rules)
    early = isinstance(escalation_rule, Mapping) and escalation_rule.get("rule") == "early_stop"
    return reviewing or early


def on_answer_stored(*, assignment: Any, stage: Any, **_: Any) -> None:
    """``answer_stored`` subscriber: queue ``validation.review_submission`` after commit
    when the stage has rules that review each submission (or an early-stop rule)."""
    if needs_review_after_submit(stage.review_rules, stage.escalation_rule):
        task_after_commit("validation.review_submission", assignment.pk)


def _reviews_run(args_lists: list[list[Any]]) -> None:
    """Queued ``validation.review_submission`` messages drained in one go
    (``validation.services.assignments_review``)."""
    assignments_review(assignment_ids=[int(args[0]) for args in args_lists])


def subscribe() -> None:
    """Listen to the work room's events and check validation's rules in stage settings
    (from ``ValidationConfig.ready()``)."""
    answer_stored.subscribe(on_answer_stored)
    stage_rule_checks_register(RULE_CHECKS)
    task_batch_register("validation.review_submission", _reviews_run)
