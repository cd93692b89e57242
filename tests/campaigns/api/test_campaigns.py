"""/api/v1/campaigns/: list, create, read, edit, delete, transition."""

from __future__ import annotations

from decimal import Decimal

import pytest

from campaigns.models import Campaign, CampaignState
from tests.factories import CampaignFactory, ItemFactory, LedgerEntryFactory, StageFactory

pytestmark = pytest.mark.django_db

LIST = "/api/v1/campaigns/"


def detail(slug: str) -> str:
    return f"/api/v1/campaigns/{slug}/"


def slugs(response) -> list[str]:
    return [c["slug"] for c in response.json()["results"]]


# --- list ---------------------------------------------------------------------------


def test_list_shows_owned_and_shared_campaigns_only(token_client, requester, other_requester):
    CampaignFactory.create(owner=requester, slug="mine")
    shared = CampaignFactory.create(owner=other_requester, slug="shared")
    shared.collaborators.add(requester)
    CampaignFactory.create(owner=other_requester, slug="hidden")

    response = token_client.get(LIST)

    assert response.status_code == 200
    assert sorted(slugs(response)) == ["mine", "shared"]
    assert response.json()["count"] == 2


def test_list_item_shape(token_client, campaign, collaborator):
    campaign.budget_cap = Decimal("12.50")
    campaign.save()

    (row,) = token_client.get(LIST).json()["results"]

    assert row["slug"] == "alpha"
    assert row["owner"] == "alice"
    assert row["collaborators"] == ["carol"]
    assert row["budget_cap"] == "12.50"
    assert row["state"] == "draft"
    assert row["currency"] == "USD"


def test_list_filters_by_state_and_provider(token_client, requester):
    CampaignFactory.create(owner=requester, slug="draft-local")
    CampaignFactory.create(owner=requester, slug="live-local", state=CampaignState.LIVE)
    CampaignFactory.create(
        owner=requester, slug="live-mturk", state=CampaignState.LIVE, provider="mturk"
    )

    assert sorted(slugs(token_client.get(LIST, {"state": "live"}))) == ["live-local", "live-mturk"]
    assert slugs(token_client.get(LIST, {"provider": "mturk"})) == ["live-mturk"]
    assert slugs(token_client.get(LIST, {"state": "live", "provider": "local"})) == ["live-local"]


def test_list_rejects_unknown_filter_value(token_client):
    response = token_client.get(LIST, {"state": "running"})

    assert response.status_code == 400
    assert "state" in response.json()


def test_list_ordering(token_client, requester):
    for name in ("Charlie", "Alpha", "Bravo"):
        CampaignFactory.create(owner=requester, name=name, slug=name.lower())

    assert slugs(token_client.get(LIST, {"ordering": "name"})) == ["alpha", "bravo", "charlie"]
    assert slugs(token_client.get(LIST, {"ordering": "-name"})) == ["charlie", "bravo", "alpha"]
    # Default: newest first.
    assert slugs(token_client.get(LIST)) == ["bravo", "alpha", "charlie"]


def test_list_is_paginated(token_client, requester):
    CampaignFactory.create_batch(51, owner=requester)

    first = token_client.get(LIST).json()
    second = token_client.get(LIST, {"page": 2}).json()

    assert first["count"] == 51
    assert len(first["results"]) == 50
    assert first["next"] is not None
    assert len(second["results"]) == 1
    assert second["next"] is None


# --- create -------------------------------------------------------------------------


def test_create_campaign(token_client, requester):
    response = token_client.post(
        LIST,
        {"name": "Why questions", "provider": "prolific", "budget_cap": "250.00", "sandbox": False},
        format="json",
    )

    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["slug"] == "why-questions"
    assert body["owner"] == "alice"
    assert body["state"] == "draft"
    assert body["currency"] == "GBP"
    assert body["budget_cap"] == "250.00"
    stored = Campaign.objects.get(slug="why-questions")
    assert stored.owner == requester
    assert stored.sandbox is False
    assert stored.budget_cap == Decimal("250.00")


