"""Heartbeats of the Celery workers and of beat (``/healthz`` and ``/metrics`` read them).

A worker's is written from Celery's signals (``qaportal.celery``) when it starts and
after each task it runs; beat sends ``qaportal.ping`` every 30 s so an idle worker is
seen too. Beat's own is written by beat itself, from its scheduler's loop
(``HeartbeatScheduler``, ``CELERY_BEAT_SCHEDULER``): a dead beat is seen even while
workers run on (nothing would then re-send the outbox, sync the platforms or recover
jobs).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from celery.beat import PersistentScheduler
from django.core.cache import cache

logger = logging.getLogger(__name__)

WORKER_SEEN_KEY = "qaportal:worker-seen"
BEAT_SEEN_KEY = "qaportal:beat-seen"
# Beat's loop wakes at least this often (beat_max_loop_interval), and writes then.
BEAT_TICK_SECONDS = 15.0


def worker_seen_now() -> None:
    """Record that a worker is alive now (called from Celery's signals)."""
    try:
        cache.set(WORKER_SEEN_KEY, time.time(), timeout=None)
    except Exception:  # the cache is down: /healthz says so on its own
        logger.warning("could not record the worker heartbeat")


def beat_seen_now() -> None:
    """Record that beat is alive now (called from its scheduler's loop)."""
    try:
        cache.set(BEAT_SEEN_KEY, time.time(), timeout=None)
    except Exception:
        logger.warning("could not record the beat heartbeat")


class HeartbeatScheduler(PersistentScheduler):
    """Celery's default scheduler that also notes, at each turn of beat's loop, that
    beat is alive; the loop turns at least every ``BEAT_TICK_SECONDS``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_interval = min(self.max_interval, BEAT_TICK_SECONDS)  # type: ignore[has-type]
        self._written = 0.0

    def tick(self, *args: Any, **kwargs: Any) -> float:
        now = time.monotonic()
        if now - self._written >= BEAT_TICK_SECONDS / 2:
            beat_seen_now()
            self._written = now
        wait: float = super().tick(*args, **kwargs)
        return wait
