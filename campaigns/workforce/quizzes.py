"""Qualification quizzes as a stage kind: a ``quiz`` stage's submissions are scored
against its answer key when stored, and a pass grants the stage's qualification, here
and on the platform (a ``grant`` provider operation: MTurk custom type, Prolific
participant group). Later stages that require it (``{"quiz_stage": <stage id>}`` or
``{"qualification_type_id": <id>}`` in their ``qualification_requirements``) are open
only to workers who hold it. Quiz pay is its own ledger kind (``quiz_payment``).

Retake policy (stage config ``retake``: ``max_tries``, default 1, and
``delay_minutes`` between a failed try and the next, default 0): a worker who passed
takes the quiz no more; one who failed may try again, on another of the quiz's HITs
(upload one placeholder item per try), after the delay and within the tries. A pass
can earn ``pass_bonus`` (key ``quiz-pass:<stage>:<worker>``, once).

Tutorials are quizzes with instructional ``steps`` and ``practice`` questions whose
feedback the page gives at once; only the scored ``questions`` count.

Requirements naming stages are resolved to qualification types by
``stage_requirements``: ``{"quiz_stage": id}`` (passed that quiz), ``{"round_stage": id,
"round": n}`` (qualified after round n of that writing stage) and ``{"graders_stage":
id, "round": n}`` (promoted to grade after round n).
"""

from __future__ import annotations

import logging
from decimal import Decimal, InvalidOperation
from typing import Any

from django.db import transaction

from campaigns.design.platform import platform_for
from campaigns.models import (
    Assignment,
    Stage,
)
from campaigns.tasktypes import QuizScore, score_quiz
from campaigns.workforce.qualification_types import quiz_qualification_type
from qaportal.errors import DomainError

logger = logging.getLogger(__name__)

# A quiz try counts once it is submitted, whatever the review made of it.


def quiz_submission_grade(*, assignment: Assignment, stage: Stage) -> QuizScore:
    """Score a stored quiz answer, record the score in ``review_details["quiz"]`` and,
    on a pass, grant the quiz's qualification (idempotent per worker and type: see
    ``paid_qualification_grant``). Call in the transaction that stores the answer."""
    score = score_quiz(stage.config or {}, assignment.answers or {})
    details: dict[str, Any] = dict(assignment.review_details or {})
    details["quiz"] = {
        "points": score.points,
        "max_points": score.max_points,
        "passed": score.passed,
        "questions": [
            {"id": q.id, "points": q.points, "passed": q.passed, "reason": q.reason}
            for q in score.per_question
        ],
    }
    practice = _practice_results(stage.config or {}, assignment.answers or {})
    if practice:
        details["quiz"]["practice"] = practice
    Assignment.objects.filter(pk=assignment.pk).update(review_details=details)
    assignment.review_details = details
    if score.passed:
        platform_for(stage.campaign).qualification_grant(
            qualification_type=quiz_qualification_type(stage=stage),
            worker=assignment.worker,
            source=f"quiz:{stage.pk}",
            value=max(0, round(score.points)),
        )
        _pass_bonus(assignment=assignment, stage=stage)
    return score


def _practice_results(config: dict[str, Any], answers: dict[str, Any]) -> list[dict[str, Any]]:
    """Which practice questions the worker got right (recorded, never scored)."""
    given = {
        r.get("id"): set(r.get("selected") or [])
        for r in answers.get("practice") or []
        if isinstance(r, dict)
    }
    out = []
    for q in config.get("practice") or []:
        right = {o["id"] for o in q.get("options", []) if o.get("correct")}
        out.append({"id": q["id"], "right": given.get(q["id"], set()) == right})
    return out


def _pass_bonus(*, assignment: Assignment, stage: Stage) -> None:
    """Pay the quiz's ``pass_bonus`` once per worker. A bonus that cannot be paid now
    (budget, platform identity) is recorded on the assignment for the requester and
    never undoes the worker's stored quiz."""
    raw = (stage.config or {}).get("pass_bonus")
    if not raw:
        return
    try:
        amount = Decimal(str(raw))
        with transaction.atomic():
            platform_for(stage.campaign).bonus_pay(
                assignment=assignment,
                amount=amount,
                reason=f"Passed the quiz “{stage.name}”.",
                key=f"quiz-pass:{stage.pk}:{assignment.worker_id}",
            )
    except (DomainError, InvalidOperation) as exc:
        logger.warning("quiz pass bonus not paid for assignment %s: %s", assignment.pk, exc)
        details = dict(assignment.review_details or {})
        details.setdefault("quiz", {})["bonus_error"] = str(exc)
        Assignment.objects.filter(pk=assignment.pk).update(review_details=details)
        assignment.review_details = details


def quiz_answer_stored(*, assignment: Assignment, stage: Stage, task_type: Any, **_: Any) -> None:
    """``answer_stored`` subscriber: a quiz is scored in the transaction that stores it."""
    if task_type.is_quiz:
        quiz_submission_grade(assignment=assignment, stage=stage)
