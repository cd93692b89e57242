"""The qualification types quizzes and rounds grant, made on first use.

Each is found by its natural key (owner and name) and created the first time it is
asked for, so a stage that requires a quiz or a round can be resolved before anyone
has passed: an idempotent lookup, safe from reads and writes alike.
"""

from __future__ import annotations

from typing import Any

from campaigns.models import QualificationKind, QualificationType, Stage


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


def _round_type(*, stage: Stage, round_number: int, what: str) -> QualificationType:
    campaign = stage.campaign
    config: dict[str, Any] = {"stage": stage.pk, "round": round_number}
    if what == "graders":
        config["graders"] = True
    qt, _ = QualificationType.objects.get_or_create(
        owner_id=campaign.owner_id,
        name=f"Round {round_number} {what}: {campaign.slug}/{stage.name}"[:120],
        defaults={"kind": QualificationKind.ROUND, "config": config},
    )
    return qt


def round_qualification_type(*, stage: Stage, round_number: int) -> QualificationType:
    """The qualification the round's qualifiers get (the next round's stage requires it)."""
    return _round_type(stage=stage, round_number=round_number, what="qualified")


def round_graders_type(*, stage: Stage, round_number: int) -> QualificationType:
    """The qualification of the writers promoted to grade after ``round_number``."""
    return _round_type(stage=stage, round_number=round_number, what="graders")
