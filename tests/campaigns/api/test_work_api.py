"""Local workforce and review endpoints: invites, grants, publishing, assignments, decisions."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.management import call_command
from django.utils import timezone
from rest_framework.test import APIClient

from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    Campaign,
    InviteLink,
    Item,
    ItemSource,
    LocalGrant,
)
from campaigns.work.allocation import assignment_accept
from campaigns.work.decisions import assignment_approve
from campaigns.work.invites import (
    invite_check,
    invite_create,
    invite_redeem,
    invite_token,
    local_grant_add,
)
from tests.factories import CampaignFactory, ItemFactory, UserFactory
from tests.helpers import local_pipeline, submitted_assignment

pytestmark = pytest.mark.django_db

SITE_URL = "https://qa.example.org"


@pytest.fixture(autouse=True)
def site_url(settings):
    settings.SITE_URL = SITE_URL


@pytest.fixture
def pipeline(requester):
    return local_pipeline(requester, slug="pipe", topics=("rivers", "films", "lakes"))


# --- Invite links --------------------------------------------------------------------


def test_create_invite_returns_url_and_token(token_client, campaign, requester):
    response = token_client.post(
        f"/api/v1/campaigns/{campaign.slug}/invites/",
        {"expires_in": 3600, "max_uses": 5},
        format="json",
    )

    assert response.status_code == 201, response.content
    body = response.json()
    invite = InviteLink.objects.get()
    assert body["id"] == invite.pk
    assert invite_check(token=body["token"]) == invite
    assert body["url"] == f"{SITE_URL}/work/i/{body['token']}/"
    assert body["stage"] is None
    assert body["max_uses"] == 5
    assert body["use_count"] == 0
    assert body["active"] is True
    assert body["created_by"] == "alice"
    assert invite.expires_at <= timezone.now() + timedelta(seconds=3600)


def test_create_invite_defaults_to_a_week_and_can_name_a_stage(token_client, campaign, stage):
    response = token_client.post(
        f"/api/v1/campaigns/{campaign.slug}/invites/", {"stage": stage.pk}, format="json"
    )

    assert response.status_code == 201
    invite = InviteLink.objects.get()
    assert invite.stage == stage
    assert invite.max_uses is None
    assert (
        timezone.now() + timedelta(days=6) < invite.expires_at <= timezone.now() + timedelta(days=7)
    )


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"expires_in": 0}, "expires_in"),
        ({"expires_in": 366 * 24 * 3600}, "expires_in"),
        ({"max_uses": 0}, "max_uses"),
        ({"stage": 999999}, "stage"),
        ({"uses": 3}, "uses"),
    ],
)
def test_invalid_invite_is_400(token_client, campaign, payload, field):
    response = token_client.post(
        f"/api/v1/campaigns/{campaign.slug}/invites/", payload, format="json"
    )

    assert response.status_code == 400
    assert field in response.json()
    assert not InviteLink.objects.exists()


def test_invite_for_another_campaigns_stage_is_400(token_client, campaign, other_stage):
    response = token_client.post(
        f"/api/v1/campaigns/{campaign.slug}/invites/", {"stage": other_stage.pk}, format="json"
    )
    assert response.status_code == 400
    assert not InviteLink.objects.exists()


def test_invites_are_for_local_campaigns_only(token_client, requester):
    campaign = CampaignFactory.create(owner=requester, provider="mturk", slug="turk")
    response = token_client.post(f"/api/v1/campaigns/{campaign.slug}/invites/", {}, format="json")
    assert response.status_code == 400
    assert "local workforce" in response.json()["detail"]


def test_list_and_revoke_invites(token_client, campaign):
    older = invite_create(
        campaign=campaign, created_by=campaign.owner, expires_in=timedelta(days=1)
    )
    newer = invite_create(
        campaign=campaign, created_by=campaign.owner, expires_in=timedelta(days=1)
    )

    listed = token_client.get(f"/api/v1/campaigns/{campaign.slug}/invites/").json()
    assert [i["id"] for i in listed["results"]] == [newer.pk, older.pk]

    revoked = token_client.post(f"/api/v1/invites/{older.pk}/revoke/")
    assert revoked.status_code == 200
    assert revoked.json()["active"] is False
    first_time = revoked.json()["revoked_at"]
    assert first_time is not None
    again = token_client.post(f"/api/v1/invites/{older.pk}/revoke/")
    assert again.json()["revoked_at"] == first_time


# --- Grants --------------------------------------------------------------------------


def test_grants_add_list_remove(token_client, campaign):
    UserFactory.create(username="dora")
    url = f"/api/v1/campaigns/{campaign.slug}/grants/"

    created = token_client.post(url, {"username": "dora"}, format="json")
    repeated = token_client.post(url, {"username": "dora"}, format="json")

    assert created.status_code == 201
    assert created.json()["username"] == "dora"
    assert created.json()["granted_by"] == "alice"
    assert repeated.status_code == 200
    assert LocalGrant.objects.count() == 1
    assert [g["username"] for g in token_client.get(url).json()["results"]] == ["dora"]

    assert token_client.delete(f"{url}dora/").status_code == 204
    assert not LocalGrant.objects.exists()
    assert token_client.delete(f"{url}dora/").status_code == 404


def test_grant_to_unknown_or_inactive_user_is_400(token_client, campaign):
    UserFactory.create(username="gone", is_active=False)
    url = f"/api/v1/campaigns/{campaign.slug}/grants/"
    for name in ("nobody", "gone"):
        response = token_client.post(url, {"username": name}, format="json")
        assert response.status_code == 400
        assert "username" in response.json()
    assert not LocalGrant.objects.exists()


# --- Publishing ------------------------------------------------------------------------


def test_publish_needs_pilot_or_live(token_client, campaign, stage):
    ItemFactory.create(stage=stage)
    response = token_client.post(f"/api/v1/stages/{stage.pk}/publish/", {}, format="json")
    assert response.status_code == 409
    assert not HIT.objects.exists()


def test_publish_new_items_of_a_running_stage(token_client, pipeline):
    _, writing, _ = pipeline
    for n in range(2):
        Item.objects.create(
            stage=writing,
            external_id=f"late-{n}",
            data={"topic": f"late {n}", "complexity_type": "generic"},
            source=ItemSource.UPLOADED,
        )
    before = HIT.objects.filter(stage=writing).count()

    response = token_client.post(f"/api/v1/stages/{writing.pk}/publish/", {}, format="json")

    assert response.status_code == 200
    assert response.json() == {"stage": writing.pk, "hits_created": 2}
    assert HIT.objects.filter(stage=writing, status="published").count() == before + 2
    again = token_client.post(f"/api/v1/stages/{writing.pk}/publish/", {}, format="json")
    assert again.json()["hits_created"] == 0


# --- Assignments -----------------------------------------------------------------------


def test_list_submitted_assignments(token_client, pipeline):
    campaign, writing, linking = pipeline
    first = submitted_assignment(writing, question="Which river is longer, Nile or Rhine?")
    second = submitted_assignment(writing, question="Which film is older, Alien or Heat?")
    approved = submitted_assignment(writing, question="Which lake is deeper, Baikal or Ness?")
    assignment_approve(assignment=approved, source="requester")

    response = token_client.get(
        f"/api/v1/campaigns/{campaign.slug}/assignments/",
        {"status": "submitted", "stage": writing.pk},
    )

    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 2
    rows = body["results"]
    assert [r["id"] for r in rows] == [first.pk, second.pk]
    row = rows[0]
    assert row["worker"] == first.worker.pseudonym
    assert first.worker.external_id not in response.content.decode()
    assert row["stage"] == writing.pk
    assert row["stage_name"] == "Write questions"
    assert row["status"] == "submitted"
    assert row["answers"]["questions"][0]["question"] == "Which river is longer, Nile or Rhine?"
    assert row["items"] == [
        {
            "id": Item.objects.get(stage=writing, external_id="cell-0").pk,
            "external_id": "cell-0",
            "data": {"topic": "rivers", "complexity_type": "comparative"},
        }
    ]
    assert row["telemetry"]["keystrokes"] == 57
    assert row["telemetry_summary"] == {
        "keystrokes": 57,
        "paste_count": 2,
        "pasted_chars": 12,
        "focus_losses": 2,
        "visibility_changes": 1,
    }
    assert row["submitted_at"] is not None
    assert row["work_seconds"] is not None
    assert row["decided_at"] is None
    assert row["decided_by"] is None

    everything = token_client.get(f"/api/v1/campaigns/{campaign.slug}/assignments/").json()
    assert everything["count"] == 3
    other_stage = token_client.get(
        f"/api/v1/campaigns/{campaign.slug}/assignments/", {"stage": linking.pk}
    ).json()
    assert other_stage["count"] == 0


@pytest.mark.parametrize("query", [{"status": "done"}, {"stage": "x"}, {"stage": 999999}])
def test_bad_assignment_filters_are_400(token_client, pipeline, query):
    campaign, _, _ = pipeline
    response = token_client.get(f"/api/v1/campaigns/{campaign.slug}/assignments/", query)
    assert response.status_code == 400


def test_approve_hands_off_to_the_next_stage(
    token_client, pipeline, requester, django_capture_on_commit_callbacks
):
    _, writing, linking = pipeline
    assignment = submitted_assignment(writing)

    with django_capture_on_commit_callbacks(execute=True):
        response = token_client.post(
            f"/api/v1/assignments/{assignment.pk}/approve/", {"reason": "good"}, format="json"
        )

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "approved"
    assert body["decided_by"] == "alice"
    assert body["decision_source"] == "requester"
    assert body["decision_reason"] == "good"
    produced = Item.objects.get(stage=linking)
    assert produced.source_assignment_id == assignment.pk
    assert HIT.objects.filter(stage=linking, status="published").count() == 1

    # Idempotent: approving again changes nothing and hands off nothing more.
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        again = token_client.post(
            f"/api/v1/assignments/{assignment.pk}/approve/", {}, format="json"
        )
    assert again.status_code == 200
    assert again.json()["decided_at"] == body["decided_at"]
    assert callbacks == []
    # The other way is a conflict.
    conflict = token_client.post(
        f"/api/v1/assignments/{assignment.pk}/reject/", {"reason": "changed my mind"}, format="json"
    )
    assert conflict.status_code == 409
    assert Assignment.objects.get(pk=assignment.pk).status == AssignmentStatus.APPROVED


def test_reject_needs_a_reason_and_keeps_feedback(token_client, pipeline):
    _, writing, _ = pipeline
    assignment = submitted_assignment(writing)
    url = f"/api/v1/assignments/{assignment.pk}/reject/"

    missing = token_client.post(url, {"feedback": "no"}, format="json")
    blank = token_client.post(url, {"reason": "  "}, format="json")
    response = token_client.post(
        url, {"reason": "off topic", "feedback": "Ask about rivers."}, format="json"
    )

    assert missing.status_code == 400
    assert "reason" in missing.json()
    assert blank.status_code == 400
    assert response.status_code == 200
    assert response.json()["status"] == "rejected"
    assert response.json()["feedback"] == "Ask about rivers."
    assert response.json()["decision_reason"] == "off topic"


def test_deciding_an_unsubmitted_assignment_is_409(token_client, pipeline):
    campaign, writing, _ = pipeline
    invite = invite_create(
        campaign=campaign, created_by=campaign.owner, expires_in=timedelta(days=1)
    )
    _, worker = invite_redeem(token=invite_token(invite=invite))
    accepted = assignment_accept(stage=writing, worker=worker)

    response = token_client.post(f"/api/v1/assignments/{accepted.pk}/approve/", {}, format="json")

    assert response.status_code == 409
    assert response.json()["errors"] == {"status": ["accepted"]}


def test_bulk_review_reports_per_id(
    token_client, pipeline, other_requester, django_capture_on_commit_callbacks
):
    campaign, writing, linking = pipeline
    a = submitted_assignment(writing, question="Which river is longer, Nile or Rhine?")
    b = submitted_assignment(writing, question="Which film is older, Alien or Heat?")
    c = submitted_assignment(writing, question="Which lake is deeper, Baikal or Ness?")
    assignment_approve(assignment=c, source="requester")
    _, bob_writing, _ = local_pipeline(other_requester, slug="bobs")
    bobs = submitted_assignment(bob_writing)

    with django_capture_on_commit_callbacks(execute=True):
        response = token_client.post(
            f"/api/v1/campaigns/{campaign.slug}/assignments/bulk-review/",
            {"ids": [a.pk, b.pk, c.pk, bobs.pk, a.pk], "decision": "approve"},
            format="json",
        )

    assert response.status_code == 200, response.content
    results = {r["id"]: (r["result"], r["status"]) for r in response.json()["results"]}
    assert results == {
        a.pk: ("decided", "approved"),
        b.pk: ("decided", "approved"),
        c.pk: ("already_decided", "approved"),
        bobs.pk: ("not_found", None),
    }
    assert Assignment.objects.get(pk=bobs.pk).status == AssignmentStatus.SUBMITTED
    # c was approved before, outside the capture: only a and b hand off here.
    assert Item.objects.filter(stage=linking, source_assignment__in=[a, b]).count() == 2


def test_bulk_reject_needs_a_reason(token_client, pipeline):
    campaign, writing, _ = pipeline
    a = submitted_assignment(writing)
    url = f"/api/v1/campaigns/{campaign.slug}/assignments/bulk-review/"

    refused = token_client.post(url, {"ids": [a.pk], "decision": "reject"}, format="json")
    done = token_client.post(
        url,
        {"ids": [a.pk], "decision": "reject", "reason": "spam", "feedback": "Please read."},
        format="json",
    )
    approve_after = token_client.post(url, {"ids": [a.pk], "decision": "approve"}, format="json")

    assert refused.status_code == 400
    assert "reason" in refused.json()
    assert done.json()["results"] == [
        {"id": a.pk, "result": "decided", "status": "rejected", "detail": ""}
    ]
    assert approve_after.json()["results"][0]["result"] == "already_decided"
    assert Assignment.objects.get(pk=a.pk).feedback == "Please read."


def test_collaborator_may_review(collaborator_client, pipeline, requester):
    campaign, writing, _ = pipeline
    carol = UserFactory.create(username="carol")
    campaign.collaborators.add(carol)
    assignment = submitted_assignment(writing)

    response = collaborator_client.post(
        f"/api/v1/assignments/{assignment.pk}/approve/", {}, format="json"
    )

    assert response.status_code == 200
    assert response.json()["decided_by"] == "carol"


# --- Who may do what -------------------------------------------------------------------

Ids = dict[str, Any]
ROUTES: dict[str, tuple[str, Callable[[Ids], str], Any]] = {
    "invite-list": ("get", lambda i: f"/api/v1/campaigns/{i['slug']}/invites/", None),
    "invite-create": ("post", lambda i: f"/api/v1/campaigns/{i['slug']}/invites/", {}),
    "invite-revoke": ("post", lambda i: f"/api/v1/invites/{i['invite']}/revoke/", {}),
    "grant-list": ("get", lambda i: f"/api/v1/campaigns/{i['slug']}/grants/", None),
    "grant-add": (
        "post",
        lambda i: f"/api/v1/campaigns/{i['slug']}/grants/",
        {"username": "dora"},
    ),
    "grant-remove": ("delete", lambda i: f"/api/v1/campaigns/{i['slug']}/grants/erin/", None),
    "stage-publish": ("post", lambda i: f"/api/v1/stages/{i['stage']}/publish/", {}),
    "assignment-list": ("get", lambda i: f"/api/v1/campaigns/{i['slug']}/assignments/", None),
    "approve": ("post", lambda i: f"/api/v1/assignments/{i['assignment']}/approve/", {}),
    "reject": (
        "post",
        lambda i: f"/api/v1/assignments/{i['assignment']}/reject/",
        {"reason": "x"},
    ),
    "bulk-review": (
        "post",
        lambda i: f"/api/v1/campaigns/{i['slug']}/assignments/bulk-review/",
        lambda i: {"ids": [i["assignment"]], "decision": "approve"},
    ),
}


@pytest.fixture
def bobs_work(other_requester) -> Ids:
    campaign, writing, _ = local_pipeline(other_requester, slug="bobs")
    Item.objects.create(
        stage=writing,
        external_id="pending",
        data={"topic": "pending", "complexity_type": "generic"},
        source=ItemSource.UPLOADED,
    )
    invite = invite_create(
        campaign=campaign, created_by=other_requester, expires_in=timedelta(days=1)
    )
    local_grant_add(campaign=campaign, user=UserFactory.create(username="erin"))
    UserFactory.create(username="dora")
    assignment = submitted_assignment(writing)
    return {
        "campaign": campaign,
        "slug": campaign.slug,
        "stage": writing.pk,
        "invite": invite.pk,
        "assignment": assignment.pk,
    }


def _call(client: APIClient, name: str, ids: Ids):
    method, url, payload = ROUTES[name]
    body = payload(ids) if callable(payload) else payload
    if body is None:
        return getattr(client, method)(url(ids))
    return getattr(client, method)(url(ids), body, format="json")


def _snapshot(campaign: Campaign) -> tuple:
    return (
        list(InviteLink.objects.filter(campaign=campaign).values_list("pk", "revoked_at")),
        list(LocalGrant.objects.filter(campaign=campaign).values_list("user__username", flat=True)),
        HIT.objects.filter(stage__campaign=campaign).count(),
        list(Assignment.objects.filter(hit__stage__campaign=campaign).values_list("pk", "status")),
    )


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_other_requesters_objects_are_404(token_client, bobs_work, route):
    before = _snapshot(bobs_work["campaign"])

    response = _call(token_client, route, bobs_work)

    assert response.status_code == 404, response.content
    assert _snapshot(bobs_work["campaign"]) == before


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_anonymous_is_401(api_client, bobs_work, route):
    before = _snapshot(bobs_work["campaign"])

    response = _call(api_client, route, bobs_work)

    assert response.status_code == 401
    assert _snapshot(bobs_work["campaign"]) == before


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_staff_reach_every_route(staff_client, bobs_work, route):
    response = _call(staff_client, route, bobs_work)
    assert response.status_code in {200, 201, 204}, response.content


# --- Schema --------------------------------------------------------------------------

NEW_PATHS = {
    "/api/v1/campaigns/{slug}/invites/": {"get", "post"},
    "/api/v1/invites/{invite_id}/revoke/": {"post"},
    "/api/v1/campaigns/{slug}/grants/": {"get", "post"},
    "/api/v1/campaigns/{slug}/grants/{username}/": {"delete"},
    "/api/v1/stages/{stage_id}/publish/": {"post"},
    "/api/v1/campaigns/{slug}/assignments/": {"get"},
    "/api/v1/campaigns/{slug}/assignments/bulk-review/": {"post"},
    "/api/v1/assignments/{assignment_id}/approve/": {"post"},
    "/api/v1/assignments/{assignment_id}/reject/": {"post"},
}


def test_schema_documents_the_new_routes(tmp_path: Path):
    out = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    schema = yaml.safe_load(out.read_text())

    paths = {p: set(ops) - {"parameters"} for p, ops in schema["paths"].items()}
    assert {p: ops for p, ops in paths.items() if p in NEW_PATHS} == NEW_PATHS
    for path in NEW_PATHS:
        for method, operation in schema["paths"][path].items():
            assert {} not in operation["security"], (path, method)
    worker = schema["components"]["schemas"]["AssignmentOutput"]["properties"]["worker"]
    assert worker["type"] == "string"
