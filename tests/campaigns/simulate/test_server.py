"""The simulator's in-process server: a pool of threads that keep their database
connections between requests (a new PostgreSQL backend per request cost more than the
request), and give them back when the server stops."""

from __future__ import annotations

import time
import urllib.request

import pytest
from django.db import connection

from campaigns.simulate import LocalServer

pytestmark = pytest.mark.django_db(transaction=True)


def _connections() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]


def _wait_for(count: int) -> int:
    deadline = time.monotonic() + 10
    while (now := _connections()) != count and time.monotonic() < deadline:
        time.sleep(0.05)
    return now


def test_pool_threads_keep_one_connection_each_and_close_it_at_stop() -> None:
    before = _connections()
    with LocalServer(threads=2) as url:
        for _ in range(6):
            with urllib.request.urlopen(f"{url}/healthz", timeout=30) as response:
                assert response.status == 200
        # Six requests, one after the other: at most the two pool threads' connections.
        assert before < _connections() <= before + 2
    assert _wait_for(before) == before
