"""``/metrics`` for Prometheus: django-prometheus' request, response and database
metrics, then qaportal's own, counted in the database (so every web process and node
answers the same): submissions, decisions, ledger amounts by kind, the outbox's
backlog, job durations, platform operations (the calls that change a platform) by
state, queue depths and the heartbeats' ages.

Scrapes send ``Authorization: Bearer $METRICS_TOKEN`` when a token is set; without
one, only the addresses in ``METRICS_NETWORKS`` may scrape (the connection's own
address: through the proxy, never). Anyone else gets 404. The database part is
computed at most once per ``METRICS_CACHE_SECONDS`` (kept in the cache).
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import time
from collections.abc import Iterator
from typing import Any

import prometheus_client
from django.conf import settings
from django.core.cache import cache
from django.db.models import Count, DurationField, ExpressionWrapper, F, Sum
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import multiprocess
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, SummaryMetricFamily

from campaigns.models import Assignment, Job, LedgerEntry, ProviderOperation
from qaportal.health import backlog
from qaportal.heartbeat import BEAT_SEEN_KEY, WORKER_SEEN_KEY

CACHE_KEY = "qaportal:metrics:own"
DECIDED = ("approved", "rejected")
SUBMITTED = ("submitted", *DECIDED)


def _allowed(request: HttpRequest) -> bool:
    token = settings.METRICS_TOKEN
    if token:
        sent = request.headers.get("Authorization", "")
        return hmac.compare_digest(sent.encode(), f"Bearer {token}".encode())
    try:
        address = ipaddress.ip_address(str(request.META.get("REMOTE_ADDR", "")))
    except ValueError:
        return False
    return any(
        address in ipaddress.ip_network(net, strict=False) for net in settings.METRICS_NETWORKS
    )


class _OwnMetrics:
    """A prometheus_client collector of qaportal's database-counted metrics."""

    def collect(self) -> Iterator[Any]:
        by_status = dict(
            Assignment.objects.order_by()
            .values_list("status")
            .annotate(n=Count("pk"))
            .values_list("status", "n")
        )
        submissions = CounterMetricFamily(
            "qaportal_submissions", "Assignments submitted (whatever was decided since)."
        )
        submissions.add_metric([], sum(by_status.get(s, 0) for s in SUBMITTED))
        yield submissions
        decisions = CounterMetricFamily(
            "qaportal_decisions", "Review decisions on assignments.", labels=["decision"]
        )
        for decision in DECIDED:
            decisions.add_metric([decision], by_status.get(decision, 0))
        yield decisions
        assignments = GaugeMetricFamily(
            "qaportal_assignments", "Assignments by status.", labels=["status"]
        )
        for status, n in sorted(by_status.items()):
            assignments.add_metric([status], n)
        yield assignments

        ledger = GaugeMetricFamily(
            "qaportal_ledger_amount",
            "Ledger amounts by kind, status and currency.",
            labels=["kind", "status", "currency"],
        )
        rows = (
            LedgerEntry.objects.order_by()
            .values("kind", "status", "currency")
            .annotate(total=Sum("amount"))
        )
        for row in rows:
            ledger.add_metric(
                [row["kind"], row["status"], row["currency"]], float(row["total"] or 0)
            )
        yield ledger

        operations = GaugeMetricFamily(
            "qaportal_platform_operations",
            "Platform operations (calls that change a platform) by provider, kind and state.",
            labels=["provider", "kind", "state"],
        )
        for op in (
            ProviderOperation.objects.order_by()
            .values("provider", "kind", "state")
            .annotate(n=Count("pk"))
        ):
            operations.add_metric([op["provider"], op["kind"], op["state"]], op["n"])
        yield operations

        durations = SummaryMetricFamily(
            "qaportal_job_duration_seconds",
            "Background jobs' durations, by kind and outcome (last attempt).",
            labels=["kind", "status"],
        )
        took = ExpressionWrapper(F("finished_at") - F("started_at"), output_field=DurationField())
        for job in (
            Job.objects.filter(finished_at__isnull=False, started_at__isnull=False)
            .order_by()
            .values("kind", "status")
            .annotate(n=Count("pk"), total=Sum(took))
        ):
            seconds = job["total"].total_seconds() if job["total"] is not None else 0.0
            durations.add_metric([job["kind"], job["status"]], job["n"], seconds)
        yield durations

        waiting = backlog()
        outbox = GaugeMetricFamily("qaportal_outbox_backlog", "Outbox messages not done.")
        outbox.add_metric([], waiting["outbox"])
        yield outbox
        oldest = GaugeMetricFamily(
            "qaportal_outbox_oldest_seconds", "Age of the oldest outbox message not done."
        )
        oldest.add_metric([], waiting["outbox_oldest_seconds"])
        yield oldest
        depth = GaugeMetricFamily(
            "qaportal_queue_depth", "Messages waiting in a Celery queue.", labels=["queue"]
        )
        for queue, n in waiting["queues"].items():
            depth.add_metric([queue], n)
        yield depth
        seen = GaugeMetricFamily(
            "qaportal_heartbeat_age_seconds",
            "Seconds since a Celery worker, or beat, was last seen.",
            labels=["process"],
        )
        for process, key in (("worker", WORKER_SEEN_KEY), ("beat", BEAT_SEEN_KEY)):
            at = cache.get(key)
            if at is not None:
                seen.add_metric([process], round(time.time() - float(at), 1))
        yield seen


def _own_text() -> bytes:
    text: bytes | None = cache.get(CACHE_KEY)
    if text is None:
        registry = prometheus_client.CollectorRegistry(auto_describe=False)
        registry.register(_OwnMetrics())
        text = prometheus_client.generate_latest(registry)
        cache.set(CACHE_KEY, text, timeout=settings.METRICS_CACHE_SECONDS)
    return text


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """The Prometheus text format: the process's (or, with PROMETHEUS_MULTIPROC_DIR,
    all gunicorn workers') request metrics, then qaportal's own."""
    if not _allowed(request):
        raise Http404
    if "PROMETHEUS_MULTIPROC_DIR" in os.environ:
        registry = prometheus_client.CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        registry = prometheus_client.REGISTRY
    body = prometheus_client.generate_latest(registry) + _own_text()
    return HttpResponse(body, content_type=prometheus_client.CONTENT_TYPE_LATEST)
