"""Who may see and act on a campaign's pages: owner, collaborators and staff; nobody else.

Anything else is a 404 (not a 403), so other requesters cannot learn which slugs exist.
"""

from __future__ import annotations

from typing import cast

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from campaigns.models import Campaign, CampaignState, Item, Stage
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

CSV = b"external_id,topic,complexity_type\nm1,movies,count\n"


def _requests(campaign: Campaign, stage: Stage) -> dict[str, tuple[str, str, dict]]:
    slug = {"slug": campaign.slug}
    return {
        "detail": ("get", reverse("frontend:campaign-detail", kwargs=slug), {}),
        "progress": ("get", reverse("frontend:campaign-progress", kwargs=slug), {}),
        "quality": ("get", reverse("frontend:campaign-quality", kwargs=slug), {}),
        "transition": (
            "post",
            reverse("frontend:campaign-transition", kwargs=slug),
            {"to_state": CampaignState.PILOT},
        ),
        "add-stage": (
            "post",
            reverse("frontend:stage-add", kwargs=slug),
            {
                "name": "Sneaky",
                "task_type": "question_writing",
                "reward": "0.10",
                "assignments_per_hit": 1,
                "items_per_hit": 1,
            },
        ),
        "upload": (
            "post",
            reverse("frontend:stage-upload", kwargs={**slug, "stage_id": stage.pk}),
            {"file": SimpleUploadedFile("items.csv", CSV, content_type="text/csv")},
        ),
    }


def _call(client: Client, method: str, url: str, data: dict):
    return client.get(url) if method == "get" else client.post(url, data)


def _assert_untouched(campaign: Campaign) -> None:
    campaign.refresh_from_db()
    assert campaign.state == CampaignState.DRAFT
    assert list(campaign.stages.values_list("name", flat=True)) == ["Write questions"]
    assert not Item.objects.filter(stage__campaign=campaign).exists()


@pytest.mark.parametrize("action", ["detail", "transition", "add-stage", "upload"])
def test_other_requester_gets_404_and_changes_nothing(bob_client, campaign, stage, action):
    method, url, data = _requests(campaign, stage)[action]
    assert _call(bob_client, method, url, data).status_code == 404
    _assert_untouched(campaign)


@pytest.mark.parametrize("action", ["detail", "transition", "add-stage", "upload"])
def test_anonymous_is_sent_to_login(campaign, stage, action):
    method, url, data = _requests(campaign, stage)[action]
    response = _call(Client(), method, url, data)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login") + "?next=")
    _assert_untouched(campaign)


def test_anonymous_list_is_sent_to_login():
    response = Client().get(reverse("frontend:campaign-list"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_campaign_not_in_other_requesters_list(bob_client, campaign):
    response = bob_client.get(reverse("frontend:campaign-list"))
    assert response.status_code == 200
    assert campaign not in list(response.context["campaigns"])
    assert "Alice&#x27;s Mintaka" not in response.content.decode()


def test_owner_sees_campaign_in_list(alice_client, campaign):
    response = alice_client.get(reverse("frontend:campaign-list"))
    assert list(response.context["campaigns"]) == [campaign]


def test_stage_of_another_campaign_is_404(bob_client, other_requester, campaign, stage):
    """Bob's own slug does not open Alice's stage: the stage must belong to the campaign."""
    from campaigns.design.services import campaign_create

    bobs = campaign_create(owner=other_requester, name="Bob's", slug="bobs")
    url = reverse("frontend:stage-upload", kwargs={"slug": bobs.slug, "stage_id": stage.pk})
    upload = SimpleUploadedFile("items.csv", CSV, content_type="text/csv")
    assert bob_client.post(url, {"file": upload}).status_code == 404
    assert not stage.items.exists()


@pytest.mark.parametrize("who", ["collaborator", "staff"])
def test_collaborator_and_staff_see_and_act(campaign, stage, who):
    user = cast(User, UserFactory(username=who, is_staff=who == "staff"))
    if who == "collaborator":
        campaign.collaborators.add(user)
    client = Client()
    client.force_login(user)

    listed = client.get(reverse("frontend:campaign-list")).context["campaigns"]
    assert campaign in list(listed)
    method, url, data = _requests(campaign, stage)["detail"]
    assert _call(client, method, url, data).status_code == 200
    method, url, data = _requests(campaign, stage)["upload"]
    assert _call(client, method, url, data).status_code == 302
    assert stage.items.count() == 1
