"""HITs, single assignments, the assignment list's new filters, qualification types and
grants: results, filters, permissions and bad input."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from campaigns.models import Assignment, QualificationGrant, QualificationType
from tests.factories import UserFactory, WorkerFactory
from tests.helpers import local_pipeline, submitted_assignment

pytestmark = pytest.mark.django_db


@pytest.fixture
def pipeline(requester):
    campaign, writing, _linking = local_pipeline(requester, slug="hq", topics=("a", "b"))
    first = submitted_assignment(writing, question="Which river is longer?")
    second = submitted_assignment(writing, question="Which lake is <b>deeper</b>?")
    return campaign, writing, first, second


def test_hit_list_counts_filters_and_ordering(pipeline, token_client):
    campaign, writing, first, _ = pipeline
    url = f"/api/v1/campaigns/{campaign.slug}/hits/"
    body = token_client.get(url).json()
    assert body["count"] == 2
    row = next(h for h in body["results"] if h["id"] == first.hit_id)
    assert row["stage"] == writing.pk
    assert row["item_count"] == 1
    assert row["assignment_count"] == 1
    assert row["submitted_count"] == 1
    assert row["reward"] == f"{writing.reward:.2f}"
    assert token_client.get(url, {"status": "pending"}).json()["count"] == 0
    ids = [h["id"] for h in token_client.get(url, {"ordering": "id"}).json()["results"]]
    assert ids == sorted(ids)
    bad = token_client.get(url, {"status": "nonsense"})
    assert bad.status_code == 400
    assert "status" in bad.json()


def test_hit_detail_and_assignment_detail(pipeline, token_client):
    _, _, first, _ = pipeline
    hit = token_client.get(f"/api/v1/hits/{first.hit_id}/").json()
    assert hit["items"][0]["data"]["topic"] in {"a", "b"}
    assert hit["assignments"] == [
        {
            "id": first.pk,
            "worker": first.worker.pseudonym,
            "status": "submitted",
            "submitted_at": hit["assignments"][0]["submitted_at"],
        }
    ]
    one = token_client.get(f"/api/v1/assignments/{first.pk}/").json()
    assert one["id"] == first.pk
    assert one["worker"] == first.worker.pseudonym
    assert one["answers"]["questions"][0]["answer"] == "The Nile"
    assert first.worker.external_id not in str(hit) + str(one)


def test_hit_and_assignment_detail_permissions(pipeline, client_for, other_requester, api_client):
    _, _, first, _ = pipeline
    for url in (f"/api/v1/hits/{first.hit_id}/", f"/api/v1/assignments/{first.pk}/"):
        assert client_for(other_requester).get(url).status_code == 404
        assert api_client.get(url).status_code == 401
    assert client_for(other_requester).get("/api/v1/campaigns/hq/hits/").status_code == 404


def test_assignment_list_filters_by_worker_time_and_orders(pipeline, token_client):
    campaign, _, first, second = pipeline
    url = f"/api/v1/campaigns/{campaign.slug}/assignments/"
    by_worker = token_client.get(url, {"worker": second.worker.pseudonym}).json()
    assert [a["id"] for a in by_worker["results"]] == [second.pk]
    later = timezone.now() - timedelta(minutes=5)
    Assignment.objects.filter(pk=first.pk).update(
        accepted_at=later - timedelta(hours=2), submitted_at=later - timedelta(hours=1)
    )
    recent = token_client.get(url, {"submitted_after": later.isoformat()}).json()
    assert [a["id"] for a in recent["results"]] == [second.pk]
    older = token_client.get(url, {"submitted_before": later.isoformat()}).json()
    assert [a["id"] for a in older["results"]] == [first.pk]
    newest_first = token_client.get(url, {"ordering": "-submitted_at"}).json()
    assert [a["id"] for a in newest_first["results"]] == [second.pk, first.pk]
    bad = token_client.get(url, {"submitted_after": "yesterday"})
    assert bad.status_code == 400
    assert "submitted_after" in bad.json()


def test_qualification_types_list_and_create(pipeline, token_client, requester):
    campaign = pipeline[0]
    url = f"/api/v1/campaigns/{campaign.slug}/qualifications/"
    created = token_client.post(
        url,
        {"name": "Quiz 1", "kind": "quiz", "config": {"pass": 3}, "description": "five items"},
        format="json",
    )
    assert created.status_code == 201, created.content
    assert created.json()["active_grants"] == 0
    qual = QualificationType.objects.get(pk=created.json()["id"])
    assert qual.owner == requester
    listed = token_client.get(url, {"kind": "quiz"}).json()
    assert [q["name"] for q in listed["results"]] == ["Quiz 1"]
    duplicate = token_client.post(url, {"name": "Quiz 1", "kind": "quiz"}, format="json")
    assert duplicate.status_code == 400
    assert "name" in duplicate.json()["errors"]
    system = token_client.post(url, {"name": "Rate", "kind": "approval_rate"}, format="json")
    assert system.status_code == 400
    assert "kind" in system.json()


def test_only_the_owner_creates_qualification_types(pipeline, client_for, other_requester):
    campaign = pipeline[0]
    carol = UserFactory.create(username="carol")
    campaign.collaborators.add(carol)
    url = f"/api/v1/campaigns/{campaign.slug}/qualifications/"
    body = {"name": "Mine", "kind": "manual"}
    assert client_for(carol).post(url, body, format="json").status_code == 403
    assert client_for(carol).get(url).status_code == 200
    assert client_for(other_requester).post(url, body, format="json").status_code == 404
    assert not QualificationType.objects.filter(name="Mine").exists()


def test_grants_list_only_workers_of_the_campaign(pipeline, token_client, requester):
    campaign, _, first, second = pipeline
    qual = QualificationType.objects.create(owner=requester, name="Round", kind="round")
    QualificationGrant.objects.create(qualification_type=qual, worker=first.worker, value=2)
    revoked = QualificationGrant.objects.create(
        qualification_type=qual, worker=second.worker, revoked_at=timezone.now()
    )
    elsewhere = WorkerFactory.create()
    QualificationGrant.objects.create(qualification_type=qual, worker=elsewhere)
    url = f"/api/v1/campaigns/{campaign.slug}/qualifications/grants/"
    body = token_client.get(url).json()
    assert {g["worker"] for g in body["results"]} == {
        first.worker.pseudonym,
        second.worker.pseudonym,
    }
    active = token_client.get(url, {"active": "true"}).json()
    assert [g["worker"] for g in active["results"]] == [first.worker.pseudonym]
    inactive = token_client.get(url, {"active": "false"}).json()
    assert [g["id"] for g in inactive["results"]] == [revoked.pk]
    by_worker = token_client.get(url, {"worker": second.worker.pseudonym}).json()
    assert by_worker["count"] == 1


def _routes(pipeline) -> list[tuple[str, str, dict]]:
    campaign, _, first, _ = pipeline
    slug, name = campaign.slug, first.worker.pseudonym
    return [
        ("get", f"/api/v1/campaigns/{slug}/costs/", {}),
        ("get", f"/api/v1/campaigns/{slug}/ledger/", {}),
        ("get", f"/api/v1/campaigns/{slug}/workers/", {}),
        ("post", f"/api/v1/campaigns/{slug}/workers/{name}/block/", {"reason": "x"}),
        ("post", f"/api/v1/campaigns/{slug}/workers/{name}/unblock/", {}),
        ("post", f"/api/v1/campaigns/{slug}/workers/{name}/qualify/", {"qualification_type": 1}),
        ("post", f"/api/v1/campaigns/{slug}/workers/{name}/message/", {"body": "hi"}),
        ("post", f"/api/v1/campaigns/{slug}/messages/", {"workers": [name], "body": "hi"}),
        ("get", f"/api/v1/campaigns/{slug}/hits/", {}),
        ("get", f"/api/v1/hits/{first.hit_id}/", {}),
        ("get", f"/api/v1/assignments/{first.pk}/", {}),
        ("post", f"/api/v1/assignments/{first.pk}/bonus/", {"amount": "0.10", "reason": "x"}),
        ("get", f"/api/v1/campaigns/{slug}/qualifications/", {}),
        ("post", f"/api/v1/campaigns/{slug}/qualifications/", {"name": "Q", "kind": "manual"}),
        ("get", f"/api/v1/campaigns/{slug}/qualifications/grants/", {}),
    ]


def test_every_new_route_is_401_anonymous_and_404_to_others(
    pipeline, api_client, client_for, other_requester, staff_client
):
    bob = client_for(other_requester)
    for method, url, body in _routes(pipeline):
        assert getattr(api_client, method)(url, body, format="json").status_code == 401, url
        assert getattr(bob, method)(url, body, format="json").status_code == 404, url
    assert not QualificationType.objects.exists()
    # Staff see everything (writes may still be refused for their input, never hidden).
    for method, url, _ in _routes(pipeline):
        if method == "get":
            assert staff_client.get(url).status_code == 200, url
