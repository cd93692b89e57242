"""Django's PostgreSQL backend with a per-request health check that costs no round trip.

With ``CONN_HEALTH_CHECKS`` (qaportal's settings turn it on, persistent connections
being kept for 60 s), Django pings a kept connection with ``SELECT 1`` before a
request's first query: one more round trip on every request, about one in three of a
worker page's, and a statement for the server to parse, plan and run.

A kept connection is idle between requests: the server sends nothing on it unless it is
going away (a restart, a failover, ``pg_terminate_backend``, an idle timeout: a FATAL
message, then the end of the stream) or has an asynchronous message (a NOTIFY, a
parameter change). So the check here first asks the socket, without waiting, whether
there is anything to read; if so, psycopg2 reads it without waiting (the sessions'
notifications, ``qaportal.sessions``, go to ``connection.notifies``) and the socket is
asked again. An idle connection in no transaction with nothing left to read is taken as
healthy, and anything else (the end of the stream after a FATAL message) gets Django's
``SELECT 1`` as before. A peer that vanished without closing (a cut network)
is not seen by either check until the query's own timeout; the check after a database
error (``close_if_unusable_or_obsolete``) stays Django's ``SELECT 1``.
"""

from __future__ import annotations

import select
from typing import Any

from django.db.backends.postgresql import base


def _quiet(raw: Any) -> bool:
    """True if the DB-API connection is open, idle outside a transaction, with nothing
    waiting to be read on its socket. Notifications (``NOTIFY``: ``qaportal.sessions``
    listens) are read first, without waiting, into ``raw.notifies`` (psycopg2's
    ``poll``); a server going away leaves its end of stream to read, or closes it."""
    try:
        if raw.closed or raw.info.transaction_status != 0:
            return False  # 0: idle, in psycopg2 and psycopg alike
        poller = select.poll()
        poller.register(raw.fileno(), select.POLLIN | select.POLLPRI)
        if poller.poll(0):
            if not hasattr(raw, "poll"):
                return False
            raw.poll()
            return not raw.closed and not poller.poll(0)
        return True
    except Exception:  # the DB-API's errors, OSError, ValueError: not quiet
        return False


class DatabaseWrapper(base.DatabaseWrapper):
    def close_if_health_check_failed(self) -> None:
        # (health_check_enabled, health_check_done: Django's, not in django-stubs)
        enabled: bool = self.health_check_enabled  # type: ignore[attr-defined]
        done: bool = self.health_check_done  # type: ignore[has-type]
        if self.connection is None or not enabled or done or self.pool:
            return
        if not _quiet(self.connection) and not self.is_usable():
            self.close()
        self.health_check_done = True
