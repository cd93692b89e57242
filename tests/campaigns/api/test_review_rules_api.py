"""Requester side of the review automation over the API: gold mixed into HITs, rule
verdicts and holds on assignments, overriding a decision, running the rules, quality
numbers, final labels and the entity-link review queue."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from rest_framework.test import APIClient

from campaigns.design.services import campaign_create, stage_add
from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    Campaign,
    HITItem,
    Item,
    ItemSource,
    Worker,
)
from campaigns.platforms.publishing import campaign_start
from campaigns.work.publishing import stage_publish
from linking.models import AgreedLink, EntityLinkResolution, WikidataCacheEntry
from tests.campaigns.api.review_builders import (
    RULES,
    TOM,
    VAL,
    VAL_NIL,
    link_review_item,
    reviewed_stage,
)
from tests.validation.db_helpers import hits, make_stage, mc_item, submit, worker

pytestmark = pytest.mark.django_db

# --- Gold mixed into the HITs -------------------------------------------------------------


def test_publishing_spreads_gold_through_the_hits(token_client, requester):
    campaign = campaign_create(owner=requester, name="Gold mix", slug="gold-mix")
    stage = stage_add(
        campaign=campaign,
        name="Validate",
        task_type="mc_validation",
        items_per_hit=4,
        gold_ratio=Decimal("0.25"),
    )
    # Uploaded regular items first, gold last: publishing in id order would put every
    # gold item into the last HITs.
    for n in range(12):
        Item.objects.create(
            stage=stage, external_id=f"r{n}", data=mc_item(n), source=ItemSource.UPLOADED
        )
    for n in range(4):
        Item.objects.create(
            stage=stage,
            external_id=f"g{n}",
            data=mc_item(100 + n),
            gold={"choice": 1},
            source=ItemSource.UPLOADED,
        )
    campaign_start(campaign=campaign, to_state="pilot")  # publishes

    hit_list = list(HIT.objects.filter(stage=stage).order_by("pk"))
    gold_per_hit = [
        HITItem.objects.filter(hit=h, item__gold__isnull=False).count() for h in hit_list
    ]
    assert len(hit_list) == 4
    assert gold_per_hit == [1, 1, 1, 1]
    assert not Item.objects.filter(stage=stage, status="pending").exists()
    # Every HIT holds an item once.
    for h in hit_list:
        ids = list(HITItem.objects.filter(hit=h).values_list("item_id", flat=True))
        assert len(ids) == len(set(ids))


def test_publish_endpoint_mixes_gold_and_keeps_surplus_gold_pending(token_client, requester):
    campaign = campaign_create(owner=requester, name="Gold surplus", slug="gold-surplus")
    stage = stage_add(
        campaign=campaign,
        name="Validate",
        task_type="mc_validation",
        items_per_hit=5,
        gold_ratio=Decimal("0.2"),
    )
    for n in range(8):
        Item.objects.create(
            stage=stage, external_id=f"r{n}", data=mc_item(n), source=ItemSource.UPLOADED
        )
    for n in range(6):
        Item.objects.create(
            stage=stage,
            external_id=f"g{n}",
            data=mc_item(100 + n),
            gold={"choice": 0},
            source=ItemSource.UPLOADED,
        )
    Campaign.objects.filter(pk=campaign.pk).update(state="pilot")

    response = token_client.post(f"/api/v1/stages/{stage.pk}/publish/", {}, format="json")

    assert response.status_code == 200, response.content
    published_gold = HITItem.objects.filter(hit__stage=stage, item__gold__isnull=False)
    assert published_gold.count() == 2  # 8 regular at 20 % gold: 2 gold
    first_hit = HIT.objects.filter(stage=stage).order_by("pk").first()
    assert HITItem.objects.filter(hit=first_hit, item__gold__isnull=False).exists()
    # The gold beyond the ratio waits for more regular items.
    assert Item.objects.filter(stage=stage, status="pending", gold__isnull=False).count() == 4


def test_publishing_without_a_gold_ratio_keeps_item_order(requester):
    campaign = campaign_create(owner=requester, name="No ratio", slug="no-ratio")
    stage = stage_add(campaign=campaign, name="Validate", task_type="mc_validation")
    for n in range(3):
        Item.objects.create(
            stage=stage,
            external_id=f"i{n}",
            data=mc_item(n),
            gold={"choice": 0} if n == 0 else None,
            source=ItemSource.UPLOADED,
        )

    assert stage_publish(stage=stage) == 3

    order = list(
        HITItem.objects.filter(hit__stage=stage)
        .order_by("hit_id")
        .values_list("item__external_id", flat=True)
    )
    assert order == ["i0", "i1", "i2"]


# --- Verdicts, holds and overrides -------------------------------------------------------


def test_assignments_carry_rule_verdicts_and_the_hold(token_client, requester):
    stage, made = reviewed_stage(requester)
    slug = stage.campaign.slug

    body = token_client.get(f"/api/v1/campaigns/{slug}/assignments/").json()
    by_id = {row["id"]: row for row in body["results"]}

    c = by_id[made["c"].pk]
    assert c["status"] == "rejected"
    assert c["decision_source"] == "rule:consensus"
    assert c["held"] is False
    assert c["review"]["decision"] == "reject"
    assert c["review"]["applied"] is True
    rules = {v["rule"]: v for v in c["review"]["rules"]}
    assert rules["consensus"]["numbers"] == {"agree": 0, "items": 1, "share": 0.0, "min": 0.5}
    lone = by_id[made["lone"].pk]
    assert (lone["status"], lone["held"], lone["review"]["decision"]) == ("submitted", True, "hold")
    held = token_client.get(f"/api/v1/campaigns/{slug}/assignments/", {"held": "true"}).json()
    assert [r["id"] for r in held["results"]] == [made["lone"].pk]
    not_held = token_client.get(f"/api/v1/campaigns/{slug}/assignments/", {"held": "false"})
    assert made["lone"].pk not in [r["id"] for r in not_held.json()["results"]]


def test_a_held_assignment_is_approved_normally(token_client, requester):
    _, made = reviewed_stage(requester)

    response = token_client.post(
        f"/api/v1/assignments/{made['lone'].pk}/approve/", {"reason": "fine"}, format="json"
    )

    assert response.status_code == 200, response.content
    assert response.json()["status"] == "approved"
    assert response.json()["decided_by"] == "alice"
    assert response.json()["held"] is False


def test_override_turns_a_rule_decision_over_and_records_the_requester(token_client, requester):
    _, made = reviewed_stage(requester)
    c = made["c"]
    # The plain approval refuses to turn the rule's rejection over.
    assert (
        token_client.post(f"/api/v1/assignments/{c.pk}/approve/", {}, format="json").status_code
        == 409
    )

    response = token_client.post(
        f"/api/v1/assignments/{c.pk}/override/",
        {"decision": "approve", "reason": "option C is right"},
        format="json",
    )

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["status"], body["decided_by"], body["decision_source"]) == (
        "approved",
        "alice",
        "requester",
    )
    assert body["decision_reason"] == "option C is right"
    (override,) = body["overrides"]
    assert override["by"] == requester.pk
    assert override["replaced"]["source"] == "rule:consensus"
    assert body["review"]["decision"] == "reject"  # the rules' verdict stays readable
    w = Worker.objects.get(pk=c.worker_id)
    assert (w.approved_count, w.rejected_count) == (1, 0)


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"decision": "reject"}, "reason"),
        ({"decision": "reject", "reason": "  "}, "reason"),
        ({"decision": "maybe", "reason": "x"}, "decision"),
        ({"decision": "approve", "reason": "x", "extra": 1}, "extra"),
    ],
)
def test_override_input_is_checked(token_client, requester, payload, field):
    _, made = reviewed_stage(requester)

    response = token_client.post(
        f"/api/v1/assignments/{made['a'].pk}/override/", payload, format="json"
    )

    assert response.status_code == 400
    assert field in response.json()
    assert Assignment.objects.get(pk=made["a"].pk).status == AssignmentStatus.APPROVED


def test_override_an_approval_to_a_rejection_with_feedback(token_client, requester):
    _, made = reviewed_stage(requester)

    response = token_client.post(
        f"/api/v1/assignments/{made['a'].pk}/override/",
        {"decision": "reject", "reason": "copied", "feedback": "Please answer yourself."},
        format="json",
    )

    assert response.status_code == 200
    a = Assignment.objects.get(pk=made["a"].pk)
    assert (a.status, a.feedback, a.decided_by_id) == (
        "rejected",
        "Please answer yourself.",
        requester.pk,
    )


# --- Running the rules, quality, labels ----------------------------------------------------


def test_run_review_queues_the_task_after_commit(
    token_client, requester, django_capture_on_commit_callbacks
):
    stage = make_stage(items=1, per_hit=3, review_rules=RULES)
    Campaign.objects.filter(pk=stage.campaign_id).update(owner=requester)
    (hit,) = hits(stage)
    slow = submit(hit, worker("p"), {"choice": 0})
    fast = submit(hit, worker("q"), {"choice": 0}, seconds=3)

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = token_client.post(f"/api/v1/stages/{stage.pk}/review/", format="json")

    assert response.status_code == 202
    assert response.json() == {"stage": stage.pk, "queued": True}
    assert len(callbacks) == 1
    slow.refresh_from_db()
    fast.refresh_from_db()
    assert fast.status == "rejected"
    assert fast.decision_source == "rule:work_time"
    assert slow.status == "submitted"  # consensus needs three answers: held
    assert slow.review_details["review"]["decision"] == "hold"


def test_quality_numbers_of_a_stage(token_client, requester):
    stage, _ = reviewed_stage(requester)

    response = token_client.get(f"/api/v1/stages/{stage.pk}/quality/")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["stage"] == stage.pk
    assert (body["assignments"], body["approved"], body["rejected"], body["held"]) == (4, 1, 2, 1)
    assert body["approval_rate"] == pytest.approx(1 / 3)
    assert body["agreement"]["items"] == 2
    assert set(body["agreement"]) == {"alpha", "percent_agreement", "items", "annotators", "labels"}
    assert body["median_work_seconds"] == 60
    # $0.50 per assignment over a 60 s median: $30.00/h, above the $15.00 floor.
    assert (body["hourly_wage"], body["wage_floor"], body["below_wage_floor"]) == (
        "30.00",
        "15.00",
        False,
    )
    assert body["entity_agreement"] is None
    assert {w["worker"] for w in body["workers"]} == {
        w.pseudonym for w in Worker.objects.filter(assignments__hit__stage=stage)
    }
    assert "worker_id" not in body["workers"][0]


def test_final_labels_of_a_stage(token_client, requester):
    stage, _ = reviewed_stage(requester)

    response = token_client.get(f"/api/v1/stages/{stage.pk}/labels/")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["stage"] == stage.pk
    labels = {row["external_id"]: row["label"] for row in body["labels"]}
    # Item i0: a said 0 (b and c were rejected); item i1: lone (held, counts) said 1.
    assert labels == {"i0": "0", "i1": "1"} or labels == {"i0": 0, "i1": 1}
    assert body["discarded"] == []


# --- Entity-link review -----------------------------------------------------------------


def test_link_review_queue_lists_each_annotators_links(token_client, requester):
    item, annotations = link_review_item(requester, slug="links")

    response = token_client.get(f"/api/v1/campaigns/{item.stage.campaign.slug}/link-review/")

    assert response.status_code == 200, response.content
    (entry,) = response.json()
    assert entry["item"]["external_id"] == "topgun"
    assert entry["item"]["data"]["question"] == "Who starred in Top Gun?"
    assert entry["stage"] == item.stage_id
    assert [a["assignment_id"] for a in entry["annotations"]] == [a.pk for a in annotations]
    assert [a["links"][1]["qid"] for a in entry["annotations"]] == ["Q193048", None, "Q1"]
    filtered = token_client.get(
        f"/api/v1/campaigns/{item.stage.campaign.slug}/link-review/", {"stage": 999999}
    )
    assert filtered.status_code == 400


def test_decide_with_an_annotators_links(token_client, requester):
    item, annotations = link_review_item(requester, slug="links")

    response = token_client.post(
        f"/api/v1/link-review/{item.pk}/decide/",
        {"assignment": annotations[0].pk},
        format="json",
    )

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["status"], body["source"], body["decided_by"]) == ("decided", "requester", "alice")
    assert [(lk["text"], lk["qid"]) for lk in body["links"]] == [
        ("Tom Cruise", "Q37079"),
        ("Val Kilmer", "Q193048"),
    ]
    assert AgreedLink.objects.filter(item=item).count() == 2
    queue = token_client.get(f"/api/v1/campaigns/{item.stage.campaign.slug}/link-review/")
    assert queue.json() == []


def test_decide_with_links_given_and_bad_input(token_client, requester):
    item, annotations = link_review_item(requester, slug="links")
    url = f"/api/v1/link-review/{item.pk}/decide/"

    both = token_client.post(url, {"assignment": annotations[0].pk, "links": []}, format="json")
    neither = token_client.post(url, {}, format="json")
    stranger = token_client.post(url, {"assignment": 999999}, format="json")
    off_text = token_client.post(url, {"links": [{**TOM, "text": "Tom Hanks"}]}, format="json")
    given = token_client.post(url, {"links": [TOM, VAL_NIL]}, format="json")

    assert (both.status_code, neither.status_code, stranger.status_code) == (400, 400, 400)
    assert off_text.status_code == 400
    assert given.status_code == 200, given.content
    assert [lk["none"] for lk in given.json()["links"]] == [False, True]


# --- Who may do what -------------------------------------------------------------------

Ids = dict[str, Any]
ROUTES: dict[str, tuple[str, Callable[[Ids], str], Any]] = {
    "override": (
        "post",
        lambda i: f"/api/v1/assignments/{i['assignment']}/override/",
        {"decision": "approve", "reason": "x"},
    ),
    "stage-review": ("post", lambda i: f"/api/v1/stages/{i['stage']}/review/", {}),
    "stage-quality": ("get", lambda i: f"/api/v1/stages/{i['stage']}/quality/", None),
    "stage-labels": ("get", lambda i: f"/api/v1/stages/{i['stage']}/labels/", None),
    "link-review": ("get", lambda i: f"/api/v1/campaigns/{i['link_slug']}/link-review/", None),
    "link-decide": (
        "post",
        lambda i: f"/api/v1/link-review/{i['item']}/decide/",
        {"links": [TOM, VAL]},
    ),
}


@pytest.fixture
def bobs_work(other_requester) -> Ids:
    stage, made = reviewed_stage(other_requester)
    item, _ = link_review_item(other_requester, slug="bobs-links")
    return {
        "stage": stage.pk,
        "assignment": made["c"].pk,
        "item": item.pk,
        "link_slug": item.stage.campaign.slug,
    }


def _call(client: APIClient, name: str, ids: Ids):
    method, url, body = ROUTES[name]
    if body is None:
        return getattr(client, method)(url(ids))
    return getattr(client, method)(url(ids), body, format="json")


def _snapshot(ids: Ids) -> tuple:
    return (
        Assignment.objects.get(pk=ids["assignment"]).status,
        EntityLinkResolution.objects.get(item_id=ids["item"]).status,
    )


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_other_requesters_get_404(
    token_client, bobs_work, route, django_capture_on_commit_callbacks
):
    before = _snapshot(bobs_work)

    with django_capture_on_commit_callbacks() as callbacks:
        response = _call(token_client, route, bobs_work)

    assert response.status_code == 404, response.content
    assert _snapshot(bobs_work) == before
    assert callbacks == []


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_anonymous_gets_401(api_client, bobs_work, route):
    before = _snapshot(bobs_work)

    response = _call(api_client, route, bobs_work)

    assert response.status_code == 401
    assert _snapshot(bobs_work) == before


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_staff_reach_every_route(staff_client, bobs_work, route):
    response = _call(staff_client, route, bobs_work)
    assert response.status_code in {200, 202}, response.content


def test_link_review_queue_gives_each_id_its_label(token_client, requester):
    item, _annotations = link_review_item(requester, slug="links")
    # Val Kilmer from the Wikidata cache, Tom Cruise from the bundled offline index;
    # Q1 is in neither: an empty label, and no request to Wikidata.
    WikidataCacheEntry.objects.create(
        kind="entity",
        key="en:Q193048",
        response={"entity": {"id": "Q193048", "label": "Val Kilmer"}},
        fetched_at="2026-01-01T00:00:00Z",
        expires_at="2099-01-01T00:00:00Z",
    )

    response = token_client.get(f"/api/v1/campaigns/{item.stage.campaign.slug}/link-review/")

    (entry,) = response.json()
    labels = [[link["label"] for link in a["links"]] for a in entry["annotations"]]
    assert labels == [["Tom Cruise", "Val Kilmer"], ["Tom Cruise", ""], ["Tom Cruise", ""]]
