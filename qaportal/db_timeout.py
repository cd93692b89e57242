"""A ``statement_timeout`` for each kind of process, on PostgreSQL.

Web requests get ``DB_STATEMENT_TIMEOUT_WEB_SECONDS`` (30 s): a query that runs longer
is cancelled and the request answers 500, instead of holding a connection and a web
worker while more requests pile up behind it (the hostile tester saw five mturk-results
exports stacked, one killed at 60 s while PostgreSQL ran on). Celery workers get
``DB_STATEMENT_TIMEOUT_JOB_SECONDS`` (300 s, Celery's hard time limit): exports and
syncs may read much more. Set on each new connection (``connection_created``) by the
process that installs it: ``qaportal/wsgi.py`` (web) and ``qaportal/celery.py`` (the
worker). Management commands, migrations and tests install none. 0 turns it off.

SQLite has no statement timeout; the embedded default runs without one.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.backends.signals import connection_created

ROLES = ("web", "job")
_seconds: list[int] = [0]


def statement_timeout_seconds(*, role: str) -> int:
    """The configured timeout of a kind of process (``web`` or ``job``)."""
    if role not in ROLES:
        raise ValueError(f"role is one of {ROLES}, not {role!r}")
    return int(getattr(settings, f"DB_STATEMENT_TIMEOUT_{role.upper()}_SECONDS"))


def _on_connect(sender: Any, connection: Any, **_: Any) -> None:
    if connection.vendor != "postgresql" or _seconds[0] <= 0:
        return
    with connection.cursor() as cursor:
        cursor.execute(f"SET statement_timeout = {int(_seconds[0] * 1000)}")


def statement_timeout_install(*, role: str) -> None:
    """From now on, every new PostgreSQL connection of this process has ``role``'s
    statement timeout. Call once, at the process's start, before it connects."""
    _seconds[0] = statement_timeout_seconds(role=role)
    connection_created.connect(_on_connect, dispatch_uid="qaportal-statement-timeout")


def statement_timeout_uninstall() -> None:
    """Back to no timeout on new connections (tests)."""
    _seconds[0] = 0
    connection_created.disconnect(dispatch_uid="qaportal-statement-timeout")
