"""Publishing: pending items into HITs (``stage_publish``), campaign start.

Part of the local-workforce work services; ``campaigns.services.work`` re-exports
these and describes the locking order they take part in.
"""

from __future__ import annotations

import logging
import zlib

from django.db import transaction
from django.db.models import BooleanField, CharField, ExpressionWrapper, Q, Value
from django.db.models.functions import Cast, Concat
from django.utils import timezone

from campaigns.models import (
    HIT,
    Campaign,
    CampaignState,
    HITItem,
    HITStatus,
    Item,
    ItemStatus,
    Provider,
    Stage,
)
from campaigns.providers.rules import rules_for
from campaigns.selectors_work import WORKABLE_STATES
from campaigns.services.campaigns import campaign_transition
from campaigns.services.errors import DomainError
from linking import hooks as linking_hooks
from validation.gold import gold_mix_order

logger = logging.getLogger(__name__)

# Rows per INSERT when publishing.
_PUBLISH_BATCH = 1000


# --- Publishing ------------------------------------------------------------------


def stage_publish(*, stage: Stage, allow_partial: bool = True) -> int:
    """Put the stage's pending items into HITs, in item order with gold mixed in;
    returns the HITs made.

    Gold items (``Item.gold`` set) are spread through the regular ones by
    ``validation.gold.gold_mix_order`` at ``stage.gold_ratio`` (seeded by the
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
        local = campaign.provider == Provider.LOCAL
        hits = HIT.objects.bulk_create(
            [
                HIT(
                    stage=stage,
                    provider=campaign.provider,
                    max_assignments=stage.assignments_per_hit,
                    places_left=stage.assignments_per_hit,
                    reward=stage.reward,
                    status=HITStatus.PUBLISHED if local else HITStatus.PENDING,
                    published_at=now if local else None,
                    expires_at=now + stage.lifetime,
                )
                for _ in groups
            ],
            batch_size=_PUBLISH_BATCH,
        )
        hit_ids = [hit.pk for hit in hits]
        if local:
            HIT.objects.filter(pk__in=hit_ids).update(
                provider_hit_id=Concat(Value("local-"), Cast("id", output_field=CharField()))
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
    linking_hooks.stage_published(stage=stage)
    logger.info("stage %s: published %d HITs", stage.pk, len(groups))
    return len(groups)


def _publish_order(*, stage: Stage, pending: list[tuple[int, bool, str]]) -> list[int]:
    """Pending item ids (``(id, is gold, external id)`` in id order) in publishing order."""
    ratio = float(stage.gold_ratio)
    if not 0 < ratio < 1 or not pending:
        return [pk for pk, *_ in pending]
    regular = [pk for pk, is_gold, _ in pending if not is_gold]
    gold = [pk for pk, is_gold, _ in pending if is_gold]
    # From what the requester uploaded, not from row ids: the same upload mixes alike.
    seed = zlib.crc32(f"{stage.campaign.slug}/{stage.position}/{pending[0][2]}".encode())
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


def campaign_start(*, campaign: Campaign, to_state: str, test_study: bool = False) -> Campaign:
    """Move ``campaign`` to ``to_state``; entering pilot/live publishes its pending work.

    ``test_study`` (into pilot, on a platform with test participants): the pending work
    goes to the platform's test participants only, at no cost (Prolific's test study).

    Local campaigns publish at once; Prolific campaigns ask for one study per stage
    with pending items, MTurk campaigns one ``create_hit`` operation per stage
    (``stage_provider_publish``, which checks the budget); Prolific studies are
    paused, resumed and stopped with the campaign. The transition locks the campaign
    row (``campaign_transition``); publishing happens in the same transaction, so a
    refusal (budget) leaves the campaign where it was.
    """
    if test_study and (
        to_state != CampaignState.PILOT or not rules_for(campaign.provider).test_participants
    ):
        raise DomainError(
            "A test study is published into the pilot, on a platform with test participants.",
            errors={"test_study": [f"{campaign.provider} → {to_state}"]},
        )
    with transaction.atomic():
        previous = (
            Campaign.objects.select_for_update().values_list("state", flat=True).get(pk=campaign.pk)
        )
        campaign = campaign_transition(campaign=campaign, to_state=to_state)
        if campaign.provider == Provider.PROLIFIC:
            _prolific_follow(campaign=campaign, previous=previous, to_state=to_state)
        elif campaign.provider == Provider.MTURK:
            _mturk_follow(campaign=campaign, previous=previous, to_state=to_state)
        if to_state in WORKABLE_STATES:
            if campaign.provider == Provider.LOCAL:
                campaign_publish(campaign=campaign)
            elif campaign.provider in (Provider.PROLIFIC, Provider.MTURK):
                # Imported here: provider_sync imports this module.
                from campaigns.services.provider_sync import (
                    stage_provider_publish,
                    stage_rules_check,
                )

                # Every stage, fed ones too: a hand-off must not meet a refusal later.
                for stage in campaign.stages.order_by("position"):
                    stage_rules_check(stage=stage)
                for stage in campaign.stages.filter(items__status=ItemStatus.PENDING).distinct():
                    if test_study:
                        stage_provider_publish(stage=stage, test=True)
                    else:
                        stage_provider_publish(stage=stage)
    return campaign


def _mturk_follow(*, campaign: Campaign, previous: str, to_state: str) -> None:
    """The campaign's MTurk HITs follow its state: expired, re-opened (operations)."""
    from campaigns.services.mturk_follow import mturk_campaign_follow

    if to_state == CampaignState.PAUSED:
        mturk_campaign_follow(campaign=campaign, mode="pause")
    elif to_state == CampaignState.COMPLETED:
        mturk_campaign_follow(campaign=campaign, mode="stop")
    elif previous == CampaignState.PAUSED and to_state in WORKABLE_STATES:
        mturk_campaign_follow(campaign=campaign, mode="resume")


def _prolific_follow(*, campaign: Campaign, previous: str, to_state: str) -> None:
    """The campaign's studies follow its state: paused, resumed, stopped (operations)."""
    from campaigns.services.provider_sync import (
        campaign_provider_pause,
        campaign_provider_resume,
        campaign_provider_stop,
    )

    if to_state == CampaignState.PAUSED:
        campaign_provider_pause(campaign=campaign)
    elif to_state == CampaignState.COMPLETED:
        campaign_provider_stop(campaign=campaign)
    elif previous == CampaignState.PAUSED and to_state in WORKABLE_STATES:
        campaign_provider_resume(campaign=campaign)
