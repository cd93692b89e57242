"""Reads off the primary: the dashboard's heavy reads on a PostgreSQL replica.

With ``DATABASE_REPLICA_URL`` set, settings add a ``replica`` database alias and
``DATABASE_REPLICA_READS``; this router then sends a read to the replica only when all
of these hold, and to the primary (``default``) otherwise:

- the read runs inside an explicit scope, ``replica_reads()`` (a context manager and a
  decorator): the requester dashboard's insight selectors (``campaigns.insights``),
  hence the progress API and the costs, workers and quality pages, and export jobs.
  Nothing else ever reads the replica: a service deciding something reads the primary;
- no transaction of the code's own is open on the primary (a ``transaction.atomic``
  block: it may have written, and its reads must see its writes and its locks);
- nothing was written in this request or task before the read (read-your-writes: a
  request that approves work and then shows the totals shows its own approval). The
  mark is cleared when a request starts (``request_started``) and when a Celery worker
  starts a task (``task_prerun``, not for a task run eagerly inside a request);
- the replica is at most ``DATABASE_REPLICA_MAX_LAG_SECONDS`` behind (default 30):
  ``replica_lag_seconds`` asks it (``now() - pg_last_xact_replay_timestamp()``, 0 when
  it has replayed all it received or is no standby at all) at most once every
  ``LAG_CHECK_SECONDS`` per process; a replica that does not answer counts as
  infinitely behind for that long, so a dead replica costs one failed connection per
  process every few seconds. (A replica that dies between a measure and a read fails
  that read: the pages that read it may answer 500 for up to ``LAG_CHECK_SECONDS``.)

Writes always go to the primary; migrations run only there (a streaming replica gets
its schema by replication). The staleness a requester may see is thus bounded by the
setting, plus ``LAG_CHECK_SECONDS``: docs/scaling.md.

Raw SQL that should follow the same rule takes its connection from
``read_connection(Model)`` instead of ``django.db.connection``.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from celery.signals import task_prerun
from django.conf import settings
from django.core.signals import request_started
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections, router
from django.db.backends.base.base import BaseDatabaseWrapper

logger = logging.getLogger(__name__)

REPLICA = "replica"
# How long one measure of the replica's lag is trusted, in seconds (per process).
LAG_CHECK_SECONDS = 5.0

# Depth of nested ``replica_reads`` scopes; > 0: inside one.
_scope: ContextVar[int] = ContextVar("qaportal_replica_scope", default=0)
# Something was written (through the ORM) in this request or task.
_wrote: ContextVar[bool] = ContextVar("qaportal_replica_wrote", default=False)
# (monotonic time measured, lag in seconds) of this process's last measure.
_lag: list[tuple[float, float]] = []

LAG_SQL = (
    "SELECT CASE WHEN NOT pg_is_in_recovery() THEN 0"
    " WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0"
    " ELSE COALESCE(EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()), 0) END"
)


def replica_configured() -> bool:
    """Whether this deployment reads from a replica at all."""
    return bool(getattr(settings, "DATABASE_REPLICA_READS", False)) and (
        REPLICA in settings.DATABASES
    )


@contextlib.contextmanager
def replica_reads(*, ignore_earlier_writes: bool = False) -> Iterator[None]:
    """Reads inside may go to the replica (see the module's docstring for when they do).
    Also a decorator: ``@replica_reads()``. Nested scopes are one scope.

    ``ignore_earlier_writes``: the caller vouches that it reads nothing it wrote before
    the scope (an export job's own bookkeeping on its ``Job`` row): its earlier writes
    do not pin its reads to the primary. Writes inside the scope still do."""
    scope = _scope.set(_scope.get() + 1)
    wrote = _wrote.set(False) if ignore_earlier_writes else None
    try:
        yield
    finally:
        if wrote is not None:
            # Writes made inside the scope stay marked for what follows it.
            written_inside = _wrote.get()
            _wrote.reset(wrote)
            if written_inside:
                _wrote.set(True)
        _scope.reset(scope)


def writes_forget() -> None:
    """A new request or task starts: nothing written yet in it."""
    _wrote.set(False)


def _in_own_transaction(connection: BaseDatabaseWrapper) -> bool:
    # The test suite's own wrapping transactions (one per test) are not the code's.
    return any(not getattr(block, "_from_testcase", False) for block in connection.atomic_blocks)


def replica_lag_measure() -> float:
    """The replica's lag in seconds, asked of it now: 0 when it has replayed everything
    it received, or is not a standby (a copy, or the primary itself); ``inf`` when it
    cannot be asked (down, refusing connections) or is not PostgreSQL."""
    connection = connections[REPLICA]
    if connection.vendor != "postgresql":
        return 0.0 if connection.vendor == "sqlite" else math.inf
    try:
        with connection.cursor() as cursor:
            cursor.execute(LAG_SQL)
            row = cursor.fetchone()
    except DatabaseError as exc:
        logger.warning("replica unavailable, reading the primary: %s", exc.__class__.__name__)
        with contextlib.suppress(DatabaseError):
            connection.close()
        return math.inf
    return float(row[0]) if row and row[0] is not None else 0.0


def replica_lag_seconds() -> float:
    """The replica's lag, measured at most once every ``LAG_CHECK_SECONDS`` here."""
    now = time.monotonic()
    if _lag and now - _lag[0][0] < LAG_CHECK_SECONDS:
        return _lag[0][1]
    lag = replica_lag_measure()
    _lag[:] = [(now, lag)]
    return lag


def replica_lag_forget() -> None:
    """Measure again at the next read (tests; settings changed)."""
    _lag.clear()


def replica_usable() -> bool:
    """Whether a read made here and now may go to the replica."""
    if not replica_configured() or _scope.get() <= 0 or _wrote.get():
        return False
    if _in_own_transaction(connections[DEFAULT_DB_ALIAS]):
        return False
    return replica_lag_seconds() <= float(settings.DATABASE_REPLICA_MAX_LAG_SECONDS)


def read_connection(model: type[Any]) -> BaseDatabaseWrapper:
    """The connection a raw-SQL read of ``model``'s table should use: the one the
    router would give an ORM read of it here and now."""
    return connections[router.db_for_read(model)]


class PrimaryReplicaRouter:
    """``DATABASE_ROUTERS``: writes and migrations on the primary, scoped reads on a
    replica that is fresh enough."""

    def db_for_read(self, model: type[Any], **hints: Any) -> str:
        return REPLICA if replica_usable() else DEFAULT_DB_ALIAS

    def db_for_write(self, model: type[Any], **hints: Any) -> str:
        _wrote.set(True)
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool | None:
        # Both aliases hold the same rows: an object read from one may point at one
        # read from the other.
        databases = {obj1._state.db, obj2._state.db}
        return True if databases <= {DEFAULT_DB_ALIAS, REPLICA, None} else None

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool:
        return db == DEFAULT_DB_ALIAS


def _request_started(**_: Any) -> None:
    writes_forget()


def _task_prerun(task: Any = None, **_: Any) -> None:
    # A task run eagerly (inside a request, or a test) belongs to its caller's request.
    if task is not None and getattr(task.request, "is_eager", False):
        return
    writes_forget()


def replica_signals_install() -> None:
    """Clear the write mark at each request's and each worker task's start (AppConfig)."""
    request_started.connect(_request_started, dispatch_uid="qaportal-replica-request")
    task_prerun.connect(_task_prerun, dispatch_uid="qaportal-replica-task", weak=False)
