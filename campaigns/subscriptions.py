"""The campaigns rooms' subscriptions to the events of the rooms below them.

Called once from ``CampaignsConfig.ready()``; linking and validation subscribe
in their own ``AppConfig.ready()``.
"""

from __future__ import annotations

from typing import Any

from campaigns.assist.adversarial import (
    BONUS_RULE,
    adversarial_answer_stored,
    adversarial_fools_verify,
    adversarial_submit_check,
    bonus_rules_validate,
)
from campaigns.assist.flags import llm_flags_request
from campaigns.design.events import items_added
from campaigns.design.stage_rules import RuleChecks, stage_rule_checks_register
from campaigns.platforms.publishing import stage_publish_added
from campaigns.work.events import answer_stored, answer_submitting, assignment_decided
from campaigns.work.handoff import handoffs_run
from campaigns.workforce.quizzes import quiz_answer_stored
from qaportal.outbox import task_batch_register


def _handoff_args(*, assignment_id: int, approved: bool, **_: Any) -> list[Any] | None:
    return [assignment_id] if approved else None


def _handoffs_run(args_lists: list[list[Any]]) -> None:
    handoffs_run(assignment_ids=[int(args[0]) for args in args_lists])


def _llm_flags_request(*, assignment: Any, stage: Any, task_type: Any, **_: Any) -> None:
    llm_flags_request(assignment=assignment, stage=stage, task_type=task_type)


def subscribe() -> None:
    """Quizzes are scored when stored; a stage with ``llm_flag`` asks its model the
    same task (campaigns.assist.flags); approved work is handed off after commit (a
    queue of hand-offs drained in one go runs as one, ``handoffs_run``); items added to
    a pilot or live stage are published."""
    items_added.subscribe(stage_publish_added)
    # Model in the loop: the writer's claim joins the stored answer; validators' answers
    # confirm fools (and pay the verified_fool bonus), in the submission's transaction.
    # Every workforce's submission: not before the model was asked (and answered, marked).
    answer_submitting.subscribe(adversarial_submit_check)
    answer_stored.subscribe(adversarial_answer_stored)
    answer_stored.subscribe(adversarial_fools_verify)
    stage_rule_checks_register(
        RuleChecks(
            owner="assist",
            bonus_rules=frozenset({BONUS_RULE}),
            escalation_rules=frozenset(),
            bonus_rules_validate=bonus_rules_validate,
        )
    )
    answer_stored.subscribe(quiz_answer_stored)
    answer_stored.subscribe(_llm_flags_request)
    assignment_decided.subscribe_task("campaigns.handoff_run", args=_handoff_args)
    task_batch_register("campaigns.handoff_run", _handoffs_run)
