"""An item's drill-down: its history across stages on the page and in the API, the
query count, permissions and escaping."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from campaigns.models import Item
from campaigns.work.decisions import assignment_approve
from campaigns.work.handoff import handoff_run
from campaigns.work.lineage import item_history
from tests.helpers import local_pipeline, submitted_assignment

pytestmark = pytest.mark.django_db

MARKUP = "<b onmouseover=alert(1)>Nile</b>"


@pytest.fixture
def lineage(requester):
    """A written QA pair, approved and handed on to answer linking; a second writer's
    assignment is rejected on the other topic."""
    campaign, writing, linking = local_pipeline(requester, slug="lineage")
    written = submitted_assignment(writing, question=f"Which river, {MARKUP}, is longer?")
    assignment_approve(assignment=written, decided_by=requester, source="requester")
    assert handoff_run(assignment=written) == 1
    handed = Item.objects.get(stage=linking)
    source = Item.objects.get(stage=writing, hits=written.hit_id)
    return campaign, writing, linking, written, source, handed


def test_history_runs_down_the_pipeline(lineage):
    campaign, _writing, _linking, written, source, handed = lineage

    steps = item_history(campaign=campaign, item_id=source.pk)

    assert [(s.item.pk, s.depth) for s in steps] == [(source.pk, 0), (handed.pk, 1)]
    (work,) = steps[0].assignments
    assert work.assignment == written
    assert work.produced == [handed.pk]
    assert steps[1].assignments == []  # linking not published yet


def test_history_runs_up_from_a_handed_on_item(lineage):
    campaign, _writing, _linking, written, source, handed = lineage

    steps = item_history(campaign=campaign, item_id=handed.pk)

    assert [(s.item.pk, s.depth) for s in steps] == [(source.pk, -1), (handed.pk, 0)]
    assert steps[0].assignments[0].assignment == written


def test_queries_do_not_grow_with_assignments(lineage, requester):
    campaign, writing, _linking, _written, source, _handed = lineage
    with CaptureQueriesContext(connection) as one:
        item_history(campaign=campaign, item_id=source.pk)
    other = Item.objects.exclude(pk=source.pk).get(stage=writing)
    submitted_assignment(writing)  # work on the other item: not in this lineage
    with CaptureQueriesContext(connection) as two:
        item_history(campaign=campaign, item_id=source.pk)
    assert len(two) == len(one)
    assert item_history(campaign=campaign, item_id=other.pk)[0].assignments


def test_page_shows_who_did_what_escaped(lineage, alice_client):
    campaign, _writing, _linking, written, source, handed = lineage
    url = reverse("frontend:item-history", kwargs={"slug": campaign.slug, "item_id": source.pk})

    response = alice_client.get(url)

    assert response.status_code == 200
    html = response.content.decode()
    assert written.worker.pseudonym in html
    assert "by alice" in html
    assert f'href="#item-{handed.pk}"' in html
    assert MARKUP not in html
    assert "&lt;b onmouseover=alert(1)&gt;Nile&lt;/b&gt;" in html
    assert written.worker.external_id not in html


def test_review_queue_links_item_history(requester, alice_client):
    campaign, writing, _ = local_pipeline(requester, slug="queue-links")
    waiting = submitted_assignment(writing)
    item = Item.objects.get(hits=waiting.hit_id)
    html = alice_client.get(reverse("frontend:campaign-review", args=[campaign.slug])).content
    target = reverse("frontend:item-history", kwargs={"slug": campaign.slug, "item_id": item.pk})
    assert target.encode() in html


def test_api_history(lineage, token_client):
    campaign, _writing, linking, written, source, handed = lineage

    body = token_client.get(f"/api/v1/campaigns/{campaign.slug}/items/{handed.pk}/history/").json()

    assert [(s["item"], s["depth"]) for s in body] == [(source.pk, -1), (handed.pk, 0)]
    assert body[1]["stage"] == linking.pk
    (work,) = body[0]["assignments"]
    assert work["id"] == written.pk
    assert work["worker"] == written.worker.pseudonym
    assert work["decided_by"] == "alice"
    assert work["produced"] == [handed.pk]


def test_other_requesters_and_unknown_items_get_404(lineage, bob_client, token_client):
    campaign, *_rest, source, _handed = lineage
    url = reverse("frontend:item-history", kwargs={"slug": campaign.slug, "item_id": source.pk})
    assert bob_client.get(url).status_code == 404
    assert Client().get(url).status_code == 302
    missing = reverse("frontend:item-history", kwargs={"slug": campaign.slug, "item_id": 10**9})
    assert (
        token_client.get(f"/api/v1/campaigns/{campaign.slug}/items/{10**9}/history/").status_code
        == 404
    )
    assert Client().get(missing).status_code == 302
