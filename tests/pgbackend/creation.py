"""Test databases cloned from one migrated template per test run.

Django migrates each test database from nothing: ~10 s of CPU for this project's
migrations, and a run of the suite has four test databases (``default`` and the
``replica`` copy, for each of pytest-xdist's two workers: every worker collects every
test, so each sets up both aliases), all migrated at once at the start, while mypy and
ruff run alongside. Here the first test database of a run is migrated as
``test_<name>_template`` and every test database of the run, in every worker, is a
``CREATE DATABASE ... TEMPLATE`` copy of it (about a second). The copies have the same
schema, data (content types, permissions) and cache tables as a migrated database: the
two aliases' routers allow the same migrations (tests/dbrouter.py).

One worker builds the template while the others wait, under a PostgreSQL advisory lock
taken on the maintenance database; the template carries the run's id (pytest-xdist's
``testrunuid``, or one per process without xdist) as its comment, so a template left by
an earlier or crashed run is never reused but rebuilt. A worker that destroys its test
databases at the end drops the template too (a worker that needs it later builds it
again). ``--reuse-db`` and ``--nomigrations`` keep Django's own creation.
"""

from __future__ import annotations

import os
import uuid
import zlib
from typing import Any

from django.conf import settings
from django.db.backends.postgresql.creation import DatabaseCreation as PostgresCreation

# The run whose template a database's comment names: the same in every xdist worker.
RUN_ID = os.environ.get("PYTEST_XDIST_TESTRUNUID") or uuid.uuid4().hex


class DatabaseCreation(PostgresCreation):
    def create_test_db(
        self,
        verbosity: int = 1,
        autoclobber: bool = False,
        serialize: bool | None = True,
        keepdb: bool = False,
    ) -> str:
        test = self.connection.settings_dict["TEST"]
        if keepdb or test.get("MIGRATE") is False or test.get("TEMPLATE"):
            return str(super().create_test_db(verbosity, autoclobber, serialize, keepdb))
        dj: Any = self  # Django's private creation API, which django-stubs leaves out
        name = dj._get_test_db_name()
        template = self._template_name()
        with dj._nodb_cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [_lock_key(template)])
            try:
                cursor.execute(
                    "SELECT shobj_description(oid, 'pg_database') FROM pg_database "
                    "WHERE datname = %s",
                    [template],
                )
                row = cursor.fetchone()
                if row is None or row[0] != RUN_ID:
                    self._template_build(template, verbosity)
                    cursor.execute(
                        f"COMMENT ON DATABASE {dj._quote_name(template)} IS %s", [RUN_ID]
                    )
                if verbosity >= 1:
                    self.log(
                        f"Creating test database for alias "
                        f"{dj._get_database_display_str(verbosity, name)} from {template}..."
                    )
                # As Django's creation without --reuse-db: an old database of that name goes.
                cursor.execute(f"DROP DATABASE IF EXISTS {dj._quote_name(name)}")
                cursor.execute(
                    f"CREATE DATABASE {dj._quote_name(name)} "
                    f"{dj._get_database_create_suffix(template=template)}"
                )
            finally:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [_lock_key(template)])
        self.connection.close()
        settings.DATABASES[self.connection.alias]["NAME"] = name
        self.connection.settings_dict["NAME"] = name
        if serialize:
            dj.connection._test_serialized_contents = self.serialize_db_to_string()
        self.connection.ensure_connection()
        return name

    def destroy_test_db(
        self,
        old_database_name: str | None = None,
        verbosity: int = 1,
        keepdb: bool = False,
        suffix: str | None = None,
    ) -> None:
        super().destroy_test_db(old_database_name, verbosity, keepdb, suffix)
        if keepdb or suffix is not None:
            return
        dj: Any = self  # (as above)
        template = self._template_name()
        with dj._nodb_cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [_lock_key(template)])
            try:
                cursor.execute(f"DROP DATABASE IF EXISTS {dj._quote_name(template)}")
            finally:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [_lock_key(template)])

    def _template_name(self) -> str:
        # Called while NAME is the configured (non-test) name, the same for both aliases:
        # before the test database's creation, after its destruction.
        return f"test_{self.connection.settings_dict['NAME']}_template"

    def _template_build(self, template: str, verbosity: int) -> None:
        """Django's creation of a migrated test database, under the template's name; the
        connection is left closed (a template must have no session when copied)."""
        test: dict[str, Any] = self.connection.settings_dict["TEST"]
        name, test_name = self.connection.settings_dict["NAME"], test.get("NAME")
        test["NAME"] = template
        try:
            super().create_test_db(verbosity, autoclobber=True, serialize=False, keepdb=False)
        finally:
            self.connection.close()
            test["NAME"] = test_name
            self.connection.settings_dict["NAME"] = name
            settings.DATABASES[self.connection.alias]["NAME"] = name


def _lock_key(template: str) -> int:
    return zlib.crc32(f"qaportal-test-template:{template}".encode())
