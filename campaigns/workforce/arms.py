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

from django.db import transaction

from campaigns.models import Campaign, CampaignWorker, Worker
from campaigns.workforce.selectors import arm_for_position, campaign_arms


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
