"""What a worker is told about quizzes: which quiz stands between them and a stage
(with a link to it), and, after a try, the score, whether it passed and when a retake
is possible. Reads only; the scoring and the grants are ``campaigns.workforce.quizzes``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from campaigns.models import (
    HANDED_IN,
    Assignment,
    QualificationGrant,
    QualificationType,
    Stage,
    Worker,
)
from campaigns.workforce.qualification_types import quiz_qualification_type
from campaigns.workforce.requirements import quiz_retake_refusal


@dataclass(frozen=True)
class QuizResult:
    """One scored try: points out of ``max_points``, the pass mark, and what comes next
    (``retake``: why not now, or "" when a new try is open; ``opens``: stages a pass
    lets the worker into)."""

    points: float
    max_points: float
    pass_points: float
    passed: bool
    retake: str = ""
    opens: list[Stage] = field(default_factory=list)
    # Why questions failed ("Question 3: …"): a try can fail with enough points.
    failed: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class QuizGate:
    """A quiz ``worker`` must pass before ``stage``: the quiz stage (None when the
    requirement is a qualification without a quiz here) and the last try's result."""

    quiz: Stage | None
    qualification: str
    last: QuizResult | None
    # The worker may take the quiz now (not when every try is used or the wait not over):
    # the page links to it only then.
    can_take: bool = True


def _pass_points(config: dict[str, Any], max_points: float) -> float:
    scoring = config.get("scoring") or {}
    if "pass_points" in scoring:
        return float(scoring["pass_points"])
    if "pass_ratio" in scoring:
        return float(scoring["pass_ratio"]) * max_points
    return max_points


def _stages_requiring(quiz: Stage) -> list[Stage]:
    return [
        s
        for s in quiz.campaign.stages.order_by("position")
        if any(
            isinstance(r, dict) and str(r.get("quiz_stage")) == str(quiz.pk)
            for r in s.qualification_requirements or []
        )
    ]


def quiz_result(*, assignment: Assignment, now: datetime) -> QuizResult | None:
    """The result of a scored quiz try (None: ``assignment`` is no scored quiz try)."""
    score = (assignment.review_details or {}).get("quiz")
    if not isinstance(score, dict) or "points" not in score:
        return None
    stage = assignment.hit.stage
    max_points = float(score.get("max_points") or 0)
    passed = bool(score.get("passed"))
    retake = ""
    if not passed:
        retake = (
            quiz_retake_refusal(stage=stage, worker=assignment.worker, now=now)
            or "You may try this quiz again now."
        )
    return QuizResult(
        points=float(score["points"]),
        max_points=max_points,
        pass_points=_pass_points(stage.config or {}, max_points),
        passed=passed,
        retake=retake,
        opens=_stages_requiring(stage) if passed else [],
        failed=[
            f"Question {n}: {q.get('reason') or 'not passed'}"
            for n, q in enumerate(score.get("questions") or [], 1)
            if isinstance(q, dict) and not q.get("passed", True)
        ],
    )


def stage_quiz_gates(*, stage: Stage, worker: Worker, now: datetime) -> list[QuizGate]:
    """The quizzes of ``stage``'s requirements ``worker`` has not passed, in order, each
    with their last try; qualifications without a quiz in the campaign are named."""
    held = set(
        QualificationGrant.objects.filter(worker=worker, revoked_at__isnull=True).values_list(
            "qualification_type_id", flat=True
        )
    )
    gates = []
    for req in stage.qualification_requirements or []:
        if not isinstance(req, dict):
            continue
        if req.get("quiz_stage") is not None:
            quiz = Stage.objects.filter(pk=int(req["quiz_stage"]), campaign=stage.campaign).first()
            if quiz is None:
                continue
            qt = quiz_qualification_type(stage=quiz)
            if qt.pk in held:
                continue
            last = (
                Assignment.objects.filter(hit__stage=quiz, worker=worker, status__in=HANDED_IN)
                .select_related("hit__stage__campaign", "worker")
                .order_by("-submitted_at", "-pk")
                .first()
            )
            result = quiz_result(assignment=last, now=now) if last else None
            can_take = quiz_retake_refusal(stage=quiz, worker=worker, now=now) is None
            gates.append(QuizGate(quiz=quiz, qualification=qt.name, last=result, can_take=can_take))
        elif req.get("qualification_type_id") is not None:
            qt_id = int(req["qualification_type_id"])
            if qt_id not in held:
                name = QualificationType.objects.filter(pk=qt_id).values_list("name", flat=True)
                gates.append(QuizGate(quiz=None, qualification=name.first() or "", last=None))
        elif req.get("round_stage") is not None or req.get("graders_stage") is not None:
            gates.append(
                QuizGate(quiz=None, qualification="Qualified in an earlier round", last=None)
            )
    return gates
