"""Publishing: pending items become HITs in item order; local HITs are published at once."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from campaigns.models import HIT, HITItem, Item, ItemStatus
from campaigns.platforms.publishing import campaign_start
from campaigns.work.publishing import campaign_publish, stage_publish

pytestmark = pytest.mark.django_db


def test_stage_publish_groups_items_in_order(make_stage):
    stage = make_stage(
        items=7,
        items_per_hit=3,
        assignments_per_hit=2,
        reward=Decimal("0.40"),
        lifetime=timedelta(days=2),
    )
    before = timezone.now()

    assert stage_publish(stage=stage) == 3

    hits = list(HIT.objects.filter(stage=stage).order_by("id"))
    groups = [
        list(
            HITItem.objects.filter(hit=h)
            .order_by("position")
            .values_list("item__external_id", flat=True)
        )
        for h in hits
    ]
    ids = list(
        Item.objects.filter(stage=stage).order_by("id").values_list("external_id", flat=True)
    )
    assert groups == [ids[0:3], ids[3:6], ids[6:7]]
    for hit in hits:
        assert hit.status == "published"
        assert hit.provider == "local"
        assert hit.provider_hit_id == f"local-{hit.pk}"
        assert hit.max_assignments == 2
        assert hit.reward == Decimal("0.40")
        assert hit.published_at is not None
        assert hit.expires_at is not None
        assert before + timedelta(days=2) <= hit.expires_at <= timezone.now() + timedelta(days=2)
    assert not Item.objects.filter(stage=stage).exclude(status=ItemStatus.PUBLISHED).exists()


def test_stage_publish_twice_publishes_nothing_more(make_stage):
    stage = make_stage(items=4)
    assert stage_publish(stage=stage) == 4
    assert stage_publish(stage=stage) == 0
    assert HIT.objects.filter(stage=stage).count() == 4


def test_partial_group_can_wait(make_stage):
    stage = make_stage(items=5, items_per_hit=2)
    assert stage_publish(stage=stage, allow_partial=False) == 2
    assert Item.objects.filter(stage=stage, status=ItemStatus.PENDING).count() == 1
    assert stage_publish(stage=stage) == 1


def test_campaign_start_publishes_a_local_campaign(make_stage):
    first = make_stage(state="draft", items=2)
    second = make_stage(campaign=first.campaign, position=1, items=1)

    campaign = campaign_start(campaign=first.campaign, to_state="live")

    assert campaign.state == "live"
    assert HIT.objects.filter(stage=first).count() == 2
    assert HIT.objects.filter(stage=second).count() == 1
    assert campaign_publish(campaign=campaign) == 0
