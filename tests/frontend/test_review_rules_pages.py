"""The requester's pages for the review automation: rule verdicts and holds on the
review page, the status filter, overriding a decision, running a stage's rules,
quality numbers on the campaign page and the entity-link review queue."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from campaigns.models import Assignment, AssignmentStatus, Campaign, Worker
from linking.models import AgreedLink, EntityLinkResolution, ResolutionStatus, WikidataCacheEntry
from tests.campaigns.api.review_builders import (
    RULES,
    TOM,
    VAL_NIL,
    link_review_item,
    reviewed_stage,
)
from tests.validation.db_helpers import hits, make_stage, submit, worker

pytestmark = pytest.mark.django_db


def _messages(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def _url(name: str, campaign: Campaign, **kwargs: Any) -> str:
    return reverse(f"frontend:{name}", kwargs={"slug": campaign.slug, **kwargs})


# --- Verdicts, holds, the status filter -------------------------------------------------


def test_held_assignment_shows_the_hold_and_the_rule_numbers(alice_client, requester):
    stage, made = reviewed_stage(requester)

    response = alice_client.get(_url("campaign-review", stage.campaign))

    assert response.status_code == 200
    rows = {r["assignment"].pk: r for r in response.context["rows"]}
    assert list(rows) == [made["lone"].pk]  # the only submitted one
    row = rows[made["lone"].pk]
    assert row["held"] is True
    html = response.content.decode()
    assert "Held by a rule:" in html
    assert row["review"]["reason"] in html
    consensus = next(v for v in row["review"]["rules"] if v["rule"] == "consensus")
    assert consensus["decision"] == "hold"
    for number in consensus["numbers"]:
        assert f"{number['name']}: {number['value']}" in html
    held = alice_client.get(_url("campaign-review", stage.campaign), {"status": "held"})
    assert [r["assignment"].pk for r in held.context["rows"]] == [made["lone"].pk]
    assert "1 submitted assignment held by a rule" in held.content.decode()


def test_a_held_assignment_is_approved_normally(alice_client, requester):
    stage, made = reviewed_stage(requester)

    response = alice_client.post(
        _url("review-decide", stage.campaign, assignment_id=made["lone"].pk),
        {"decision": "approve", "status": "held"},
    )

    assert response.status_code == 302
    assert "status=held" in response["Location"]
    lone = Assignment.objects.get(pk=made["lone"].pk)
    assert (lone.status, lone.decided_by) == (AssignmentStatus.APPROVED, requester)


def test_decided_lists_show_rule_decisions_newest_first(alice_client, requester):
    stage, made = reviewed_stage(requester)
    url = _url("campaign-review", stage.campaign)

    rejected = alice_client.get(url, {"status": "rejected"})
    approved = alice_client.get(url, {"status": "approved"})

    assert {r["assignment"].pk for r in rejected.context["rows"]} == {
        made["b"].pk,
        made["c"].pk,
    }
    html = rejected.content.decode()
    assert "Rejected by rule:consensus" in html
    assert "work_time: worked 5s &lt; floor 20s" in html
    assert "Override: approve" in html
    assert 'id="bulk-review"' not in html  # bulk decides submitted work only
    assert [r["assignment"].pk for r in approved.context["rows"]] == [made["a"].pk]
    assert "Override: reject" in approved.content.decode()
    assert alice_client.get(url, {"status": "maybe"}).status_code == 404


def test_override_turns_a_rule_rejection_into_an_approval(alice_client, requester):
    stage, made = reviewed_stage(requester)
    url = _url("review-override", stage.campaign, assignment_id=made["c"].pk)

    response = alice_client.post(
        url, {"decision": "approve", "reason": "option C is right", "status": "rejected"}
    )

    assert response.status_code == 302
    assert "status=rejected" in response["Location"]
    assert any("is now approved (was rejected)" in m for m in _messages(response))
    c = Assignment.objects.get(pk=made["c"].pk)
    assert (c.status, c.decided_by, c.decision_source) == ("approved", requester, "requester")
    assert c.review_details["overrides"][0]["replaced"]["source"] == "rule:consensus"
    w = Worker.objects.get(pk=c.worker_id)
    assert (w.approved_count, w.rejected_count) == (1, 0)
    page = alice_client.get(_url("campaign-review", stage.campaign), {"status": "approved"})
    assert "Overridden to <strong>approve</strong> (was rejected, rule:consensus)" in (
        page.content.decode()
    )


def test_override_needs_a_reason(alice_client, requester):
    stage, made = reviewed_stage(requester)

    response = alice_client.post(
        _url("review-override", stage.campaign, assignment_id=made["a"].pk),
        {"decision": "reject", "reason": "  "},
    )

    assert any("Say why you override" in m for m in _messages(response))
    assert Assignment.objects.get(pk=made["a"].pk).status == AssignmentStatus.APPROVED


def test_override_an_approval_keeps_the_feedback(alice_client, requester):
    stage, made = reviewed_stage(requester)

    alice_client.post(
        _url("review-override", stage.campaign, assignment_id=made["a"].pk),
        {"decision": "reject", "reason": "copied", "feedback": "Answer yourself."},
    )

    a = Assignment.objects.get(pk=made["a"].pk)
    assert (a.status, a.feedback, a.decision_reason) == ("rejected", "Answer yourself.", "copied")


def test_plain_decision_on_a_rule_decision_points_to_the_override(alice_client, requester):
    stage, made = reviewed_stage(requester)

    response = alice_client.post(
        _url("review-decide", stage.campaign, assignment_id=made["c"].pk),
        {"decision": "approve"},
        follow=True,
    )

    assert "was already rejected by rule:consensus" in response.content.decode()
    assert "Override" in response.content.decode()
    assert Assignment.objects.get(pk=made["c"].pk).status == AssignmentStatus.REJECTED


# --- Running the rules ------------------------------------------------------------------


def test_run_review_button_queues_the_stage_review(
    alice_client, requester, django_capture_on_commit_callbacks
):
    stage = make_stage(items=1, per_hit=3, review_rules=RULES)
    Campaign.objects.filter(pk=stage.campaign_id).update(owner=requester)
    (hit,) = hits(stage)
    fast = submit(hit, worker("fast"), {"choice": 0}, seconds=3)
    detail = alice_client.get(_url("campaign-detail", stage.campaign)).content.decode()
    run_url = _url("stage-review-run", stage.campaign, stage_id=stage.pk)
    assert f'action="{run_url}"' in detail

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = alice_client.post(run_url)

    assert response.status_code == 302
    assert response["Location"].endswith(f"#stage-{stage.pk}")
    assert any("review queued" in m for m in _messages(response))
    assert len(callbacks) == 1
    fast.refresh_from_db()
    assert (fast.status, fast.decision_source) == ("rejected", "rule:work_time")


# --- Quality numbers --------------------------------------------------------------------


def test_campaign_page_shows_quality_per_stage(alice_client, requester):
    stage, _ = reviewed_stage(requester)
    # The in-house team is paid the reward some other way: its wage is shown (issue 36).
    stage.show_reward_to_local_workers = True
    stage.save(update_fields=["show_reward_to_local_workers"])

    response = alice_client.get(_url("campaign-quality", stage.campaign))

    assert response.status_code == 200
    (row,) = response.context["quality_rows"]
    assert row["stage"].pk == stage.pk
    assert row["entity"] is None
    html = response.content.decode()
    for heading in (
        "Krippendorff",
        "Percent agreement",
        "Gold accuracy",
        "Approval rate",
        "Median work time",
        "Effective hourly wage",
    ):
        assert heading in html
    assert "33 % (1 approved, 2 rejected)" in html
    assert "60 s" in html
    assert "$30.00/h" in html or "30.00" in html
    assert "below the" not in html


def test_wage_below_the_floor_is_flagged(alice_client, requester):
    stage, _ = reviewed_stage(requester)
    stage.reward = stage.reward / 10  # $0.05 over a minute: $3.00/h
    stage.show_reward_to_local_workers = True  # paid some other way: the wage shows
    stage.save(update_fields=["reward", "show_reward_to_local_workers"])

    html = alice_client.get(_url("campaign-quality", stage.campaign)).content.decode()

    assert "below the" in html
    assert "15.00" in html


def test_linking_stage_shows_agreement_after_two_and_three(alice_client, requester):
    item, _ = link_review_item(requester, slug="links")

    response = alice_client.get(_url("campaign-quality", item.stage.campaign))

    (row,) = response.context["quality_rows"]
    assert row["entity"] is not None
    html = response.content.decode()
    assert "Entity agreement after 2 annotators" in html
    assert "Entity agreement after 3 annotators" in html


def test_campaign_page_queries_grow_per_stage_not_per_assignment(alice_client, requester):
    stage, _ = reviewed_stage(requester)
    url = _url("campaign-quality", stage.campaign)
    with CaptureQueriesContext(connection) as few:
        alice_client.get(url)
    _, h2 = hits(stage)
    for n in range(6):
        submit(h2, worker(f"more-{n}"), {"choice": n % 3})

    with CaptureQueriesContext(connection) as many:
        alice_client.get(url)

    assert len(many) == len(few)


# --- Entity-link review -----------------------------------------------------------------


def test_review_page_lists_items_to_settle_with_labels(alice_client, requester):
    item, annotations = link_review_item(requester, slug="links")
    WikidataCacheEntry.objects.create(
        kind="entity",
        key="en:Q37079",
        response={"entity": {"id": "Q37079", "label": "Tom Cruise (actor)"}},
        fetched_at="2026-01-01T00:00:00Z",
        expires_at="2099-01-01T00:00:00Z",
    )

    response = alice_client.get(_url("campaign-review", item.stage.campaign))

    assert response.status_code == 200
    (row,) = response.context["link_review"]
    assert row["item"].pk == item.pk
    html = response.content.decode()
    assert "Entity links to decide" in html
    assert "Who starred in Top Gun?" in html
    assert "Tom Cruise and Val Kilmer" in html
    assert "Tom Cruise (actor)" in html
    assert "not in Wikidata" in html
    for a in annotations:
        assert a.worker.pseudonym in html
        assert f'value="{a.pk}"' in html


def test_pick_an_annotators_links(alice_client, requester):
    item, annotations = link_review_item(requester, slug="links")
    url = _url("link-review-decide", item.stage.campaign, item_id=item.pk)

    response = alice_client.post(url, {"choice": str(annotations[1].pk)})

    assert response.status_code == 302
    assert any("decided with 2 links" in m for m in _messages(response))
    resolution = EntityLinkResolution.objects.get(item=item)
    assert (resolution.status, resolution.decided_by) == (ResolutionStatus.DECIDED, requester)
    assert [lk["qid"] for lk in resolution.links or []] == ["Q37079", None]
    page = alice_client.get(_url("campaign-review", item.stage.campaign))
    assert page.context["link_review"] == []


def test_enter_links_by_hand_and_refusals(alice_client, requester):
    item, _ = link_review_item(requester, slug="links")
    url = _url("link-review-decide", item.stage.campaign, item_id=item.pk)

    bad_json = alice_client.post(url, {"choice": "custom", "links": "[{"})
    off_text = alice_client.post(
        url, {"choice": "custom", "links": json.dumps([{**TOM, "text": "Tom Hanks"}])}
    )
    nothing = alice_client.post(url, {})
    stranger = alice_client.post(url, {"choice": "999999"})

    assert any("not valid JSON" in m for m in _messages(bad_json))
    assert any("not valid" in m for m in _messages(off_text))
    assert any("pick an annotator" in m for m in _messages(nothing))
    assert any("no such annotation" in m for m in _messages(stranger))
    assert EntityLinkResolution.objects.get(item=item).status == ResolutionStatus.REVIEW

    done = alice_client.post(url, {"choice": "custom", "links": json.dumps([TOM, VAL_NIL])})

    assert any("decided with 2 links" in m for m in _messages(done))
    assert AgreedLink.objects.filter(item=item).count() == 2


# --- Who may see and act -----------------------------------------------------------------


@pytest.fixture
def bobs_work(other_requester) -> dict[str, Any]:
    stage, made = reviewed_stage(other_requester)
    item, annotations = link_review_item(other_requester, slug="bobs-links")
    return {
        "campaign": stage.campaign,
        "link_campaign": item.stage.campaign,
        "stage": stage.pk,
        "assignment": made["c"].pk,
        "item": item.pk,
        "annotation": annotations[0].pk,
    }


def _requests(ids: dict[str, Any]) -> dict[str, tuple[str, str, dict]]:
    campaign, link_campaign = ids["campaign"], ids["link_campaign"]
    return {
        "review-decided": ("get", _url("campaign-review", campaign) + "?status=rejected", {}),
        "override": (
            "post",
            _url("review-override", campaign, assignment_id=ids["assignment"]),
            {"decision": "approve", "reason": "x"},
        ),
        "run-rules": ("post", _url("stage-review-run", campaign, stage_id=ids["stage"]), {}),
        "detail-quality": ("get", _url("campaign-detail", campaign), {}),
        "link-review": ("get", _url("campaign-review", link_campaign), {}),
        "link-decide": (
            "post",
            _url("link-review-decide", link_campaign, item_id=ids["item"]),
            {"choice": str(ids["annotation"])},
        ),
    }


ROUTES = ["review-decided", "override", "run-rules", "detail-quality", "link-review"]
ROUTES += ["link-decide"]


def _untouched(ids: dict[str, Any]) -> tuple:
    return (
        Assignment.objects.get(pk=ids["assignment"]).status,
        EntityLinkResolution.objects.get(item_id=ids["item"]).status,
    )


@pytest.mark.parametrize("name", ROUTES)
def test_another_requester_gets_404(
    alice_client, bobs_work, name, django_capture_on_commit_callbacks
):
    before = _untouched(bobs_work)
    method, url, data = _requests(bobs_work)[name]

    with django_capture_on_commit_callbacks() as callbacks:
        response = getattr(alice_client, method)(url, data)

    assert response.status_code == 404
    assert _untouched(bobs_work) == before == ("rejected", "review")
    assert callbacks == []


@pytest.mark.parametrize("name", ROUTES)
def test_anonymous_is_sent_to_login(client, bobs_work, name):
    before = _untouched(bobs_work)
    method, url, data = _requests(bobs_work)[name]

    response = getattr(client, method)(url, data)

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))
    assert _untouched(bobs_work) == before


def test_a_collaborator_may_override_and_settle_links(bobs_work, requester):
    from django.test import Client

    bobs_work["campaign"].collaborators.add(requester)
    bobs_work["link_campaign"].collaborators.add(requester)
    client = Client()
    client.force_login(requester)

    for name in ("override", "link-decide"):
        method, url, data = _requests(bobs_work)[name]
        assert getattr(client, method)(url, data).status_code == 302

    assert Assignment.objects.get(pk=bobs_work["assignment"]).decided_by == requester
    assert EntityLinkResolution.objects.get(item_id=bobs_work["item"]).decided_by == requester
