"""When a submission needs the review rules: a light module, imported by the submit path.

Kept apart from ``validation.rules`` (which loads ROUGE and its dependencies, a few
seconds of imports) so that the submit path stays cheap to import.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from campaigns.work.events import answer_stored
from qaportal.outbox import task_after_commit

# The rules that decide assignments (``validation.rules.RULE_FUNCTIONS``), less
# auto_approve, which ``assignment_submit`` applies itself.
REVIEWING_RULES = frozenset(
    {
        "gold_accuracy",
        "consensus",
        "peer_overlap",
        "work_time",
        "paste_share",
        "duplicates",
        "no_answer_rate",
        "gold_disqualify",
    }
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


def subscribe() -> None:
    """Listen to the work room's events (from ``ValidationConfig.ready()``)."""
    answer_stored.subscribe(on_answer_stored)