def test_create_with_explicit_slug(token_client):
    response = token_client.post(LIST, {"name": "X", "slug": "my-slug"}, format="json")

    assert response.status_code == 201
    assert response.json()["slug"] == "my-slug"


def test_create_validation_errors_name_the_fields(token_client):
    response = token_client.post(
        LIST, {"provider": "crowdflower", "budget_cap": "-1"}, format="json"
    )

    assert response.status_code == 400
    assert set(response.json()) == {"name", "provider", "budget_cap"}
    assert not Campaign.objects.exists()


def test_create_rejects_read_only_fields(token_client):
    response = token_client.post(LIST, {"name": "X", "state": "live"}, format="json")

    assert response.status_code == 400
    assert "state" in response.json()
    assert not Campaign.objects.exists()


def test_create_with_taken_slug_is_400(token_client, other_campaign):
    response = token_client.post(LIST, {"name": "X", "slug": other_campaign.slug}, format="json")

    assert response.status_code == 400
    assert response.json()["errors"] == {"slug": ["taken"]}


# --- retrieve, patch, delete ---------------------------------------------------------


def test_retrieve(token_client, campaign):
    response = token_client.get(detail("alpha"))

    assert response.status_code == 200
    assert response.json()["name"] == "Alpha"


def test_retrieve_missing_is_404(token_client):
    assert token_client.get(detail("nope")).status_code == 404


def test_patch_settings(token_client, campaign):
    campaign.budget_cap = Decimal("10.00")
    campaign.save()

    response = token_client.patch(
        detail("alpha"),
        {"name": "Alpha 2", "description": "Round two", "budget_cap": None, "sandbox": False},
        format="json",
    )

    assert response.status_code == 200, response.json()
    campaign.refresh_from_db()
    assert (campaign.name, campaign.description) == ("Alpha 2", "Round two")
    assert campaign.budget_cap is None
    assert campaign.sandbox is False
    assert response.json()["budget_cap"] is None


def test_patch_validation_error(token_client, campaign):
    response = token_client.patch(detail("alpha"), {"budget_cap": "-5"}, format="json")

    assert response.status_code == 400
    assert "budget_cap" in response.json()


def test_patch_rejects_fields_that_cannot_change(token_client, campaign):
    response = token_client.patch(detail("alpha"), {"provider": "mturk"}, format="json")

    assert response.status_code == 400
    assert "provider" in response.json()
    campaign.refresh_from_db()
    assert campaign.provider == "local"


def test_patch_collaborators_by_username(token_client, campaign, other_requester, client_for):
    response = token_client.patch(detail("alpha"), {"collaborators": ["bob"]}, format="json")

    assert response.status_code == 200
    assert response.json()["collaborators"] == ["bob"]
    assert client_for(other_requester).get(detail("alpha")).status_code == 200

    response = token_client.patch(detail("alpha"), {"collaborators": []}, format="json")

    assert response.json()["collaborators"] == []
    assert client_for(other_requester).get(detail("alpha")).status_code == 404


def test_patch_unknown_collaborator_is_400(token_client, campaign):
    response = token_client.patch(detail("alpha"), {"collaborators": ["nobody"]}, format="json")

    assert response.status_code == 400
    assert "collaborators" in response.json()["errors"]
    assert not campaign.collaborators.exists()


def test_owner_cannot_be_a_collaborator(token_client, campaign):
    response = token_client.patch(detail("alpha"), {"collaborators": ["alice"]}, format="json")

    assert response.status_code == 400
    assert "collaborators" in response.json()["errors"]


def test_sandbox_changes_only_in_draft(token_client, campaign):
    Campaign.objects.filter(pk=campaign.pk).update(state=CampaignState.PILOT)

    response = token_client.patch(detail("alpha"), {"sandbox": False}, format="json")

    assert response.status_code == 409
    assert "draft" in response.json()["detail"]
    campaign.refresh_from_db()
    assert campaign.sandbox is True
    # Sending the value it has already is no change, so it passes.
    assert token_client.patch(detail("alpha"), {"sandbox": True}, format="json").status_code == 200


