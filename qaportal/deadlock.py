"""Retrying a whole transaction that PostgreSQL chose as a deadlock's victim.

PostgreSQL breaks a deadlock by aborting one of the transactions in it (SQLSTATE
40P01); nothing of the victim was committed, and running it again is the documented
remedy. The worker pages' accept and submit lock a worker, a HIT and an assignment.
Until migration 0017 the database's triggers also updated the stage's shared counter
rows, and accept and return met there and on the HIT in opposite orders; the counters
now only append rows (docs/scaling.md, "Counter deltas") and take part in no lock
cycle. The retry stays as a belt: it costs nothing until PostgreSQL aborts a victim,
and a later change of lock order would otherwise show as 500s. ``deadlock_retried``
runs such a service again, a few times, when it is the outermost transaction; inside a
caller's transaction the whole of that transaction was lost, so the error goes up to it.
"""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from django.db import OperationalError, connection

DEADLOCK_DETECTED = "40P01"
TRIES = 4

P = ParamSpec("P")
R = TypeVar("R")


def is_deadlock(error: BaseException) -> bool:
    """Whether ``error`` is PostgreSQL's "deadlock detected"."""
    cause = error.__cause__ or error
    return getattr(cause, "pgcode", None) == DEADLOCK_DETECTED


def deadlock_retried(service: Callable[P, R]) -> Callable[P, R]:
    """``service`` run again (up to ``TRIES`` in all, after a short random pause) when
    PostgreSQL aborts it as a deadlock's victim and no caller's transaction holds it."""

    @functools.wraps(service)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        for attempt in range(1, TRIES + 1):
            outermost = not connection.in_atomic_block
            try:
                return service(*args, **kwargs)
            except OperationalError as error:
                if not (outermost and is_deadlock(error)) or attempt == TRIES:
                    raise
                time.sleep(random.uniform(0.005, 0.02) * attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    return run
