"""/api/v1/campaigns/{slug}/cost-estimate/: numbers a requester can check by hand."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tests.factories import CampaignFactory, ItemFactory, StageFactory

pytestmark = pytest.mark.django_db


def estimate(client, slug: str):
    return client.get(f"/api/v1/campaigns/{slug}/cost-estimate/")


def test_local_campaign_pays_rewards_only(token_client, requester):
    campaign = CampaignFactory.create(owner=requester, slug="local", budget_cap=Decimal("20.00"))
    stage = StageFactory.create(
        campaign=campaign, reward=Decimal("1.25"), items_per_hit=2, assignments_per_hit=3
    )
    ItemFactory.create_batch(5, stage=stage)

    response = estimate(token_client, "local")

    assert response.status_code == 200
    body = response.json()
    # 5 items / 2 per HIT -> 3 HITs x 3 assignments = 9 assignments x 1.25 = 11.25.
    assert body["stages"] == [
        {
            "stage_id": stage.pk,
            "stage_name": stage.name,
            "items": 5,
            "hits": 3,
            "assignments": 9,
            "reward_per_assignment": "1.25",
            "fee_per_assignment": "0.00",
            "rewards": "11.25",
            "fees": "0.00",
            "total": "11.25",
            # A quarter of the hour allowed; the local workforce sets no minimum.
            "estimated_minutes": 15,
            "hourly_rate": "5.00",
            "minimum_hourly": None,
            "pay_warning": "",
        }
    ]
    assert body["currency"] == "USD"
    assert body["provider"] == "local"
    assert (body["total_rewards"], body["total_fees"], body["total"]) == ("11.25", "0.00", "11.25")
    assert body["budget_cap"] == "20.00"
    assert body["within_budget"] is True


def test_mturk_fees_and_budget(token_client, requester):
    campaign = CampaignFactory.create(
        owner=requester, slug="turk", provider="mturk", budget_cap=Decimal("50.00")
    )
    small = StageFactory.create(
        campaign=campaign,
        position=0,
        reward=Decimal("1.25"),
        items_per_hit=2,
        assignments_per_hit=3,
    )
    large = StageFactory.create(
        campaign=campaign,
        position=1,
        reward=Decimal("0.50"),
        items_per_hit=1,
        assignments_per_hit=10,
    )
    ItemFactory.create_batch(5, stage=small)
    ItemFactory.create_batch(2, stage=large)

    body = estimate(token_client, "turk").json()

    first, second = body["stages"]
    # 20 % commission: 0.25 on each of 9 assignments.
    assert (first["fee_per_assignment"], first["fees"], first["total"]) == ("0.25", "2.25", "13.50")
    # 10 or more assignments per HIT: 40 %, 0.20 on each of 20 assignments.
    assert (second["assignments"], second["rewards"], second["fees"]) == (20, "10.00", "4.00")
    assert (body["total_rewards"], body["total_fees"], body["total"]) == ("21.25", "6.25", "27.50")
    assert body["within_budget"] is True


def test_over_budget(token_client, requester):
    campaign = CampaignFactory.create(owner=requester, slug="tight", budget_cap=Decimal("1.00"))
    ItemFactory.create_batch(
        2, stage=StageFactory.create(campaign=campaign, reward=Decimal("0.75"))
    )

    body = estimate(token_client, "tight").json()

    assert body["total"] == "1.50"
    assert body["within_budget"] is False


def test_no_cap_no_stages(token_client, campaign):
    body = estimate(token_client, "alpha").json()

    assert body["stages"] == []
    assert body["total"] == "0.00"
    assert body["budget_cap"] is None
    assert body["within_budget"] is True
