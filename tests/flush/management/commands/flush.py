"""The suite's ``flush``, which pytest-django runs after every transactional test
(``transaction=True``, live servers, browsers: ~250 of the suite's tests): Django's,
except that the rows Django's ``post_migrate`` makes (content types and permissions)
are kept when they are exactly as it made them, and ``post_migrate`` is then not sent.

Django's flush empties every table and sends ``post_migrate``, whose handlers read
each app's content types and permissions and create them again (new ids each time):
~25 ms of CPU and ~80 ms at load 7 of the ~50-85 ms a flush took, for rows every
test but a few leaves alone. Here each flush first reads a fingerprint of those two
tables (every row's id and fields, in one statement); when it is the one recorded
after this database's last full flush, every other table is emptied and the two are
left as they are; otherwise (a test added, changed or removed one) the flush is
Django's, and the fingerprint of what its ``post_migrate`` made is recorded. Either
way the next test finds the same rows: every table empty but those two, and those
two as ``post_migrate`` makes them (tests/infra/test_test_databases.py).

Only the flush between tests takes this path (no sequence reset, no cascade,
``post_migrate`` asked for); ``flush`` run by hand or with other options is Django's.
"""

from __future__ import annotations

from typing import Any

from django.core.management.color import no_style
from django.core.management.commands import flush
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper

KEPT = ("django_content_type", "auth_permission")

FINGERPRINT = """
SELECT
  (SELECT md5(coalesce(string_agg(concat_ws(':', id, app_label, model), ',' ORDER BY id), ''))
   FROM django_content_type),
  (SELECT md5(coalesce(string_agg(
     concat_ws(':', id, content_type_id, codename, name), ',' ORDER BY id), ''))
   FROM auth_permission)
"""

# Test database name -> the fingerprint of the rows its last full flush's post_migrate made.
_MADE: dict[str, tuple[str, str]] = {}


def _fingerprint(connection: BaseDatabaseWrapper) -> tuple[str, str] | None:
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute(FINGERPRINT)
        row = cursor.fetchone()
    return (str(row[0]), str(row[1])) if row else None


class Command(flush.Command):
    def handle(self, **options: Any) -> None:
        connection = connections[options["database"]]
        between_tests = not (
            options.get("reset_sequences", True)
            or options.get("allow_cascade", False)
            or options.get("inhibit_post_migrate", False)
            or options.get("interactive", True)
        )
        if not between_tests:
            return super().handle(**options)
        name = str(connection.settings_dict["NAME"])
        fingerprint = _fingerprint(connection)
        if fingerprint is not None and _MADE.get(name) == fingerprint:
            tables = [
                table
                for table in connection.introspection.django_table_names(
                    only_existing=True, include_views=False
                )
                if table not in KEPT
            ]
            connection.ops.execute_sql_flush(
                connection.ops.sql_flush(no_style(), tables, reset_sequences=False)
            )
            return None
        super().handle(**options)
        made = _fingerprint(connection)
        if made is not None:
            _MADE[name] = made
        return None