def test_delete_draft(token_client, stage):
    response = token_client.delete(detail("alpha"))

    assert response.status_code == 204
    assert not Campaign.objects.filter(slug="alpha").exists()


@pytest.mark.parametrize("state", ["pilot", "live", "paused", "completed"])
def test_delete_after_draft_is_409(token_client, campaign, state):
    Campaign.objects.filter(pk=campaign.pk).update(state=state)

    response = token_client.delete(detail("alpha"))

    assert response.status_code == 409
    assert "Only draft campaigns can be deleted" in response.json()["detail"]
    assert Campaign.objects.filter(slug="alpha").exists()


def test_delete_draft_with_money_on_record_is_409(token_client, campaign):
    # Back in draft after a pilot that paid someone: the ledger keeps the campaign.
    LedgerEntryFactory.create(campaign=campaign)

    response = token_client.delete(detail("alpha"))

    assert response.status_code == 409
    assert Campaign.objects.filter(slug="alpha").exists()


# --- transition ----------------------------------------------------------------------


def transition(client, slug: str, state: str):
    return client.post(f"/api/v1/campaigns/{slug}/transition/", {"state": state}, format="json")


def test_transition_to_pilot(token_client, item):
    response = transition(token_client, "alpha", "pilot")

    assert response.status_code == 200, response.json()
    assert response.json()["state"] == "pilot"
    assert Campaign.objects.get(slug="alpha").state == CampaignState.PILOT


def test_illegal_transition_is_409_with_the_reason(token_client, campaign):
    response = transition(token_client, "alpha", "completed")

    assert response.status_code == 409
    body = response.json()
    assert body["code"] == "illegal_transition"
    assert "cannot move to 'completed'" in body["detail"]
    assert Campaign.objects.get(slug="alpha").state == CampaignState.DRAFT


def test_transition_needs_items_before_start(token_client, stage):
    response = transition(token_client, "alpha", "live")

    assert response.status_code == 409
    assert "no items" in response.json()["detail"]


def test_transition_to_unknown_state_is_400(token_client, campaign):
    response = transition(token_client, "alpha", "running")

    assert response.status_code == 400
    assert "state" in response.json()


def test_transition_walks_the_state_machine(token_client, campaign):
    ItemFactory.create(stage=StageFactory.create(campaign=campaign))

    for state in ("live", "paused", "live", "completed"):
        assert transition(token_client, "alpha", state).json()["state"] == state
    assert transition(token_client, "alpha", "live").status_code == 409


def test_a_second_campaign_with_the_same_name_is_400(token_client):
    first = token_client.post(LIST, {"name": "Why questions"}, format="json")
    second = token_client.post(LIST, {"name": "why QUESTIONS "}, format="json")

    assert first.status_code == 201
    assert second.status_code == 400
    assert second.json()["errors"] == {"name": ["taken"]}
    assert "e.g. 'why QUESTIONS (2)'" in second.json()["detail"]
    assert Campaign.objects.count() == 1


def test_edit_of_a_campaign_deleted_meanwhile_is_a_404_not_a_500(
    token_client, requester, monkeypatch
):
    # The view finds the campaign, then a concurrent DELETE removes it before the
    # service locks the row (a race a hostile probe found): 404, nothing written.
    import campaigns.api.campaigns as api_campaigns

    campaign = CampaignFactory.create(owner=requester, slug="racing")
    real_update = api_campaigns.campaign_update

    def deleted_first(**kwargs):
        Campaign.objects.filter(pk=kwargs["campaign"].pk).delete()
        return real_update(**kwargs)

    monkeypatch.setattr(api_campaigns, "campaign_update", deleted_first)
    response = token_client.patch(detail(campaign.slug), {"name": "New"}, format="json")

    assert response.status_code == 404, response.content
    assert "deleted" in response.json()["detail"]
    assert not Campaign.objects.filter(slug="racing").exists()
