"""The as-you-type suggestion endpoint: who may call it, cache first, JSON shape, rate."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

from campaigns.platforms.publishing import campaign_start
from linking.selectors import suggestion_cache_key
from linking.wikidata import WikidataUnavailable
from tests.linking.conftest import accept, joined_client, link_form

pytestmark = pytest.mark.django_db

ITEM = {"external_id": "x", "question": "Who starred in Top Gun?", "answer": "Tom Cruise"}
URL = "/work/suggest/"


@pytest.fixture
def working(linking_stage):
    """A worker's browser holding an accepted assignment on a linking stage."""
    stage = linking_stage(items=[ITEM], escalation_rule={})
    campaign = campaign_start(campaign=stage.campaign, to_state="live")
    client = joined_client(campaign)
    return client, accept(client, stage), campaign, stage


def test_the_route_is_under_the_worker_pages():
    assert reverse("worker:suggest") == URL


def test_answers_ranked_candidates_as_json(working):
    client, assignment, _, _ = working
    response = client.get(URL, {"a": assignment.pk, "q": "tom cruise"})
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    data = response.json()
    assert data["query"] == "tom cruise"
    assert data["candidates"][0] == {
        "id": "Q37079",
        "label": "Tom Cruise",
        "description": "Movies · named in “What was Tom Cruise's second movie?”",
    }
    assert all(set(c) == {"id", "label", "description"} for c in data["candidates"])
    assert client.get(URL, {"a": assignment.pk, "q": "  "}).json()["candidates"] == []


def test_only_the_worker_holding_an_open_linking_assignment(working):
    client, assignment, campaign, _stage = working
    assert Client().get(URL, {"a": assignment.pk, "q": "tom"}).status_code == 403
    other = joined_client(campaign)  # joined, but holds no such assignment
    assert other.get(URL, {"a": assignment.pk, "q": "tom"}).status_code == 403
    assert client.get(URL, {"a": "nope", "q": "tom"}).status_code == 403
    assert client.post(URL, {"a": assignment.pk, "q": "tom"}).status_code == 405
    # Once submitted, the assignment no longer opens suggestions.
    submitted = client.post(
        reverse("worker:assignment", kwargs={"assignment_id": assignment.pk}),
        link_form([(0, 10, "Tom Cruise", "Q37079")]),
    )
    assert submitted.status_code == 302
    cache.clear()  # the browser's hold is remembered for AUTH_TTL seconds
    assert client.get(URL, {"a": assignment.pk, "q": "tom"}).status_code == 403


def test_cache_first(working, monkeypatch):
    client, assignment, _, _ = working
    first = client.get(URL, {"a": assignment.pk, "q": "Top Gun"}).json()

    def no_source(**kwargs):
        raise AssertionError("the candidate source was asked again")

    monkeypatch.setattr("linking.selectors.candidate_source", no_source)
    again = client.get(URL, {"a": assignment.pk, "q": "top  gun"}).json()  # same normalised
    assert again["candidates"] == first["candidates"]
    assert first["candidates"][0]["id"] == "Q110138"


def test_wikidata_down_gives_an_empty_list_not_an_error(working, monkeypatch):
    client, assignment, _, _ = working

    class Down:
        def search(self, *args, **kwargs):
            raise WikidataUnavailable("HTTP 429 after 2 attempts")

    monkeypatch.setattr("linking.selectors.candidate_source", lambda **kw: Down())
    response = client.get(URL, {"a": assignment.pk, "q": "anything new"})
    assert response.status_code == 200
    assert response.json() == {
        "query": "anything new",
        "candidates": [],
        "unavailable": True,
        "wikidata": False,
    }


def test_rate_limited_per_worker(working, settings, monkeypatch):
    client, assignment, _, _ = working
    settings.LINKING_SUGGEST_RATE_PER_MINUTE = 3
    # The limit counts per clock minute: the test's calls must not straddle two.
    monkeypatch.setattr("frontend.worker.suggest.time.time", lambda: 1_800_000_010.0)
    codes = [client.get(URL, {"a": assignment.pk, "q": f"t{n}"}).status_code for n in range(4)]
    assert codes == [200, 200, 200, 429]
    assert client.get(URL, {"a": assignment.pk, "q": "x"})["Retry-After"] == "30"


def test_cache_key_normalises_the_query():
    assert suggestion_cache_key(query="Top  Gun") == suggestion_cache_key(query="top gun")
    assert suggestion_cache_key(query="top gun") != suggestion_cache_key(query="top gun 2")
