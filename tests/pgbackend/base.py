"""qaportal's PostgreSQL backend with a cheaper flush, for the test suite only.

pytest-django empties the database after every transactional test (``transaction=True``,
live servers, browsers: ~250 of the suite's tests) with Django's ``flush``, whose SQL on
PostgreSQL is one ``TRUNCATE`` of all ~55 tables. A TRUNCATE gives every table, index and
TOAST table a new file and invalidates their catalog entries in every session: ~0.3-0.7 s
each time on the CI machine, against a few milliseconds for a ``DELETE`` of the few rows a
test leaves. So the flush here is a DELETE of every table in one transaction, with
``session_replication_role = replica`` so that no trigger fires (neither the counters'
triggers, which TRUNCATE does not fire either, nor the foreign keys' checks: every table
is emptied, so the order does not matter). The tables emptied and everything after the
flush (``post_migrate``: content types and permissions) are Django's own (between
tests, tests/flush keeps those two tables when they are intact). That setting
needs a superuser (the suite's ``postgres``); for another role the flush is Django's.
"""

from __future__ import annotations

from typing import Any

from django.db.backends.postgresql.operations import DatabaseOperations as PostgresOperations

from qaportal.pgbackend.base import DatabaseWrapper as QaportalWrapper
from tests.pgbackend.creation import DatabaseCreation


class DatabaseOperations(PostgresOperations):
    def sql_flush(
        self,
        style: Any,
        tables: Any,
        *,
        reset_sequences: bool = False,
        allow_cascade: bool = False,
    ) -> list[str]:
        if not tables or reset_sequences or not self._superuser():
            return super().sql_flush(
                style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
            )
        # (execute_sql_flush runs these in one transaction: SET LOCAL ends with it.)
        return [
            "SET LOCAL session_replication_role = replica;",
            *(f"DELETE FROM {self.quote_name(table)};" for table in tables),
        ]

    def _superuser(self) -> bool:
        with self.connection.cursor() as cursor:
            cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
            row = cursor.fetchone()
        return bool(row and row[0])


class DatabaseWrapper(QaportalWrapper):
    creation_class = DatabaseCreation
    ops_class = DatabaseOperations
