"""Reads of the workforce room: protocol arms of stages and campaigns, and the
requester's qualification types."""

from __future__ import annotations

import random

from campaigns.models import Campaign, QualificationType, Stage


def stage_arm(stage: Stage) -> str:
    """The arm ``stage`` belongs to ("" for a stage every worker shares)."""
    arm = (stage.config or {}).get("arm", "")
    return str(arm) if arm else ""


def campaign_arms(*, campaign: Campaign) -> list[str]:
    """The campaign's arms, sorted: the arms its stages name."""
    arms = {stage_arm(s) for s in campaign.stages.only("config")}
    return sorted(a for a in arms if a)


def arm_for_position(*, campaign_id: int, arms: list[str], position: int) -> str:
    """The arm of the ``position``-th worker (0-based) to join: balanced blocks."""
    block, index = divmod(position, len(arms))
    order = list(arms)
    random.Random(f"qaportal-arms:{campaign_id}:{block}").shuffle(order)
    return order[index]


def qualification_type_choices(*, owner_id: int) -> list[tuple[int, str]]:
    """``(id, name)`` of the qualification types ``owner_id`` owns, by name: what a stage
    of theirs may require."""
    rows = QualificationType.objects.filter(owner_id=owner_id).order_by("name", "pk")
    return [(pk, name) for pk, name in rows.values_list("pk", "name")]
