"""Reads of the workforce room: protocol arms of stages and campaigns."""

from __future__ import annotations

import random

from campaigns.models import Campaign, Stage


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
