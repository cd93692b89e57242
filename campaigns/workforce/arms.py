"""Randomized protocol arms (Nangia et al.'s BASELINE / JUSTIFICATION / CROWD / EXPERT):
a stage whose config names an ``arm`` belongs to that arm's pipeline; stages without
one are shared. A worker is assigned to an arm on first contact with the campaign and
stays there.

Assignment is by balanced blocks: the k arms, shuffled with a generator seeded by the
campaign and the block number, are dealt to the 1st..kth worker of each block, so every
k consecutive new workers cover every arm once, and the same campaign gives the same
sequence. Concurrent first contacts are serialised on the campaign row, so the count
that decides the block and position is never read twice.
"""

from __future__ import annotations

import random

from django.db import transaction

from campaigns.models import Campaign, CampaignWorker, Stage, Worker


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


def campaign_worker_join(*, campaign: Campaign, worker: Worker) -> CampaignWorker:
    """``worker``'s place in ``campaign``, made on first contact with its arm.

    Idempotent: a worker who has a place keeps it (and their arm). Locking: the
    campaign row, while the arm is dealt (first contacts of one campaign take turns).
    """
    existing = CampaignWorker.objects.filter(campaign=campaign, worker=worker).first()
    if existing is not None:
        return existing
    with transaction.atomic():
        Campaign.objects.select_for_update().filter(pk=campaign.pk).first()
        place, created = CampaignWorker.objects.get_or_create(campaign=campaign, worker=worker)
        if not created or place.arm:
            return place
        arms = campaign_arms(campaign=campaign)
        if arms:
            dealt = CampaignWorker.objects.filter(campaign=campaign).exclude(arm="").count()
            place.arm = arm_for_position(campaign_id=campaign.pk, arms=arms, position=dealt)
            place.save(update_fields=["arm"])
    return place
