"""Preparing a published linking stage (``linking.prefetch_stage``) against the local
Wikidata fake, and ids checked and redirects resolved on submit."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from campaigns.models import Assignment, Item
from campaigns.platforms.publishing import campaign_start
from campaigns.tasktypes import task_type_get
from linking import services
from linking.models import WikidataCacheEntry
from linking.subscriptions import on_answer_stored, on_stage_published
from linking.tasks import prefetch_stage_task
from linking.wikidata import reset_host_gates
from tests.linking.conftest import accept, joined_client, link_form, work_once
from tests.linking.fake_wikidata import FakeWikidata

pytestmark = pytest.mark.django_db

AGENT = "qaportal-tests/1.0 (https://example.org/qaportal; tests@example.org)"
QUESTIONS = [
    {"external_id": "q1", "question": "Which film came first, Top Gun or Risky Business?"},
    {"external_id": "q2", "question": "How old was Tom Cruise in Top Gun?"},
]


@pytest.fixture
def fake(settings):
    reset_host_gates()
    with FakeWikidata() as server:
        settings.WIKIDATA_OFFLINE = False
        settings.WIKIDATA_API_URL = server.url
        settings.WIKIDATA_USER_AGENT = AGENT
        settings.WIKIDATA_BACKOFF_BASE = 0.01
        settings.WIKIDATA_BACKOFF_MAX = 0.05
        yield server
    reset_host_gates()


def test_prefetch_proposes_spans_and_caches_suggestions_with_maxlag(linking_stage, fake):
    stage = linking_stage(items=QUESTIONS, task_type="question_entity_linking", escalation_rule={})
    campaign_start(campaign=stage.campaign, to_state="live")
    fake.fail_next("maxlag", retry_after=0)  # a lagged replica: waited for, then retried

    assert prefetch_stage_task.delay(stage.pk).get() == 2

    items = {i.external_id: i.data for i in Item.objects.filter(stage=stage)}
    texts = {s["text"] for s in items["q1"]["proposed_spans"]}
    assert {"Top Gun", "Risky Business"} <= texts
    assert {"Tom Cruise", "Top Gun"} <= {s["text"] for s in items["q2"]["proposed_spans"]}
    assert all(d["seen"] is False and d["prefilled_links"] == [] for d in items.values())
    searches = fake.calls("wbsearchentities")
    assert searches
    assert all(c.params["maxlag"] == "5" for c in searches)
    assert {c.params["search"] for c in searches} >= {"Top Gun", "Tom Cruise"}
    assert WikidataCacheEntry.objects.filter(kind="search").exists()

    # Idempotent: nothing to prepare, nothing fetched again.
    before = len(fake.requests)
    assert prefetch_stage_task.delay(stage.pk).get() == 0
    assert len(fake.requests) == before

    # The page's suggestions come from what the prefetch cached.
    client = joined_client(stage.campaign)
    assignment = accept(client, stage)
    data = client.get("/work/suggest/", {"a": str(assignment.pk), "q": "Tom Cruise"}).json()
    assert data["candidates"][0] == {
        "id": "Q37079",
        "label": "Tom Cruise",
        "description": "American actor (born 1962)",
    }
    assert len(fake.requests) == before


def test_prefetch_of_a_stage_that_is_not_linking_does_nothing(linking_stage):
    stage = linking_stage(items=[{"external_id": "a", "question": "Q?", "answer": "A"}])
    stage.task_type = "question_writing"
    stage.save(update_fields=["task_type"])
    assert prefetch_stage_task.delay(stage.pk).get() == 0
    assert prefetch_stage_task.delay(999_999).get() == 0


def test_hooks_enqueue_only_for_linking_stages(linking_stage, django_capture_on_commit_callbacks):
    stage = linking_stage(items=[{"external_id": "a", "question": "Q?", "answer": "Paris"}])
    stored = Assignment(hit_id=1)  # unsaved: the hook reads its HIT id only
    with django_capture_on_commit_callbacks() as callbacks:
        on_stage_published(stage=stage)
        on_answer_stored(assignment=stored, stage=stage, task_type=task_type_get(stage.task_type))
        stage.task_type = "question_writing"
        on_stage_published(stage=stage)
        on_answer_stored(assignment=stored, stage=stage, task_type=task_type_get(stage.task_type))
    assert len(callbacks) == 2  # through the outbox: one message each, sent after commit
    stage.task_type, stage.escalation_rule = "answer_entity_linking", {}
    with django_capture_on_commit_callbacks() as callbacks:
        # no entity-agreement rule: nothing to judge
        on_answer_stored(assignment=stored, stage=stage, task_type=task_type_get(stage.task_type))
    assert callbacks == []


@pytest.fixture
def redirecting_index(settings, tmp_path):
    path = tmp_path / "index.jsonl"
    records = [
        {"id": "Q42", "label": "Douglas Adams", "aliases": [], "description": "writer"},
        {"id": "Q4115189", "redirect_to": "Q42"},
    ]
    path.write_text("\n".join(json.dumps(r) for r in records))
    settings.WIKIDATA_OFFLINE = True
    settings.WIKIDATA_OFFLINE_INDEX = str(path)


def test_submitted_ids_are_checked_redirects_resolved_nil_kept(linking_stage, redirecting_index):
    item = {
        "external_id": "hhgttg",
        "question": "Who wrote it?",
        "answer": "Douglas Adams, Nobody",
        "proposed_spans": [
            {"start": 0, "end": 13, "text": "Douglas Adams"},
            {"start": 15, "end": 21, "text": "Nobody"},
        ],
    }
    stage = linking_stage(items=[item], escalation_rule={})
    campaign = campaign_start(campaign=stage.campaign, to_state="live")

    client = joined_client(campaign)
    assignment = accept(client, stage)
    url = reverse("worker:assignment", kwargs={"assignment_id": assignment.pk})
    bad = client.post(url, link_form([(0, 13, "Douglas Adams", "Q042"), (15, 21, "Nobody", None)]))
    assert bad.status_code == 400
    assert "A Wikidata id looks like Q42." in bad.text

    stored = work_once(
        campaign, stage, [(0, 13, "Douglas Adams", "Q4115189"), (15, 21, "Nobody", None)]
    )
    assert stored.answers is not None
    links = stored.answers["items"][0]["links"]
    assert links[0] == {
        "start": 0,
        "end": 13,
        "text": "Douglas Adams",
        "qid": "Q42",
        "none": False,
        "redirected_from": "Q4115189",
    }
    assert links[1] == {"start": 15, "end": 21, "text": "Nobody", "qid": None, "none": True}


def test_items_data_written_in_batches_others_untouched(linking_stage, monkeypatch):
    """The prepared items' data (``_items_data_write``: an UPDATE joined on a VALUES list,
    a few items each here) is stored as given, quotes and non-ASCII included; the
    stage's other items keep theirs."""
    stage = linking_stage(
        items=[{"external_id": f"i{n}", "question": f"Q{n}?", "answer": "A"} for n in range(5)]
    )
    items = list(Item.objects.filter(stage=stage).order_by("external_id"))
    before = {item.pk: item.data for item in items}
    monkeypatch.setattr(services, "ITEMS_PER_UPDATE", 2)
    written = items[:3]
    for n, item in enumerate(written):
        item.data = {**item.data, "proposed_spans": [{"text": f'Zoë\'s "{n}" \\ 5'}], "n": n}
    services._items_data_write(written)
    stored = {i.pk: i.data for i in Item.objects.filter(stage=stage)}
    assert [stored[item.pk] for item in written] == [item.data for item in written]
    assert stored[written[2].pk]["n"] == 2
    assert all(stored[item.pk] == before[item.pk] for item in items[3:])
    assert Item.objects.filter(stage=stage, data__n=1).count() == 1  # JSON, not text
