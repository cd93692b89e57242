"""Prepared statements: prepared once per connection, the same results as plain SQL,
kept through a rollback, prepared again on a new connection, off when configured."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from qaportal import prepared

SQL = "SELECT %s::int + 1, '100%%'"


def _prepared_names() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM pg_prepared_statements")
        return {row[0] for row in cursor.fetchall()}


def _run(value: int) -> tuple:
    with connection.cursor() as cursor:
        prepared.execute(cursor, SQL, [value])
        return cursor.fetchone()


@pytest.mark.django_db(transaction=True)
def test_prepared_once_per_connection_and_counted_as_one_query():
    name, _ = prepared._prepared_text(SQL)
    connection.close()
    with CaptureQueriesContext(connection) as first:
        assert _run(1) == (2, "100%")
    with CaptureQueriesContext(connection) as second:
        assert _run(41) == (42, "100%")
    # The PREPARE is connection set-up: each run shows one EXECUTE.
    assert [q["sql"].split(" (")[0] for q in first] == [f"EXECUTE {name}"]
    assert len(second) == 1
    assert name in _prepared_names()

    def rolled_back() -> None:
        with transaction.atomic():
            _run(2)
            raise RuntimeError("rolled back")

    with pytest.raises(RuntimeError):
        rolled_back()
    assert _run(3) == (4, "100%")  # still prepared after the rollback

    connection.close()  # a new connection prepares its own
    assert name not in _prepared_names()
    assert _run(5) == (6, "100%")
    assert name in _prepared_names()


@pytest.mark.django_db(transaction=True)
def test_off_runs_the_sql_as_given(settings):
    settings.DATABASE_PREPARED_STATEMENTS = False
    connection.close()
    with CaptureQueriesContext(connection) as ctx:
        assert _run(1) == (2, "100%")
    assert ctx[0]["sql"].startswith("SELECT 1::int + 1")
    assert prepared._prepared_text(SQL)[0] not in _prepared_names()
