"""Prolific's rules through the API and pages: a requester sees each requirement as
Prolific applies it, the reward per hour against the minimum, the fee and the currency
conversion; what Prolific cannot express or would refuse is a 400 with the reason."""

from __future__ import annotations

from decimal import Decimal

import pytest

from campaigns.models import (
    Assignment,
    Campaign,
    CampaignState,
    LedgerEntry,
    OperationKind,
    ProviderOperation,
)
from campaigns.platforms.prolific.studies import prolific_studies_sync
from campaigns.platforms.review import paid_assignment_approve
from tests.campaigns.platforms.conftest import make_campaign, run_operations
from tests.campaigns.platforms.test_prolific_flow import work

pytestmark = pytest.mark.django_db


def test_stage_api_explains_each_requirement_and_the_hourly_rate(token_client, prolific_stage):
    _campaign, stage = prolific_stage
    body = token_client.get(f"/api/v1/stages/{stage.pk}/").json()
    rules = body["platform_rules"]
    assert rules["platform"] == "prolific"
    assert [n["filter"] for n in rules["requirements"]] == [
        "approval_rate",
        "current-country-of-residence",
    ]
    assert "country of residence" in rules["requirements"][1]["note"]
    assert rules["pay"] == {
        "currency": "GBP",
        "reward": "1.00",
        "estimated_minutes": 5,
        "hourly_rate": "12.00",
        "minimum_hourly": "6.00",
    }
    assert rules["problems"] == []


def test_unexpressible_requirement_is_a_400_never_dropped(token_client, requester, fake):
    campaign, stage = make_campaign(requester, provider="prolific", slug="masters")
    campaign.state = CampaignState.DRAFT
    campaign.save(update_fields=["state"])
    response = token_client.patch(
        f"/api/v1/stages/{stage.pk}/",
        {"qualification_requirements": [{"kind": "masters"}]},
        format="json",
    )
    assert response.status_code == 400
    assert "no Masters" in str(response.json())
    stage.refresh_from_db()
    assert {"kind": "masters"} not in stage.qualification_requirements


def test_reward_under_the_minimum_refuses_the_pilot(token_client, requester, fake):
    campaign, stage = make_campaign(requester, provider="prolific", slug="cheap")
    campaign.state = CampaignState.DRAFT
    campaign.save(update_fields=["state"])
    token_client.patch(f"/api/v1/stages/{stage.pk}/", {"reward": "0.40"}, format="json")
    estimate = token_client.get(f"/api/v1/campaigns/{campaign.slug}/cost-estimate/").json()
    (row,) = estimate["stages"]
    assert (row["hourly_rate"], row["minimum_hourly"]) == ("4.80", "6.00")
    assert "at least 6.00 GBP an hour" in row["pay_warning"]
    assert estimate["fee_rate"] == "0.3330"
    assert "33.3 %" in estimate["fee_note"]
    response = token_client.post(
        f"/api/v1/campaigns/{campaign.slug}/transition/", {"state": "pilot"}, format="json"
    )
    assert response.status_code == 400
    assert "4.80 GBP an hour" in str(response.json())
    campaign.refresh_from_db()
    assert campaign.state == CampaignState.DRAFT
    assert not fake.calls("POST")


def test_usd_recipe_is_converted_at_the_requesters_rate(token_client, fake, settings):
    settings.USD_EXCHANGE_RATES = {"GBP": "0.75"}
    made = token_client.post(
        "/api/v1/campaigns/",
        {"name": "Why on Prolific", "provider": "prolific", "recipe": "mintaka", "usd_rate": "0.8"},
        format="json",
    )
    assert made.status_code == 201
    campaign = Campaign.objects.get(slug=made.json()["slug"])
    write = campaign.stages.order_by("position").first()
    assert write is not None
    assert write.reward == Decimal("1.00")  # $1.25 x 0.8
    # Without a rate, the server's setting, and it says so.
    other = token_client.post(
        "/api/v1/campaigns/",
        {"name": "Default rate", "provider": "prolific", "recipe": "mintaka"},
        format="json",
    ).json()
    write = Campaign.objects.get(slug=other["slug"]).stages.order_by("position").first()
    assert write is not None
    # 1.25 x 0.75 is 0.94 (half up), under £6 an hour for the estimated 10 minutes:
    # raised to the minimum, and the stage says so.
    assert write.reward == Decimal("1.00")
    assert write.config["priced_in"]["rate"] == "0.75"
    assert write.config["reward_raised"]["paper"] == "0.94"
    estimate = token_client.get(f"/api/v1/campaigns/{other['slug']}/cost-estimate/").json()
    assert estimate["conversions"]["Write questions"]["source"] == "setting"
    for bad in ("0", "-1", "abc"):
        refused = token_client.post(
            "/api/v1/campaigns/",
            {"name": f"Bad {bad}", "provider": "prolific", "recipe": "mintaka", "usd_rate": bad},
            format="json",
        )
        assert refused.status_code == 400
        assert "usd_rate" in refused.json()
    assert not Campaign.objects.filter(name__startswith="Bad").exists()


def test_campaign_page_shows_the_notes(client, requester, prolific_stage):
    campaign, _stage = prolific_stage
    client.force_login(requester)
    page = client.get(f"/campaigns/{campaign.slug}/").content.decode()
    assert "Requirements on Prolific" in page
    assert "Countries on Prolific" in page
    assert "<code>GB</code> United Kingdom" in page
    assert "12.00 GBP an hour" in page
    assert "service fee" in page


def test_test_participants_and_a_test_study_pilot_cost_nothing(
    token_client, requester, fake, client
):
    campaign, stage = make_campaign(requester, provider="prolific", slug="tested")
    campaign.state = CampaignState.DRAFT
    campaign.save(update_fields=["state"])
    made = token_client.post(
        f"/api/v1/campaigns/{campaign.slug}/test-participants/",
        {"email": "me+test@example.org"},
        format="json",
    )
    assert made.status_code == 201
    assert made.json()["participant_id"] in fake.state.test_participants
    moved = token_client.post(
        f"/api/v1/campaigns/{campaign.slug}/transition/",
        {"state": "pilot", "test_study": True},
        format="json",
    )
    assert moved.status_code == 200, moved.json()
    run_operations()
    op = ProviderOperation.objects.get(kind=OperationKind.CREATE_STUDY)
    assert op.result is not None
    study_id = op.result["study_id"]
    assert fake.state.studies[study_id]["is_test"] is True
    assert not fake.calls("POST", r"/api/v1/studies/[^/]+/transition/")  # never published
    session, _ = work(client, fake, study_id, stage)
    prolific_studies_sync()
    assignment = Assignment.objects.get(provider_assignment_id=session["id"])
    paid_assignment_approve(assignment=assignment, source="requester")
    run_operations()
    assert {e.amount for e in LedgerEntry.objects.filter(campaign=campaign)} == {Decimal("0.00")}


def test_test_study_is_refused_off_pilot_or_off_prolific(token_client, requester, fake):
    campaign, _stage = make_campaign(requester, provider="local", slug="local-test")
    campaign.state = CampaignState.DRAFT
    campaign.save(update_fields=["state"])
    response = token_client.post(
        f"/api/v1/campaigns/{campaign.slug}/transition/",
        {"state": "pilot", "test_study": True},
        format="json",
    )
    assert response.status_code == 400
    assert "test participants" in str(response.json())
    response = token_client.post(
        f"/api/v1/campaigns/{campaign.slug}/test-participants/",
        {"email": "me@example.org"},
        format="json",
    )
    assert response.status_code == 400
