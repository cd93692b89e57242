"""Qualification quizzes as a stage kind: a ``quiz`` stage's submissions are scored
against its answer key when stored, and a pass grants the stage's qualification, here
and on the platform (a ``grant`` provider operation: MTurk custom type, Prolific
participant group). Later stages that require it (``{"quiz_stage": <stage id>}`` or
``{"qualification_type_id": <id>}`` in their ``qualification_requirements``) are open
only to workers who hold it. Quiz pay is its own ledger kind (``quiz_payment``).
"""

from __future__ import annotations

from typing import Any

from campaigns.models import (
    Assignment,
    QualificationGrant,
    QualificationKind,
    QualificationType,
    Stage,
    Worker,
)
from campaigns.services.provider_workers import paid_qualification_grant
from campaigns.tasktypes import QuizScore, score_quiz

QUIZ_TASK_TYPE = "quiz"


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
    Assignment.objects.filter(pk=assignment.pk).update(review_details=details)
    assignment.review_details = details
    if score.passed:
        paid_qualification_grant(
            qualification_type=quiz_qualification_type(stage=stage),
            worker=assignment.worker,
            source=f"quiz:{stage.pk}",
            value=max(0, round(score.points)),
        )
    return score


def stage_required_qualifications(*, stage: Stage) -> list[int]:
    """Ids of the qualification types ``stage`` requires of its workers."""
    wanted: list[int] = []
    for req in stage.qualification_requirements or []:
        if not isinstance(req, dict):
            continue
        if req.get("qualification_type_id") is not None:
            wanted.append(int(req["qualification_type_id"]))
        elif req.get("quiz_stage") is not None:
            quiz = Stage.objects.filter(
                pk=int(req["quiz_stage"]), campaign_id=stage.campaign_id
            ).first()
            if quiz is not None:
                wanted.append(quiz_qualification_type(stage=quiz).pk)
    return wanted


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
