"""The worker's search box asks Wikidata itself (``wbsearchentities``, through the
linking client and its cache) when ``LINKING_LIVE_SEARCH`` allows it, beside the
offline index; off in the embedded default; a slow Wikidata costs one timeout and
the page is told it searched the offline list only (issue 36, point 6)."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from campaigns.platforms.publishing import campaign_start
from linking.client import live_search_allowed
from linking.models import WikidataCacheEntry
from linking.selectors import LIVE_DOWN_KEY, worker_search
from linking.wikidata import reset_host_gates
from tests.linking.conftest import accept, joined_client
from tests.linking.fake_wikidata import SAMPLE_ITEMS, FakeWikidata

pytestmark = pytest.mark.django_db

AGENT = "qaportal-tests/1.0 (https://example.org/qaportal; tests@example.org)"
URL = "/work/suggest/"
ITEM = {"external_id": "x", "question": "Who starred in Top Gun?", "answer": "Tom Cruise"}
# A common entity the offline (Mintaka) index does not hold.
MISSING = {
    "Q7259": {
        "label": "Ada Lovelace",
        "description": "English mathematician (1815-1852)",
        "aliases": ["Augusta Ada King"],
        "instance_of": ["Q5"],
    }
}


@pytest.fixture
def working(linking_stage):
    stage = linking_stage(items=[ITEM], escalation_rule={})
    campaign = campaign_start(campaign=stage.campaign, to_state="live")
    client = joined_client(campaign)
    return client, accept(client, stage)


@pytest.fixture
def fake(settings):
    reset_host_gates()
    with FakeWikidata(items={**SAMPLE_ITEMS, **MISSING}) as server:
        settings.WIKIDATA_OFFLINE = True
        settings.WIKIDATA_API_URL = server.url
        settings.WIKIDATA_USER_AGENT = AGENT
        settings.LINKING_LIVE_SEARCH = True
        settings.LINKING_LIVE_SEARCH_TIMEOUT = 2
        yield server
    reset_host_gates()


def test_off_in_the_embedded_default(working, settings):
    client, assignment = working
    assert settings.WIKIDATA_OFFLINE
    assert not settings.LINKING_LIVE_SEARCH
    assert not live_search_allowed()
    data = client.get(URL, {"a": assignment.pk, "q": "Ada Lovelace"}).json()
    assert data == {"query": "Ada Lovelace", "candidates": [], "wikidata": False}


def test_needs_a_user_agent_even_when_switched_on(settings):
    settings.LINKING_LIVE_SEARCH = True
    settings.WIKIDATA_USER_AGENT = ""
    assert not live_search_allowed()


def test_finds_a_common_entity_missing_from_the_offline_index(working, fake):
    client, assignment = working
    response = client.get(URL, {"a": assignment.pk, "q": "ada lovelace"})
    data = response.json()
    assert data["wikidata"] is True
    assert data["candidates"] == [
        {"id": "Q7259", "label": "Ada Lovelace", "description": "English mathematician (1815-1852)"}
    ]
    (call,) = fake.calls("wbsearchentities")
    assert call.params["search"] == "ada lovelace"
    assert call.params["type"] == "item"
    assert call.headers["User-Agent"].startswith(AGENT)
    assert "maxlag" not in call.params  # a person is waiting: no maxlag
    assert WikidataCacheEntry.objects.filter(kind="search").count() == 1
    # Cache first: the same (normalised) query asks nobody again.
    again = client.get(URL, {"a": assignment.pk, "q": "Ada  Lovelace"}).json()
    assert again["candidates"] == data["candidates"]
    assert again["wikidata"] is True
    assert len(fake.calls("wbsearchentities")) == 1


def test_offline_hits_come_first_and_each_id_once(fake):
    hits, live = worker_search(query="Tom Cruise")
    assert live is True
    ids = [h["id"] for h in hits]
    assert ids[0] == "Q37079"
    assert ids.count("Q37079") == 1
    # The offline index's description (which questions name it) is the one kept.
    assert "named in" in hits[0]["description"]


def test_a_slow_wikidata_costs_one_timeout_then_the_offline_list(working, fake, settings):
    client, assignment = working
    settings.LINKING_LIVE_SEARCH_TIMEOUT = 0.2
    fake.latency = 1.0
    response = client.get(URL, {"a": assignment.pk, "q": "tom cruise"})
    data = response.json()
    assert data["wikidata"] is False
    assert data["partial"] is True
    assert [c["id"] for c in data["candidates"]][:1] == ["Q37079"]  # the offline index's
    assert cache.get(LIVE_DOWN_KEY)
    # Live search rests a while: the next query does not wait on Wikidata again.
    client.get(URL, {"a": assignment.pk, "q": "ada lovelace"})
    assert len(fake.calls("wbsearchentities")) == 1
    cache.delete(LIVE_DOWN_KEY)
    fake.latency = 0.0
    later = client.get(URL, {"a": assignment.pk, "q": "ada lovelace"}).json()
    assert later["wikidata"] is True
    assert later["candidates"][0]["id"] == "Q7259"


def test_a_live_source_searches_with_the_short_timeout(working, fake, settings):
    client, assignment = working
    settings.WIKIDATA_OFFLINE = False
    settings.LINKING_LIVE_SEARCH_TIMEOUT = 0.2
    fake.latency = 1.0
    data = client.get(URL, {"a": assignment.pk, "q": "top gun"}).json()
    assert data == {
        "query": "top gun",
        "candidates": [],
        "unavailable": True,
        "wikidata": False,
        "partial": True,
    }
    assert len(fake.calls("wbsearchentities")) == 1  # one try, no retries
