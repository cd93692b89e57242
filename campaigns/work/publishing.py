"""Publishing: pending items into HITs (``stage_publish``, ``campaign_publish``).

HITs of a local campaign open at once; a paid platform publishes them later
(``Platform.stage_publish``, ``campaigns.platforms.publishing.campaign_start``).
"""

from __future__ import annotations

import logging
import random
import zlib

from django.db import transaction
from django.db.models import BooleanField, CharField, ExpressionWrapper, Q, Value
from django.db.models.functions import Cast, Concat
from django.utils import timezone

from campaigns.design.platform import platform_for
from campaigns.models import (
    HIT,
    Campaign,
    HITItem,
    HITStatus,
    Item,
    ItemStatus,
    Stage,
)
from campaigns.work.events import stage_published
from campaigns.work.gold_mix import gold_mix_order

logger = logging.getLogger(__name__)

# Rows per INSERT when publishing.
_PUBLISH_BATCH = 1000
# Stage config: shuffle the pending items before they are cut into HITs.
SHUFFLE_KEY = "shuffle"
# Stage config: items handed off to the stage wait for the requester to publish it
# (``stage_publish`` through the API or the campaign page) instead of being published
# as they come; with ``shuffle``, one publication mixes everything that arrived.
HOLD_KEY = "hold_handoff"


def stage_holds_handoff(stage: Stage) -> bool:
    """Whether items handed off to ``stage`` wait for the requester's publication."""
    return bool((stage.config or {}).get(HOLD_KEY))


# --- Publishing ------------------------------------------------------------------


def stage_publish(*, stage: Stage, allow_partial: bool = True) -> int:
    """Put the stage's pending items into HITs, in item order with gold mixed in;
    returns the HITs made.

    Gold items (``Item.gold`` set) are spread through the regular ones by
    ``campaigns.work.gold_mix.gold_mix_order`` at ``stage.gold_ratio`` (seeded by the
    campaign, the stage's position and its first pending item's external id, so the
    same upload is mixed alike): a worker cannot tell gold by its position. Gold
    reused to reach the ratio appears at most once per HIT; gold beyond the ratio
    stays pending for the next publication, as does gold with no regular item to
    mix into. A ratio of 0 (or 1: every item gold)
    publishes every pending item in item order.

    ``items_per_hit`` items per HIT; with ``allow_partial`` False a trailing
    group smaller than that stays pending (the hand-off uses this, so that one
    approval does not publish a one-item HIT paying a full reward). On the local
    provider the HITs are published at once (``provider_hit_id`` "local-<pk>");
    on paid providers they stay ``pending`` for their provider to publish.

    Locks the stage row: two publications of a stage are serialised, so an item
    lands in one HIT only. A handful of queries whatever the number of HITs: the
    HITs and their HITItems go in by bulk INSERTs, local HITs get their
    ``provider_hit_id`` in one UPDATE. Each HIT starts with ``places_left`` =
    ``max_assignments``.
    """
    with transaction.atomic():
        stage = Stage.objects.select_for_update().select_related("campaign").get(pk=stage.pk)
        campaign = stage.campaign
        pending = list(
            Item.objects.filter(stage=stage, status=ItemStatus.PENDING)
            .order_by("id")
            .values_list(
                "pk",
                ExpressionWrapper(Q(gold__isnull=False), output_field=BooleanField()),
                "external_id",
            )
        )
        items = _publish_order(stage=stage, pending=pending)
        groups = _hit_groups(items, size=stage.items_per_hit)
        if groups and not allow_partial and len(groups[-1]) < stage.items_per_hit:
            groups.pop()
        if not groups:
            return 0
        now = timezone.now()
        open_now = platform_for(campaign).hits_open_when_made
        hits = HIT.objects.bulk_create(
            [
                HIT(
                    stage=stage,
                    provider=campaign.provider,
                    max_assignments=stage.assignments_per_hit,
                    places_left=stage.assignments_per_hit,
                    reward=stage.reward,
                    status=HITStatus.PUBLISHED if open_now else HITStatus.PENDING,
                    published_at=now if open_now else None,
                    expires_at=now + stage.lifetime,
                )
                for _ in groups
            ],
            batch_size=_PUBLISH_BATCH,
        )
        hit_ids = [hit.pk for hit in hits]
        if open_now:  # their own ids: "<provider>-<HIT id>"
            HIT.objects.filter(pk__in=hit_ids).update(
                provider_hit_id=Concat(
                    Value(f"{campaign.provider}-"), Cast("id", output_field=CharField())
                )
            )
        HITItem.objects.bulk_create(
            (
                HITItem(hit_id=hit_id, item_id=item_id, position=pos)
                for hit_id, group in zip(hit_ids, groups, strict=True)
                for pos, item_id in enumerate(group)
            ),
            batch_size=_PUBLISH_BATCH,
        )
        Item.objects.filter(pk__in=[i for group in groups for i in group]).update(
            status=ItemStatus.PUBLISHED
        )
        # Linking stages get spans and Wikidata candidates ready before workers arrive.
        stage_published.announce(stage=stage)
    logger.info("stage %s: published %d HITs", stage.pk, len(groups))
    return len(groups)


def _publish_order(*, stage: Stage, pending: list[tuple[int, bool, str]]) -> list[int]:
    """Pending item ids (``(id, is gold, external id)`` in id order) in publishing order.

    With ``config["shuffle"]`` the regular items are shuffled (seeded like the gold mix)
    before they are cut into HITs, so that a HIT mixes items of different sources
    (Nangia et al. §4: the four protocols' data shuffled into one validation task)."""
    if not pending:
        return []
    # From what the requester uploaded, not from row ids: the same upload mixes alike.
    seed = zlib.crc32(f"{stage.campaign.slug}/{stage.position}/{pending[0][2]}".encode())
    shuffle = bool((stage.config or {}).get(SHUFFLE_KEY))
    ratio = float(stage.gold_ratio)
    if not 0 < ratio < 1:
        order = [pk for pk, *_ in pending]
        if shuffle:
            random.Random(seed).shuffle(order)
        return order
    regular = [pk for pk, is_gold, _ in pending if not is_gold]
    gold = [pk for pk, is_gold, _ in pending if is_gold]
    if shuffle:
        random.Random(seed).shuffle(regular)
    return gold_mix_order(regular, gold, ratio=ratio, seed=seed)


def _hit_groups(items: list[int], *, size: int) -> list[list[int]]:
    """``items`` cut into HITs of ``size``; an id already in the HIT being filled (gold
    reused by the mix) is skipped there, as a HIT holds an item once."""
    groups: list[list[int]] = []
    current: list[int] = []
    for item_id in items:
        if item_id in current:
            continue
        current.append(item_id)
        if len(current) == size:
            groups.append(current)
            current = []
    if current:
        groups.append(current)
    return groups


def campaign_publish(*, campaign: Campaign) -> int:
    """Publish every stage of ``campaign`` that has pending items; returns the HITs made.

    Locks each stage row in turn (see ``stage_publish``).
    """
    total = 0
    stages = Stage.objects.filter(campaign=campaign, items__status=ItemStatus.PENDING).distinct()
    for stage in stages.order_by("position"):
        total += stage_publish(stage=stage)
    return total
