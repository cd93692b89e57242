"""The live Wikidata client against a local fake speaking Wikidata's JSON."""

from __future__ import annotations

import itertools
import threading

import pytest
from django.core.exceptions import ImproperlyConfigured

from linking.models import WikidataCacheEntry
from linking.types import InvalidQid
from linking.wikidata import WikidataClient, WikidataUnavailable, parse_retry_after
from tests.linking.fake_wikidata import FakeWikidata

pytestmark = pytest.mark.django_db

AGENT = "qaportal-tests/1.0 (https://example.org/qaportal; tests@example.org)"


@pytest.fixture
def fake():
    with FakeWikidata() as server:
        yield server


class Sleeps(list):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


def make_client(fake: FakeWikidata, sleeps: Sleeps, **kwargs) -> WikidataClient:
    options = {"backoff_base": 0.5, "backoff_max": 4.0, "max_retries": 4, "timeout": 5.0}
    return WikidataClient(api_url=fake.url, user_agent=AGENT, sleep=sleeps, **options | kwargs)


def test_search_sends_the_documented_parameters_and_parses_hits(fake, sleeps):
    page = make_client(fake, sleeps).search("top gun", limit=1)
    (call,) = fake.calls("wbsearchentities")
    assert call.params == {
        "action": "wbsearchentities",
        "search": "top gun",
        "language": "en",
        "uselang": "en",
        "type": "item",
        "limit": "1",
        "format": "json",
    }
    assert call.headers["User-Agent"].startswith(AGENT + " python-requests/")
    assert page.hits[0]["id"] == "Q110138"
    assert page.hits[0]["label"] == "Top Gun"
    assert page.hits[0]["description"] == "1986 film directed by Tony Scott"
    assert page.hits[0]["match"]["type"] == "label"
    assert page.next_offset == 1


def test_search_continue_and_alias_match(fake, sleeps):
    client = make_client(fake, sleeps)
    second = client.search("top gun", limit=1, continue_=1)
    assert fake.calls()[-1].params["continue"] == "1"
    assert second.hits[0]["id"] == "Q31188649"
    assert second.next_offset is None
    alias = client.search("movie")
    assert alias.hits[0]["id"] == "Q11424"
    assert alias.hits[0]["aliases"] == ["movie"]
    with pytest.raises(ValueError, match="limit"):
        client.search("x", limit=51)


def test_cache_hit_makes_no_second_request(fake, sleeps):
    client = make_client(fake, sleeps)
    first = client.search("Tom  Cruise")
    again = make_client(fake, sleeps).search("tom cruise")
    assert again == first
    assert len(fake.calls()) == 1
    assert WikidataCacheEntry.objects.filter(kind="search").count() == 1
    client.get_entities(["Q37079"])
    client.get_entities(["Q37079"])
    assert len(fake.calls("wbgetentities")) == 1


def test_expired_cache_is_refetched(fake, sleeps):
    client = make_client(fake, sleeps)
    client.search("Risky")
    WikidataCacheEntry.objects.update(expires_at="2000-01-01T00:00:00Z")
    client.search("Risky")
    assert len(fake.calls()) == 2


def test_get_entities_labels_aliases_p31_and_missing(fake, sleeps):
    found = make_client(fake, sleeps).get_entities(["Q42", "Q77777777"])
    (call,) = fake.calls("wbgetentities")
    assert call.params["props"] == "labels|descriptions|aliases|claims"
    assert call.params["ids"] == "Q42|Q77777777"
    assert found["Q42"] == {  # the whole normalised entity
        "id": "Q42",
        "label": "Douglas Adams",
        "description": "English science fiction writer and humourist (1952-2001)",
        "aliases": ["Douglas Noël Adams", "Douglas Noel Adams", "DNA"],
        "instance_of": ["Q5"],
        "redirected_from": None,
    }
    assert found["Q77777777"] is None


def test_redirect_resolves_to_the_target(fake, sleeps):
    entity = make_client(fake, sleeps).get_entities(["Q4115189"])["Q4115189"]
    assert entity is not None
    assert entity["id"] == "Q42"
    assert entity["redirected_from"] == "Q4115189"
    assert entity["label"] == "Douglas Adams"


