"""The campaigns rooms' subscriptions to the events of the rooms below them.

Called once from ``CampaignsConfig.ready()``; linking and validation subscribe
in their own ``AppConfig.ready()``.
"""

from __future__ import annotations

from typing import Any

from campaigns.work.events import answer_stored, assignment_decided
from campaigns.workforce.quizzes import quiz_answer_stored


def _handoff_args(*, assignment_id: int, approved: bool, **_: Any) -> list[Any] | None:
    return [assignment_id] if approved else None


def subscribe() -> None:
    """Quizzes are scored when stored; approved work is handed off after commit."""
    answer_stored.subscribe(quiz_answer_stored)
    assignment_decided.subscribe_task("campaigns.handoff_run", args=_handoff_args)
