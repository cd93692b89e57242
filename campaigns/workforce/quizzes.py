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
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from django.db import transaction

from campaigns.models import (
    Assignment,
    AssignmentStatus,
    QualificationGrant,
    QualificationKind,
    QualificationType,
    Stage,
    Worker,
)
from campaigns.platforms.workers import paid_qualification_grant
from campaigns.tasktypes import QuizScore, score_quiz
from qaportal.errors import DomainError

logger = logging.getLogger(__name__)

QUIZ_TASK_TYPE = "quiz"
# A quiz try counts once it is submitted, whatever the review made of it.
TRIED = (AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED, AssignmentStatus.REJECTED)


def quiz_qualification_type(*, stage: Stage) -> QualificationType:
    """The qualification a pass of ``stage`` grants: ``config["grants"]`` names it,
    else ``Quiz passed: <campaign>/<stage>``; one of the campaign owner's types."""
    campaign = stage.campaign
    name = str((stage.config or {}).get("grants") or f"Quiz passed: {campaign.slug}/{stage.name}")
    qt, _ = QualificationType.objects.get_or_create(
        owner_id=campaign.owner_id,
        name=name[:120],
        defaults={
            "kind": QualificationKind.QUIZ,
            "description": f"Passed the quiz of stage “{stage.name}” of {campaign.slug}.",
            "config": {"stage": stage.pk},
        },
    )
    return qt


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
        paid_qualification_grant(
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
    from campaigns.platforms.worker_actions import assignment_bonus_pay

    try:
        amount = Decimal(str(raw))
        with transaction.atomic():
            assignment_bonus_pay(
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


def quiz_retake_refusal(*, stage: Stage, worker: Worker, now: datetime) -> str | None:
    """Why ``worker`` may not take the quiz of ``stage`` now (None: they may).

    Passed already; or every try used (``retake.max_tries``, default 1); or the last
    failed try is less than ``retake.delay_minutes`` old."""
    retake = (stage.config or {}).get("retake") or {}
    max_tries = int(retake.get("max_tries", 1))
    delay = timedelta(minutes=float(retake.get("delay_minutes", 0)))
    tries = list(
        Assignment.objects.filter(hit__stage=stage, worker=worker, status__in=TRIED)
        .order_by("-submitted_at", "-pk")
        .values_list("submitted_at", "review_details")
    )
    if any(((d or {}).get("quiz") or {}).get("passed") for _, d in tries):
        return "You passed this quiz already."
    if len(tries) >= max_tries:
        return (
            "You have used your try at this quiz."
            if max_tries == 1
            else f"You have used all {max_tries} tries at this quiz."
        )
    last = tries[0][0] if tries else None
    if last is not None and now < last + delay:
        when = (last + delay).strftime("%Y-%m-%d %H:%M UTC")
        return f"You can try this quiz again after {when}."
    return None


STAGE_REFERENCES = ("quiz_stage", "round_stage", "graders_stage")


def _referenced_type(*, stage: Stage, req: dict[str, Any]) -> QualificationType | None:
    """The qualification type a stage-naming requirement stands for (None: no such
    stage in the campaign)."""
    from campaigns.workforce.rounds import round_graders_type, round_qualification_type

    key = next(k for k in STAGE_REFERENCES if req.get(k) is not None)
    other = Stage.objects.filter(pk=int(req[key]), campaign_id=stage.campaign_id).first()
    if other is None:
        return None
    if key == "quiz_stage":
        return quiz_qualification_type(stage=other)
    number = int(req.get("round") or 1)
    if key == "round_stage":
        return round_qualification_type(stage=other, round_number=number)
    return round_graders_type(stage=other, round_number=number)


def stage_requirements(*, stage: Stage) -> list[dict[str, Any]]:
    """``stage``'s requirements with those naming a stage (quiz passed, round
    qualified, promoted grader) replaced by ``{"qualification_type_id": id}``, the shape
    the providers translate. A reference to a stage not in the campaign is refused."""
    out: list[dict[str, Any]] = []
    for req in stage.qualification_requirements or []:
        if not isinstance(req, dict):
            continue
        if not any(req.get(k) is not None for k in STAGE_REFERENCES):
            out.append(req)
            continue
        qt = _referenced_type(stage=stage, req=req)
        if qt is None:
            raise DomainError(
                f"Stage “{stage.name}” requires a stage that is not in this campaign.",
                errors={"qualification_requirements": [str(req)]},
            )
        out.append({"qualification_type_id": qt.pk})
    return out


def stage_required_qualifications(*, stage: Stage) -> list[int]:
    """Ids of the qualification types ``stage`` requires of its workers."""
    return [
        int(r["qualification_type_id"])
        for r in stage_requirements(stage=stage)
        if r.get("qualification_type_id") is not None
    ]


def worker_qualified(*, stage: Stage, worker: Worker) -> bool:
    """Whether ``worker`` holds every qualification ``stage`` requires (unrevoked)."""
    wanted = set(stage_required_qualifications(stage=stage))
    if not wanted:
        return True
    held = set(
        QualificationGrant.objects.filter(
            worker=worker, qualification_type_id__in=wanted, revoked_at__isnull=True
        ).values_list("qualification_type_id", flat=True)
    )
    return wanted <= held


NOT_QUALIFIED = "This task needs a qualification you do not hold yet (pass its quiz first)."


def stage_refusal(*, stage: Stage, worker: Worker, now: datetime) -> str | None:
    """Why ``worker`` may not take work in ``stage`` for want of a qualification or by
    the quiz's retake policy (None: nothing in the way). Access, blocks and the
    campaign state are checked by the allocation itself."""
    if not worker_qualified(stage=stage, worker=worker):
        return NOT_QUALIFIED
    if stage.task_type == QUIZ_TASK_TYPE:
        return quiz_retake_refusal(stage=stage, worker=worker, now=now)
    return None
