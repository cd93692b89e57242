"""ProlificClient against the fake: auth, Retry-After, what is and is not retried."""

from __future__ import annotations

import pytest

from campaigns.platforms.base import PermanentProviderError, TransientProviderError
from campaigns.platforms.prolific.client import ProlificClient
from tests.campaigns.platforms.fake_prolific import FakeProlific


@pytest.fixture
def server():
    with FakeProlific(token="tok") as fake:
        yield fake


def client_for(server, sleeps):
    return ProlificClient(token="tok", base_url=server.url, sleep=sleeps.append, max_retries=3)


def test_retry_after_is_honoured_on_429(server):
    sleeps: list[float] = []
    server.inject("GET", r"/api/v1/studies/$", "429", times=2, retry_after="7")
    client_for(server, sleeps).request("GET", "/api/v1/studies/")
    assert sleeps == [7.0, 7.0]


def test_5xx_backs_off_exponentially_for_reads(server):
    sleeps: list[float] = []
    server.inject("GET", r"/api/v1/studies/$", "503", times=2)
    client_for(server, sleeps).request("GET", "/api/v1/studies/")
    assert sleeps == [1.0, 2.0]


def test_non_idempotent_call_is_not_retried_after_5xx_or_a_drop(server):
    sleeps: list[float] = []
    client = client_for(server, sleeps)
    server.inject("POST", r"/api/v1/bulk-bonus-payments/", "500")
    with pytest.raises(TransientProviderError):
        client.bonus_pay("x")
    server.inject("POST", r"/api/v1/bulk-bonus-payments/", "drop_before")
    with pytest.raises(TransientProviderError):
        client.bonus_pay("x")
    assert sleeps == []
    assert len(server.calls("POST", r"/api/v1/bulk-bonus-payments/")) == 2


def test_retries_are_bounded_and_4xx_is_permanent(server):
    sleeps: list[float] = []
    client = client_for(server, sleeps)
    server.inject("GET", r"/api/v1/studies/$", "429", times=10)
    with pytest.raises(TransientProviderError):
        client.request("GET", "/api/v1/studies/")
    assert len(sleeps) == 3
    with pytest.raises(PermanentProviderError, match="404"):
        client.study_get("missing")


def test_token_is_sent_and_never_shown(server):
    bad = ProlificClient(token="wrong", base_url=server.url, sleep=lambda s: None)
    with pytest.raises(PermanentProviderError) as info:
        bad.request("GET", "/api/v1/studies/")
    assert "wrong" not in str(info.value)
    assert "wrong" not in repr(bad)
