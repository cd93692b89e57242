"""The Celery workers' heartbeat: when a worker was last seen (``/healthz`` reads it).

Written from Celery's signals (``qaportal.celery``) when a worker starts and after each
task it runs; beat sends ``qaportal.ping`` every 30 s so an idle worker is seen too.
"""

from __future__ import annotations

import logging
import time

from django.core.cache import cache

logger = logging.getLogger(__name__)

WORKER_SEEN_KEY = "qaportal:worker-seen"


def worker_seen_now() -> None:
    """Record that a worker is alive now (called from Celery's signals)."""
    try:
        cache.set(WORKER_SEEN_KEY, time.time(), timeout=None)
    except Exception:  # the cache is down: /healthz says so on its own
        logger.warning("could not record the worker heartbeat")
