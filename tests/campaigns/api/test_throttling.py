"""The API throttle counts atomically on the real Redis: concurrent requests never slip
past the limit (DRF's read-modify-write history let 1,260 reads through at 1,200/min),
a 429 says when to come back, and while Redis is down each process still counts."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest
from django.core.cache import cache
from django.test import override_settings

from campaigns.api import throttling
from campaigns.api.throttling import TokenRateThrottle


def _request(method: str = "GET", token: str = "token-a") -> Any:
    """A stand-in for DRF's Request: what the throttle reads of it."""
    return SimpleNamespace(
        method=method,
        auth=SimpleNamespace(key=token),
        user=SimpleNamespace(is_authenticated=True, pk=1),
        META={"REMOTE_ADDR": "203.0.113.1"},
    )


def _hammer(*, threads: int, each: int, method: str = "GET") -> list[bool]:
    answers: list[bool] = []
    lock = threading.Lock()
    start = threading.Barrier(threads)

    def run() -> None:
        start.wait()
        mine = [TokenRateThrottle().allow_request(_request(method), None) for _ in range(each)]
        with lock:
            answers.extend(mine)

    workers = [threading.Thread(target=run) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return answers


@pytest.fixture(autouse=True)
def _clean():
    local = getattr(throttling, "_LOCAL", None)
    for store in (cache, local):
        if store is not None:
            store.clear()
    yield
    for store in (cache, local):
        if store is not None:
            store.clear()


@override_settings(API_THROTTLE_RATES={"read": "60/min", "write": "30/min"})
def test_concurrent_reads_and_writes_never_pass_the_limit():
    reads = _hammer(threads=12, each=20)
    assert reads.count(True) == 60, reads.count(True)
    writes = _hammer(threads=12, each=10, method="POST")
    assert writes.count(True) == 30, writes.count(True)


@override_settings(API_THROTTLE_RATES={"read": "2/min", "write": "2/min"})
def test_over_the_limit_waits_for_the_next_window(monkeypatch):
    clock = [120.0]
    monkeypatch.setattr(throttling.time, "time", lambda: clock[0])
    throttle = TokenRateThrottle()
    assert [throttle.allow_request(_request(), None) for _ in range(3)] == [True, True, False]
    clock[0] = 150.0
    assert throttle.allow_request(_request(), None) is False
    assert throttle.wait() == 30
    clock[0] = 180.0  # the next minute
    assert throttle.allow_request(_request(), None) is True
    # Another token counts apart.
    assert throttle.allow_request(_request(token="token-b"), None) is True


@override_settings(API_THROTTLE_RATES={"read": "5/min", "write": "5/min"})
def test_with_redis_down_each_process_still_counts(monkeypatch):
    monkeypatch.setattr(throttling, "cache_available", lambda: False)
    answers = [TokenRateThrottle().allow_request(_request(), None) for _ in range(8)]
    assert answers == [True] * 5 + [False] * 3
