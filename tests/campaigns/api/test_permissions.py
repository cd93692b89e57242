"""Who may do what through the API.

Someone else's campaign, stage or item answers 404 on every route, exactly as
if it did not exist; collaborators work on a campaign but cannot share or
delete it (403); without credentials everything is 401.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from campaigns.models import Campaign, Item, Stage
from tests.campaigns.api.test_items import CSV_ITEMS

pytestmark = pytest.mark.django_db

Route = tuple[str, Callable[[str, int], str], Any]

ROUTES: dict[str, Route] = {
    "campaign-read": ("get", lambda slug, sid: f"/api/v1/campaigns/{slug}/", None),
    "campaign-edit": ("patch", lambda slug, sid: f"/api/v1/campaigns/{slug}/", {"name": "Mine"}),
    "campaign-share": (
        "patch",
        lambda slug, sid: f"/api/v1/campaigns/{slug}/",
        {"collaborators": ["alice"]},
    ),
    "campaign-delete": ("delete", lambda slug, sid: f"/api/v1/campaigns/{slug}/", None),
    "transition": (
        "post",
        lambda slug, sid: f"/api/v1/campaigns/{slug}/transition/",
        {"state": "pilot"},
    ),
    "exports": ("get", lambda slug, sid: f"/api/v1/campaigns/{slug}/exports/", None),
    "export-jsonl": ("get", lambda slug, sid: f"/api/v1/campaigns/{slug}/exports/jsonl/", None),
    "progress": ("get", lambda slug, sid: f"/api/v1/campaigns/{slug}/progress/", None),
    "cost-estimate": ("get", lambda slug, sid: f"/api/v1/campaigns/{slug}/cost-estimate/", None),
    "stage-list": ("get", lambda slug, sid: f"/api/v1/campaigns/{slug}/stages/", None),
    "stage-add": (
        "post",
        lambda slug, sid: f"/api/v1/campaigns/{slug}/stages/",
        {"name": "Injected", "task_type": "question_writing"},
    ),
    "stage-read": ("get", lambda slug, sid: f"/api/v1/stages/{sid}/", None),
    "stage-edit": ("patch", lambda slug, sid: f"/api/v1/stages/{sid}/", {"reward": "9.99"}),
    "stage-link": ("post", lambda slug, sid: f"/api/v1/stages/{sid}/link/", {"next_stage": None}),
    "item-list": ("get", lambda slug, sid: f"/api/v1/stages/{sid}/items/", None),
    "item-upload": ("post", lambda slug, sid: f"/api/v1/stages/{sid}/items/upload/", CSV_ITEMS),
    "mturk-results-export": (
        "get",
        lambda slug, sid: f"/api/v1/campaigns/{slug}/mturk-results/",
        None,
    ),
    "mturk-results-import": (
        "post",
        lambda slug, sid: f"/api/v1/campaigns/{slug}/mturk-results/",
        b"HITId,AssignmentId\n3YGYP1364Z8NFH3JMC9V5CRQR4DMZX,\n",
    ),
    "mturk-results-review": (
        "post",
        lambda slug, sid: f"/api/v1/campaigns/{slug}/mturk-results/review/",
        b"AssignmentId,Approve\nqaportal-assignment-1,x\n",
    ),
}


def call(client: APIClient, name: str, slug: str, stage_id: int):
    method, url, payload = ROUTES[name]
    if payload is None:
        return getattr(client, method)(url(slug, stage_id))
    if isinstance(payload, bytes):
        return getattr(client, method)(url(slug, stage_id), payload, content_type="text/csv")
    return getattr(client, method)(url(slug, stage_id), payload, format="json")


def snapshot(campaign: Campaign) -> tuple:
    campaign.refresh_from_db()
    stages = list(Stage.objects.filter(campaign=campaign).values().order_by("id"))
    items = list(Item.objects.filter(stage__campaign=campaign).values_list("id", flat=True))
    collaborators = list(campaign.collaborators.values_list("username", flat=True))
    return (campaign.name, campaign.state, stages, items, collaborators)


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_other_requesters_objects_are_404(
    token_client, route, other_campaign, other_stage, other_item
):
    before = snapshot(other_campaign)

    response = call(token_client, route, other_campaign.slug, other_stage.pk)

    assert response.status_code == 404, response.content
    assert other_campaign.name not in response.content.decode()
    assert Campaign.objects.filter(pk=other_campaign.pk).exists()
    assert snapshot(other_campaign) == before


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_foreign_and_missing_answer_alike(token_client, route, other_campaign, other_stage):
    foreign = call(token_client, route, other_campaign.slug, other_stage.pk)
    missing = call(token_client, route, "no-such-campaign", other_stage.pk + 10_000)

    assert (foreign.status_code, foreign.json()) == (missing.status_code, missing.json())


def test_other_requesters_campaigns_are_not_listed(token_client, campaign, other_campaign):
    response = token_client.get("/api/v1/campaigns/", {"state": "draft"})

    assert [c["slug"] for c in response.json()["results"]] == ["alpha"]


def test_cannot_link_own_stage_to_a_foreign_stage(token_client, stage, other_stage):
    response = token_client.post(
        f"/api/v1/stages/{stage.pk}/link/", {"next_stage": other_stage.pk}, format="json"
    )

    assert response.status_code == 400
    assert response.json() == {"next_stage": ["No stage with this id in this campaign."]}


# --- collaborators -------------------------------------------------------------------------

COLLABORATOR_ALLOWED = {
    "campaign-read": 200,
    "campaign-edit": 200,
    "cost-estimate": 200,
    "stage-list": 200,
    "stage-add": 201,
    "stage-read": 200,
    "stage-edit": 200,
    "stage-link": 200,
    "item-list": 200,
    "item-upload": 201,
    "mturk-results-export": 200,
    "mturk-results-review": 200,
}


@pytest.mark.parametrize(("route", "expected"), sorted(COLLABORATOR_ALLOWED.items()))
def test_collaborator_reads_and_edits(collaborator_client, route, expected, campaign, stage):
    response = call(collaborator_client, route, campaign.slug, stage.pk)

    assert response.status_code == expected, response.content


def test_collaborator_can_transition(collaborator_client, campaign, item):
    response = call(collaborator_client, "transition", campaign.slug, item.stage_id)

    assert response.status_code == 200
    assert response.json()["state"] == "pilot"


def test_collaborator_cannot_delete(collaborator_client, campaign, stage):
    response = call(collaborator_client, "campaign-delete", campaign.slug, stage.pk)

    assert response.status_code == 403
    assert Campaign.objects.filter(pk=campaign.pk).exists()


def test_collaborator_cannot_change_collaborators(collaborator_client, campaign, other_requester):
    response = collaborator_client.patch(
        "/api/v1/campaigns/alpha/", {"collaborators": ["bob"]}, format="json"
    )

    assert response.status_code == 403
    assert list(campaign.collaborators.values_list("username", flat=True)) == ["carol"]


def test_collaborator_cannot_sneak_collaborators_into_an_edit(collaborator_client, campaign):
    response = collaborator_client.patch(
        "/api/v1/campaigns/alpha/", {"name": "Renamed", "collaborators": []}, format="json"
    )

    assert response.status_code == 403
    campaign.refresh_from_db()
    assert campaign.name == "Alpha"
    assert campaign.collaborators.count() == 1


# --- staff -----------------------------------------------------------------------------------


def test_staff_see_and_manage_every_campaign(staff_client, other_campaign, requester):
    assert staff_client.get("/api/v1/campaigns/bravo/").status_code == 200

    shared = staff_client.patch(
        "/api/v1/campaigns/bravo/", {"collaborators": ["alice"]}, format="json"
    )
    deleted = staff_client.delete("/api/v1/campaigns/bravo/")

    assert shared.status_code == 200
    assert deleted.status_code == 204
    assert not Campaign.objects.filter(slug="bravo").exists()


# --- no credentials ----------------------------------------------------------------------------


@pytest.mark.parametrize("route", [*sorted(ROUTES), "campaign-list", "campaign-create"])
def test_anonymous_gets_401(api_client, route, campaign, stage):
    if route == "campaign-list":
        response = api_client.get("/api/v1/campaigns/")
    elif route == "campaign-create":
        response = api_client.post("/api/v1/campaigns/", {"name": "X"}, format="json")
    else:
        response = call(api_client, route, campaign.slug, stage.pk)

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert Campaign.objects.count() == 1


def test_bad_token_gets_401(api_client, campaign):
    api_client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")

    assert api_client.get("/api/v1/campaigns/").status_code == 401


def test_session_auth_reads_and_needs_csrf_to_write(requester, campaign):
    client = APIClient(enforce_csrf_checks=True)
    assert client.login(username="alice", password="correct horse battery")

    listed = client.get("/api/v1/campaigns/")
    created = client.post("/api/v1/campaigns/", {"name": "X"}, format="json")

    assert listed.status_code == 200
    assert [c["slug"] for c in listed.json()["results"]] == ["alpha"]
    assert created.status_code == 403
    assert "CSRF" in created.json()["detail"]
    assert Campaign.objects.count() == 1
