"""The suite's live server (tests/liveserver.py): requests are served by kept threads
that keep their database connections between requests, as gunicorn's workers do; a
client's kept-alive connections never wait for each other; at stop every thread closes
its connections (the test databases are dropped after it)."""

from __future__ import annotations

import http.client
import time
import urllib.request
from collections.abc import Callable

import pytest
from django.db import connection

from tests.liveserver import KeptThreadsWSGIServer, live_server_start

pytestmark = pytest.mark.django_db(transaction=True)


def _connections() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"
        )
        return int(cursor.fetchone()[0])


def _wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.01)


def _wait_for(count: int) -> int:
    deadline = time.monotonic() + 10
    while (now := _connections()) != count and time.monotonic() < deadline:
        time.sleep(0.05)
    return now


def test_requests_reuse_kept_threads_and_their_connections_closed_at_stop() -> None:
    before = _connections()
    server = live_server_start("localhost")
    try:
        # One TCP connection per request (urllib closes after each answer), one after
        # the other once the server's thread is idle again: one thread serves them all,
        # on one database connection.
        httpd = server.thread.httpd
        assert isinstance(httpd, KeptThreadsWSGIServer)
        for _ in range(6):
            with urllib.request.urlopen(f"{server.url}/healthz", timeout=30) as response:
                assert response.status == 200
            _wait_until(lambda: httpd.threads == (1, 1))
        assert _wait_for(before + 1) == before + 1
        assert httpd.threads == (1, 1)

        # Three kept-alive connections open at once: each gets a thread of its own.
        clients = [
            http.client.HTTPConnection(server.thread.host, server.thread.port) for _ in "abc"
        ]
        try:
            for _round in range(2):
                for client in clients:
                    client.request("GET", "/healthz")
                    answer = client.getresponse()
                    answer.read()
                    assert answer.status == 200
        finally:
            for client in clients:
                client.close()
        assert httpd.threads[0] == 3
        assert before < _connections() <= before + 3
    finally:
        server.stop()
    assert _wait_for(before) == before
