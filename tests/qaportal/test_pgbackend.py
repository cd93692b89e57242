"""The PostgreSQL backend's health check without a round trip (qaportal/pgbackend): a
kept connection that is quiet is used without ``SELECT 1``; one the server ended
(``pg_terminate_backend``, as a restart or failover does) is seen, closed and replaced
before the request's first query, as Django's own check does."""

from __future__ import annotations

import select
import time

import pytest
from django.db import connection, connections

from qaportal.pgbackend.base import DatabaseWrapper, _quiet

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the backend is PostgreSQL's"
)


def test_the_settings_use_the_backend() -> None:
    assert isinstance(connections["default"], DatabaseWrapper)
    assert connection.settings_dict["CONN_HEALTH_CHECKS"]


@pytest.fixture
def pings(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """One entry per health-check ping (``is_usable``: Django's ``SELECT 1``)."""
    pinged: list[bool] = []
    original = DatabaseWrapper.is_usable

    def counted(self: DatabaseWrapper) -> bool:
        pinged.append(True)
        return original(self)

    monkeypatch.setattr(DatabaseWrapper, "is_usable", counted)
    return pinged


@pytest.fixture
def young_connection() -> None:
    """The test's connection opened now: one an earlier test of this process opened may
    be older than ``CONN_MAX_AGE``, which Django closes between requests as obsolete."""
    connection.close()


def _as_a_new_request() -> None:
    """What Django does between requests on a kept connection."""
    connection.close_if_unusable_or_obsolete()
    assert not connection.health_check_done  # type: ignore[attr-defined]


@pytest.mark.django_db(transaction=True)
def test_a_quiet_connection_is_kept_without_a_ping(
    pings: list[bool], young_connection: None
) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    assert _quiet(connection.connection)
    _as_a_new_request()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] == pid  # the same connection
    assert pings == []
    assert connection.health_check_done  # type: ignore[attr-defined]


@pytest.mark.django_db(transaction=True)
def test_a_connection_the_server_ended_is_replaced_before_the_first_query() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    finally:
        other.close()
    deadline = time.monotonic() + 10
    while _quiet(connection.connection) and time.monotonic() < deadline:
        time.sleep(0.02)  # the server's FATAL message and the end of the stream
    assert not _quiet(connection.connection)
    _as_a_new_request()
    with connection.cursor() as cursor:  # no error: a fresh connection
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] != pid


@pytest.mark.django_db(transaction=True)
def test_a_connection_inside_a_transaction_or_closed_is_not_quiet() -> None:
    connection.ensure_connection()
    raw = connection.connection
    with connection.cursor() as cursor:
        cursor.execute("BEGIN")
        cursor.execute("SELECT 1")
        assert not _quiet(raw)
        cursor.execute("ROLLBACK")
    assert _quiet(raw)
    connection.close()
    assert not _quiet(raw)


@pytest.mark.django_db(transaction=True)
def test_a_notification_waiting_is_read_without_a_ping(
    pings: list[bool], young_connection: None
) -> None:
    with connection.cursor() as cursor:
        cursor.execute("LISTEN test_pgbackend")
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_notify('test_pgbackend', 'hello')")
    finally:
        other.close()
    readable = select.select([connection.connection], [], [], 10)[0]
    assert readable  # the notification waits on the socket
    _as_a_new_request()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] == pid  # kept
    assert pings == []  # read by the check, no SELECT 1
    assert [n.payload for n in connection.connection.notifies] == ["hello"]
    connection.connection.notifies.clear()
    with connection.cursor() as cursor:
        cursor.execute("UNLISTEN *")
