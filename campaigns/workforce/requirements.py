"""What a stage requires of its workers, and why a worker may not take its work now.

Reads: requirements naming another stage (a quiz passed, a round qualified, a promoted
grader) are resolved to qualification types (``qualification_types``); a quiz's retake
policy is checked against the worker's tries.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from campaigns.models import (
    HANDED_IN,
    Assignment,
    QualificationGrant,
    QualificationType,
    Stage,
    Worker,
)
from campaigns.tasktypes import task_type_get
from campaigns.workforce.qualification_types import (
    quiz_qualification_type,
    round_graders_type,
    round_qualification_type,
)
from qaportal.errors import DomainError

# A quiz try counts once it is submitted, whatever the review made of it.


def quiz_retake_refusal(*, stage: Stage, worker: Worker, now: datetime) -> str | None:
    """Why ``worker`` may not take the quiz of ``stage`` now (None: they may).

    Passed already; or every try used (``retake.max_tries``, default 1); or the last
    failed try is less than ``retake.delay_minutes`` old."""
    retake = (stage.config or {}).get("retake") or {}
    max_tries = int(retake.get("max_tries", 1))
    delay = timedelta(minutes=float(retake.get("delay_minutes", 0)))
    tries = list(
        Assignment.objects.filter(hit__stage=stage, worker=worker, status__in=HANDED_IN)
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
    key = next(k for k in STAGE_REFERENCES if req.get(k) is not None)
    # Stage services refuse anything but whole numbers; a row stored before they did
    # names no stage rather than breaking every page that reads it.
    reference, number = req[key], req.get("round") or 1
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (reference, number)):
        return None
    # With its campaign, which the qualification type's name and owner come from: a
    # worker's page resolves these on every opening of a stage.
    other = (
        Stage.objects.filter(pk=reference, campaign_id=stage.campaign_id)
        .select_related("campaign")
        .first()
    )
    if other is None:
        return None
    if key == "quiz_stage":
        return quiz_qualification_type(stage=other)
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
    if task_type_get(stage.task_type).is_quiz:
        return quiz_retake_refusal(stage=stage, worker=worker, now=now)
    return None
