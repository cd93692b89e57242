"""The review page of a linking stage (issue 36, point 4): the summary pointing to the
links to decide, linking submissions as highlighted text with ids and labels, decisions
answered as JSON to the page's script and as a redirect to the same place to a plain
form, "Enter links yourself" as the worker page's linking block, and the requester's
suggestion search."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

from campaigns.models import Assignment, AssignmentStatus, Campaign
from campaigns.tasktypes import task_type_get
from frontend.views.link_review import answer_qids, link_editor, linked_answer, review_anchor
from linking.models import EntityLinkResolution, ResolutionStatus, WikidataCacheEntry
from linking.wikidata import WikidataError
from tests.campaigns.api.review_builders import (
    TOM,
    VAL,
    VAL_NIL,
    link_review_item,
    reviewed_stage,
)

pytestmark = pytest.mark.django_db

JSON = {"HTTP_ACCEPT": "application/json"}


def _url(name: str, campaign: Campaign, **kwargs: Any) -> str:
    return reverse(f"frontend:{name}", kwargs={"slug": campaign.slug, **kwargs})


def _kilmer_label() -> None:
    WikidataCacheEntry.objects.create(
        kind="entity",
        key="en:Q193048",
        response={"entity": {"id": "Q193048", "label": "Val Kilmer"}},
        fetched_at="2026-01-01T00:00:00Z",
        expires_at="2099-01-01T00:00:00Z",
    )


# --- The page ---------------------------------------------------------------------------


def test_linking_stage_summary_points_to_the_links_to_decide(alice_client, requester):
    item, annotations = link_review_item(requester, slug="links")
    campaign = item.stage.campaign

    response = alice_client.get(_url("campaign-review", campaign), {"stage": item.stage_id})

    html = response.content.decode()
    summary = html[html.index('id="review-summary"') :]
    summary = summary[: summary.index("</nav>")]
    assert 'href="#link-review"' in summary
    assert "1 entity-link item to decide" in summary
    assert "3 on this page are linking submissions" in summary
    # The summary comes before the first submission, the links far below.
    assert html.index('id="review-summary"') < html.index(f'id="assignment-{annotations[0].pk}"')
    assert 'id="link-review"' in html
    assert response.context["linking_rows"] == 3
    # "Enter links yourself" is the worker page's block, its comments not shown.
    assert f'data-tt-prefix="items/review-{item.pk}/spans"' in html
    assert "{#" not in html
    assert "{%" not in html


def test_linking_submissions_read_as_highlighted_text(alice_client, requester):
    item, annotations = link_review_item(requester, slug="links")
    _kilmer_label()

    response = alice_client.get(_url("campaign-review", item.stage.campaign))

    rows = {row["assignment"].pk: row for row in response.context["rows"]}
    (block,) = rows[annotations[0].pk]["linked"]
    assert block["text_label"] == "answer"
    assert block["question"] == "Who starred in Top Gun?"
    assert [(s["text"], (s["link"] or {}).get("qid")) for s in block["segments"]] == [
        ("Tom Cruise", "Q37079"),
        (" and ", None),
        ("Val Kilmer", "Q193048"),
    ]
    # Labels from the Wikidata cache and the bundled offline index, in one look-up.
    assert [link["label"] for link in block["shown"]] == ["Tom Cruise", "Val Kilmer"]
    html = response.content.decode()
    assert "Tom Cruise · Q37079" in html
    assert "Val Kilmer · Q193048" in html
    # The worker's page is not drawn a second time for a linking submission.
    row_html = html[html.index(f'id="assignment-{annotations[0].pk}"') :]
    row_html = row_html[: row_html.index("</li>")]
    assert "As the worker's page shows it" not in row_html
    assert '<mark class="link-hl"' in row_html


def test_other_stages_keep_the_answer_outline(alice_client, requester):
    stage, _made = reviewed_stage(requester)
    response = alice_client.get(_url("campaign-review", stage.campaign), {"status": "held"})
    assert all(row["linked"] is None for row in response.context["rows"])
    assert 'id="review-summary"' not in response.content.decode()


def test_linked_answer_and_qids_are_pure_reads():
    task_type = task_type_get("answer_entity_linking")
    items = [{"id": 7, "external_id": "x", "data": {"question": "Q?", "answer": "Tom Cruise"}}]
    answers = {"items": [{"external_id": "x", "links": [TOM]}]}
    assert answer_qids(answers) == {"Q37079"}
    assert answer_qids({"links": [VAL_NIL]}) == set()
    (block,) = linked_answer(
        task_type=task_type, items=items, answers=answers, labels={"Q37079": "Tom"}
    )
    assert block["shown"][0]["label"] == "Tom"
    assert block["segments"] == [{"text": "Tom Cruise", "link": block["shown"][0]}]
    (missing,) = linked_answer(task_type=task_type, items=items, answers={"items": []}, labels={})
    assert (missing["answered"], missing["shown"]) == (False, [])


def test_the_link_editor_starts_from_the_first_annotator(requester):
    item, _ = link_review_item(requester, slug="links")
    text = "Tom Cruise and Val Kilmer"
    editor = link_editor(item=item, text=text, given=[[VAL], [TOM, VAL_NIL]])
    assert editor["index"] == f"review-{item.pk}"
    assert [(r["text"], r["qid"].value, r["none"].value) for r in editor["rows"]] == [
        ("Tom Cruise", "", False),  # only the second annotator marked it
        ("Val Kilmer", "Q193048", False),
    ]
    assert editor["rows"][0]["qid"].name == f"items/review-{item.pk}/spans/0/qid"
    nil_first = link_editor(item=item, text=text, given=[[VAL_NIL]])
    assert [(r["qid"].value, r["none"].value) for r in nil_first["rows"]] == [("", True)]
    # Offsets outside the text are left out.
    assert link_editor(item=item, text="Tom", given=[[VAL]])["rows"] == []


def test_review_anchor_takes_only_element_ids():
    assert review_anchor("assignment-12", "x") == "assignment-12"
    for bad in ("", "12", "a b", 'x"><script>', None, "a" * 80, "https://evil"):
        assert review_anchor(bad, "fallback") == "fallback"


# --- Decisions in place -----------------------------------------------------------------


def test_decide_answers_json_to_the_script(alice_client, requester):
    item, annotations = link_review_item(requester, slug="links")
    first, second, _third = annotations
    url = _url("review-decide", item.stage.campaign, assignment_id=first.pk)

    done = alice_client.post(url, {"decision": "approve"}, **JSON)

    assert done.status_code == 200
    assert done.json() == {
        "ok": True,
        "outcome": "decided",
        "status": "approved",
        "message": f"Assignment #{first.pk} approved.",
    }
    again = alice_client.post(url, {"decision": "reject", "feedback": "no"}, **JSON)
    assert again.status_code == 409
    assert (again.json()["outcome"], again.json()["status"]) == ("already", "approved")
    assert "already approved" in again.json()["message"]

    url2 = _url("review-decide", item.stage.campaign, assignment_id=second.pk)
    refused = alice_client.post(url2, {"decision": "reject", "feedback": "  "}, **JSON)
    assert refused.status_code == 400
    assert refused.json()["outcome"] == "invalid"
    assert "Say why you reject" in refused.json()["message"]
    assert Assignment.objects.get(pk=second.pk).status == AssignmentStatus.SUBMITTED


def test_plain_decision_comes_back_at_the_next_row(alice_client, requester):
    item, annotations = link_review_item(requester, slug="links")
    first, second, _third = annotations
    campaign = item.stage.campaign
    url = _url("review-decide", campaign, assignment_id=first.pk)

    done = alice_client.post(
        url, {"decision": "approve", "stage": item.stage_id, "next": f"assignment-{second.pk}"}
    )

    assert done.status_code == 302
    assert done["Location"] == (
        f"{_url('campaign-review', campaign)}?stage={item.stage_id}#assignment-{second.pk}"
    )
    # A refusal comes back at the row itself, whatever ``next`` says.
    url2 = _url("review-decide", campaign, assignment_id=second.pk)
    refused = alice_client.post(url2, {"decision": "reject", "next": "assignment-1"})
    assert refused["Location"].endswith(f"#assignment-{second.pk}")
    # A ``next`` that is no element id is not followed.
    odd = alice_client.post(url2, {"decision": "approve", "next": "//evil.example/"})
    assert odd["Location"] == f"{_url('campaign-review', campaign)}#assignment-{second.pk}"


def test_page_gives_each_form_the_row_after_it(alice_client, requester):
    item, annotations = link_review_item(requester, slug="links")
    response = alice_client.get(_url("campaign-review", item.stage.campaign))
    rows = response.context["rows"]
    assert [row["next_anchor"] for row in rows] == [
        f"assignment-{annotations[1].pk}",
        f"assignment-{annotations[2].pk}",
        "review-queue",
    ]
    assert response.context["link_review"][0]["next_anchor"] == "link-review"
    assert 'name="next" value="link-review"' in response.content.decode()


def test_plain_link_decision_keeps_the_stage_and_the_place(alice_client, requester):
    item, annotations = link_review_item(requester, slug="links")
    campaign = item.stage.campaign
    url = _url("link-review-decide", campaign, item_id=item.pk)

    done = alice_client.post(
        url,
        {
            "choice": "custom",
            "links": json.dumps([TOM, VAL]),
            "stage": item.stage_id,
            "next": "link-review",
        },
    )

    assert (
        done["Location"] == f"{_url('campaign-review', campaign)}?stage={item.stage_id}#link-review"
    )
    resolution = EntityLinkResolution.objects.get(item=item)
    assert resolution.status == ResolutionStatus.DECIDED
    as_json = alice_client.post(url, {"choice": str(annotations[1].pk)}, **JSON)
    assert as_json.json()["ok"] is True
    # The editor's own fields travel with the form and change nothing.
    extra = alice_client.post(
        url,
        {
            "choice": "custom",
            "links": json.dumps([TOM]),
            f"items/review-{item.pk}/spans/0/qid": "Q1",
        },
        **JSON,
    )
    assert extra.json()["message"].endswith("decided with 1 link.")
    resolution.refresh_from_db()
    assert [lk["qid"] for lk in resolution.links or []] == ["Q37079"]


# --- Suggestions for the requester ------------------------------------------------------


def test_suggestions_come_from_the_offline_index(alice_client, requester):
    item, _ = link_review_item(requester, slug="links")
    url = _url("link-review-suggest", item.stage.campaign)

    response = alice_client.get(url, {"q": "Tom  Cruise"})

    assert response.status_code == 200
    body = response.json()
    assert body["query"] == "Tom Cruise"
    assert body["candidates"][0]["id"] == "Q37079"
    assert body["candidates"][0]["label"] == "Tom Cruise"
    assert alice_client.get(url, {"q": ""}).json()["candidates"] == []


def test_suggestions_only_for_a_campaign_one_may_see(requester, other_requester, bob_client):
    item, _ = link_review_item(requester, slug="links")
    url = _url("link-review-suggest", item.stage.campaign)
    assert bob_client.get(url, {"q": "Tom"}).status_code == 404
    anonymous = Client().get(url, {"q": "Tom"})
    assert anonymous.status_code == 302
    assert "/accounts/login/" in anonymous["Location"]
    item.stage.campaign.collaborators.add(other_requester)
    assert bob_client.get(url, {"q": "Tom"}).status_code == 200


def test_suggestions_have_a_rate(alice_client, requester, settings):
    settings.LINKING_SUGGEST_RATE_PER_MINUTE = 2
    cache.clear()
    item, _ = link_review_item(requester, slug="links")
    url = _url("link-review-suggest", item.stage.campaign)
    codes = [alice_client.get(url, {"q": "Tom"}).status_code for _ in range(3)]
    assert codes == [200, 200, 429]


def test_suggestions_say_when_wikidata_cannot_be_reached(alice_client, requester, monkeypatch):
    item, _ = link_review_item(requester, slug="links")

    def down(**_kwargs: Any) -> None:
        raise WikidataError("timed out")

    monkeypatch.setattr("frontend.views.link_review.suggestions_search", down)
    response = alice_client.get(_url("link-review-suggest", item.stage.campaign), {"q": "Tom"})
    assert response.status_code == 200
    assert response.json() == {"query": "Tom", "candidates": [], "unavailable": True}


def test_decided_linking_work_reads_the_same_way(alice_client, requester):
    item, annotations = link_review_item(requester, slug="links")
    url = _url("review-decide", item.stage.campaign, assignment_id=annotations[0].pk)
    alice_client.post(url, {"decision": "approve"}, **JSON)

    response = alice_client.get(
        _url("campaign-review", item.stage.campaign), {"status": "approved"}
    )

    (row,) = response.context["rows"]
    assert [s["text"] for s in row["linked"][0]["segments"]] == [
        "Tom Cruise",
        " and ",
        "Val Kilmer",
    ]
    assert "Override: reject" in response.content.decode()