def test_batches_of_fifty(fake, sleeps):
    fake.items.update({f"Q{n}": {"label": f"item {n}"} for n in range(1000, 1120)})
    ids = [f"Q{n}" for n in range(1000, 1120)]
    found = make_client(fake, sleeps).get_entities(ids)
    sizes = [len(c.params["ids"].split("|")) for c in fake.calls("wbgetentities")]
    assert sizes == [50, 50, 20]
    last = found["Q1119"]
    assert last is not None
    assert last["label"] == "item 1119"
    make_client(fake, sleeps).get_entities(["Q1000", "Q42"])
    assert fake.calls("wbgetentities")[-1].params["ids"] == "Q42"


@pytest.mark.parametrize("bad", ["Q0", "Q042", "q42", "P31", "Q", "Q42 ", "L1"])
def test_qid_validation_before_any_request(fake, sleeps, bad):
    with pytest.raises(InvalidQid):
        make_client(fake, sleeps).get_entities(["Q42", bad])
    assert fake.calls() == []


def test_user_agent_is_required_with_contact(fake, settings):
    settings.WIKIDATA_USER_AGENT = ""
    with pytest.raises(ImproperlyConfigured, match="WIKIDATA_USER_AGENT"):
        WikidataClient(api_url=fake.url)
    with pytest.raises(ImproperlyConfigured, match="contact"):
        WikidataClient(api_url=fake.url, user_agent="qaportal/1.0")
    settings.WIKIDATA_USER_AGENT = AGENT
    assert WikidataClient(api_url=fake.url).user_agent.startswith(AGENT)


def test_background_sends_maxlag_interactive_does_not(fake, sleeps):
    make_client(fake, sleeps, cache_ttl=0).search("Top")
    make_client(fake, sleeps, background=True, cache_ttl=0).search("Top")
    first, second = fake.calls()
    assert "maxlag" not in first.params
    assert second.params["maxlag"] == "5"


def test_maxlag_error_waits_for_retry_after_then_succeeds(fake, sleeps):
    fake.fail_next("maxlag", retry_after=7)
    page = make_client(fake, sleeps, background=True).search("Tom")
    assert page.hits[0]["id"] == "Q37079"
    assert [c.status for c in fake.calls()] == [200, 200]
    assert len(sleeps) == 1
    assert sleeps[0] == pytest.approx(7, abs=0.5)


def test_429_honours_retry_after(fake, sleeps):
    fake.fail_next("429", retry_after=3)
    make_client(fake, sleeps).get_entities(["Q42"])
    assert [c.status for c in fake.calls()] == [429, 200]
    assert sleeps[0] == pytest.approx(3, abs=0.5)


def test_backoff_is_exponential_bounded_and_gives_up(fake, sleeps):
    fake.fail_next("503", times=10, retry_after=0)
    client = make_client(fake, sleeps, max_retries=4, backoff_base=0.5, backoff_max=2.0)
    with pytest.raises(WikidataUnavailable, match="5 attempts"):
        client.search("Tom")
    assert len(fake.calls()) == 5
    assert [round(s, 1) for s in sleeps] == [0.5, 1.0, 2.0, 2.0]


def test_retry_after_beyond_max_wait_fails_fast(fake, sleeps):
    fake.fail_next("429", retry_after=3600)
    with pytest.raises(WikidataUnavailable, match="3600"):
        make_client(fake, sleeps, max_wait=60).search("Tom")
    assert len(fake.calls()) == 1
    assert sleeps == []


def test_one_request_per_host_at_a_time_across_threads(sleeps):
    with FakeWikidata(latency=0.02, failure_rate=0.2, retry_after=0) as fake:
        client = make_client(fake, sleeps, cache_ttl=0, background=True, max_retries=8)
        results: dict[str, int] = {}

        def look(word: str) -> None:
            results[word] = len(client.search(word).hits)

        threads = [threading.Thread(target=look, args=(w,)) for w in ["Top", "Tom", "Ris", "Do"]]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert set(results) == {"Top", "Tom", "Ris", "Do"}
    assert fake.max_in_flight == 1
    spans = sorted((c.started, c.ended) for c in fake.calls())
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))


def test_parse_retry_after():
    assert parse_retry_after("5") == 5
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0
