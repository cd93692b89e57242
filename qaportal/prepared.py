"""Server-side prepared statements for the few hand-written queries every worker cycle runs.

PostgreSQL spends more CPU parsing and planning these statements than running them:
the worker page's assignment load (five tables, the HIT's items) took ~600 µs of the
database's CPU sent as text and ~130 µs as ``EXECUTE`` of a prepared statement.
``execute(cursor, sql, params)`` prepares ``sql`` once per database connection (named
after a digest of its text) and executes it with ``params``; on other databases, or with
``DATABASE_PREPARED_STATEMENTS`` off, it runs ``sql`` as given.

A prepared statement lasts as long as its connection (a ROLLBACK keeps it), so each
connection prepares its own the first time it runs one; the names it has prepared are
kept per connection object (a reconnect starts afresh). The ``PREPARE`` itself is
connection set-up and goes to the DB-API cursor directly, as Django's own ``SET``
statements on a new connection do: query logs and counts (``CaptureQueriesContext``)
show the ``EXECUTE``, the same on a connection's first request as on its thousandth.
Behind a pooler that hands a session's statements to other server connections
(PgBouncer in transaction mode), turn ``DATABASE_PREPARED_STATEMENTS`` off.

Only for statements whose best plan does not depend on the parameters' values (lookups
by primary key): after five runs PostgreSQL may keep one generic plan for all values.
"""

from __future__ import annotations

import hashlib
import re
import weakref
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.db import connection

_PLACEHOLDER = re.compile(r"%s|%%")
# The names prepared on each raw DB-API connection (dropped with the connection).
_prepared: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
_texts: dict[str, tuple[str, str]] = {}
# The names of the prepared statements that are SELECTs (``prepared_select``).
_selects: set[str] = set()


def _prepared_text(sql: str) -> tuple[str, str]:
    """(name, ``PREPARE`` statement) for ``sql`` with its ``%s`` placeholders."""
    found = _texts.get(sql)
    if found is None:
        counter = iter(range(1, 10_000))

        def number(match: re.Match[str]) -> str:
            return "%" if match.group() == "%%" else f"${next(counter)}"

        name = "qp_" + hashlib.sha1(sql.encode(), usedforsecurity=False).hexdigest()[:20]
        found = _texts[sql] = (name, f"PREPARE {name} AS {_PLACEHOLDER.sub(number, sql)}")
        if sql.lstrip()[:6].upper() == "SELECT" and "NEXTVAL(" not in sql.upper():
            _selects.add(name)
    return found


def prepared_select(sql: str) -> bool:
    """Whether ``sql`` is ``EXECUTE`` of a statement prepared here that is a ``SELECT``
    (one that writes nothing: ``qaportal.sessions`` lets such a statement run before it
    has confirmed a request's session)."""
    name = sql[len("EXECUTE ") :].lstrip().split(" ", 1)[0].split("(", 1)[0]
    return name in _selects


def execute(cursor: Any, sql: str, params: Sequence[Any]) -> None:
    """Run ``sql`` with ``params`` on ``cursor`` (a Django cursor on ``connection``), as a
    prepared statement on PostgreSQL."""
    if connection.vendor != "postgresql" or not settings.DATABASE_PREPARED_STATEMENTS:
        cursor.execute(sql, params)
        return
    name, prepare = _prepared_text(sql)
    raw = connection.connection
    names = _prepared.get(raw)
    if names is None:
        names = _prepared[raw] = set()
    if name not in names:
        # Connection set-up, as Django's own SET statements on a new connection: on the
        # DB-API cursor, so query logs and counts see each request's statements alike.
        with connection.wrap_database_errors:
            cursor.cursor.execute(prepare)
        names.add(name)
    if params:
        cursor.execute(f"EXECUTE {name} ({', '.join(['%s'] * len(params))})", params)
    else:
        cursor.execute(f"EXECUTE {name}")
