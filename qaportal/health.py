"""``/healthz``: the state of the database, the broker and the cache (required: 503
when one is down), and whether a Celery worker and beat have been seen lately
(reported; the status is "degraded", still 200, so a load balancer keeps the web up
while they are restarted), with what waits: the outbox's backlog and its oldest
message's age, platform operations pending, each queue's depth.

``/livez`` (liveness: the process answers; it touches nothing else, so a database
outage never gets a web node restarted) and ``/readyz`` (readiness: the database,
broker and cache answer; a node that fails it is taken out of the proxy's or the
Kubernetes Service's rotation) are the probes' two questions apart."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from campaigns.models import OperationState, ProviderOperation
from qaportal.heartbeat import BEAT_SEEN_KEY, WORKER_SEEN_KEY
from qaportal.models import OutboxMessage
from qaportal.queues import queue_names

logger = logging.getLogger(__name__)

# Seconds a health probe may wait on one part; the probe itself must answer fast.
PROBE_TIMEOUT = 2


def _check_database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return "ok"


def _check_broker() -> str:
    """``eager`` when tasks run in-process by configuration, else a real broker round trip."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return "eager"
    from qaportal.celery import app

    # The URL is read from settings at each call, so the check reports the broker
    # the settings name (and tests can point it elsewhere with override_settings).
    with app.connection_for_write(
        url=settings.CELERY_BROKER_URL,
        connect_timeout=PROBE_TIMEOUT,
        transport_options={
            "socket_connect_timeout": PROBE_TIMEOUT,
            "socket_timeout": PROBE_TIMEOUT,
        },
    ) as conn:
        conn.ensure_connection(max_retries=1, interval_start=0, timeout=PROBE_TIMEOUT)
    return "ok"


def _check_cache() -> str:
    cache.set("healthz", "1", timeout=5)
    if cache.get("healthz") != "1":
        raise RuntimeError("cache did not return the value just written")
    return "ok"


def _check_worker() -> str:
    """``eager`` when tasks run in-process; ``ok`` with the age of the last sign of a
    worker; RuntimeError when none was seen within HEALTH_WORKER_MAX_AGE_SECONDS."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return "eager"
    seen = cache.get(WORKER_SEEN_KEY)
    limit: int = settings.HEALTH_WORKER_MAX_AGE_SECONDS
    if seen is None:
        raise RuntimeError("no Celery worker has been seen")
    age = time.time() - float(seen)
    if age > limit:
        raise RuntimeError(f"no Celery worker seen for {int(age)} s")
    return "ok"


def _check_beat() -> str:
    """``eager`` without a broker; ``ok`` when beat's own heartbeat is fresher than
    HEALTH_BEAT_MAX_AGE_SECONDS; RuntimeError otherwise (nothing would re-send the
    outbox, sync the platforms or recover stopped jobs)."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return "eager"
    seen = cache.get(BEAT_SEEN_KEY)
    if seen is None:
        raise RuntimeError("beat has not been seen")
    age = time.time() - float(seen)
    if age > settings.HEALTH_BEAT_MAX_AGE_SECONDS:
        raise RuntimeError(f"beat not seen for {int(age)} s")
    return "ok"


def queue_depths() -> dict[str, int]:
    """Messages waiting in each Celery queue ({} without a Redis broker)."""
    url = settings.CELERY_BROKER_URL
    if settings.CELERY_TASK_ALWAYS_EAGER or not url.startswith(("redis://", "rediss://")):
        return {}
    import redis

    client = redis.Redis.from_url(
        url, socket_connect_timeout=PROBE_TIMEOUT, socket_timeout=PROBE_TIMEOUT
    )
    try:
        return {name: int(client.llen(name)) for name in queue_names()}
    finally:
        client.close()


def backlog() -> dict[str, Any]:
    """What waits: outbox messages not done (and the oldest one's age), platform
    operations pending or running, messages in each queue."""
    now = time.time()
    undone = OutboxMessage.objects.filter(done_at__isnull=True)
    oldest = undone.order_by("created_at").values_list("created_at", flat=True).first()
    return {
        "outbox": undone.count(),
        "outbox_oldest_seconds": round(now - oldest.timestamp(), 1) if oldest else 0,
        "operations_pending": ProviderOperation.objects.filter(
            state__in=[OperationState.PENDING, OperationState.RUNNING]
        ).count(),
        "queues": queue_depths(),
    }


CHECKS: tuple[tuple[str, Callable[[], str]], ...] = (
    ("database", _check_database),
    ("broker", _check_broker),
    ("cache", _check_cache),
)


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """200 when every required part answers, 503 (with the failing part named) otherwise."""
    checks: dict[str, Any] = {}
    healthy = True
    for name, check in CHECKS:
        try:
            checks[name] = check()
        except Exception as exc:  # any failure means "down"
            logger.warning("healthz: %s is down: %s", name, exc.__class__.__name__)
            checks[name] = f"down: {exc.__class__.__name__}"
            healthy = False
    degraded = False
    waiting: dict[str, Any] = {}
    for name, reported in (("worker", _check_worker), ("beat", _check_beat)):
        if not healthy:
            checks[name] = "unknown"
            continue
        try:
            checks[name] = reported()
        except Exception as exc:
            checks[name] = f"down: {exc}"
            degraded = True
    if healthy:
        try:
            waiting = backlog()
        except Exception as exc:
            logger.warning("healthz: backlog not read: %s", exc.__class__.__name__)
            waiting = {"error": exc.__class__.__name__}
    status = "unavailable" if not healthy else "degraded" if degraded else "ok"
    return JsonResponse(
        {"status": status, "checks": checks, "backlog": waiting}, status=200 if healthy else 503
    )


@never_cache
@require_GET
def livez(request: HttpRequest) -> JsonResponse:
    """200 while this process can answer at all: no database, broker or cache asked."""
    return JsonResponse({"status": "alive"})


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """200 when the database, the broker and the cache answer; 503 naming what does not."""
    checks: dict[str, Any] = {}
    ready = True
    for name, check in CHECKS:
        try:
            checks[name] = check()
        except Exception as exc:
            checks[name] = f"down: {exc.__class__.__name__}"
            ready = False
    return JsonResponse(
        {"status": "ready" if ready else "unavailable", "checks": checks},
        status=200 if ready else 503,
    )
