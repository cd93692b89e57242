"""Series for the campaign page's charts: submissions and approvals over time, spend
against the budget over time, and the distribution of work times. Reads only; each
series is one grouped query, whatever the campaign's size."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.db.models import Count, Q, Sum
from django.db.models.functions import TruncDay, TruncHour

from campaigns.models import Assignment, AssignmentStatus, Campaign, LedgerEntry
from campaigns.models.choices import LedgerStatus
from qaportal.dbrouter import replica_reads

# Work-time buckets' upper bounds in seconds; the last bucket is open.
WORK_TIME_BOUNDS = (30, 60, 120, 300, 600, 1200, 1800, 3600)
ZERO = Decimal("0.00")


@dataclass(frozen=True)
class ActivityPoint:
    at: datetime
    submitted: int  # cumulative up to this bucket
    approved: int


@dataclass(frozen=True)
class SpendPoint:
    at: datetime
    spent: Decimal  # cumulative paid + committed up to this bucket


def _bucket(first: datetime | None, last: datetime | None) -> type[TruncHour] | type[TruncDay]:
    """Hours for a campaign of under three days, days otherwise."""
    if first is None or last is None or last - first < timedelta(days=3):
        return TruncHour
    return TruncDay


@replica_reads()
def campaign_activity_series(*, campaign: Campaign) -> list[ActivityPoint]:
    """Cumulative submitted and approved assignments, by hour (or by day for longer
    campaigns). Submitted counts everything handed in (approved and rejected included);
    approved counts by the time of the decision."""
    base = Assignment.objects.filter(hit__stage__campaign=campaign)
    submitted = base.filter(submitted_at__isnull=False)
    span = submitted.order_by().values_list("submitted_at", flat=True)
    first, last = span.order_by("submitted_at").first(), span.order_by("-submitted_at").first()
    trunc = _bucket(first, last)
    per_bucket: dict[datetime, list[int]] = {}
    for row in (
        submitted.order_by().annotate(b=trunc("submitted_at")).values("b").annotate(n=Count("pk"))
    ):
        per_bucket.setdefault(row["b"], [0, 0])[0] += row["n"]
    for row in (
        base.filter(status=AssignmentStatus.APPROVED, decided_at__isnull=False)
        .order_by()
        .annotate(b=trunc("decided_at"))
        .values("b")
        .annotate(n=Count("pk"))
    ):
        per_bucket.setdefault(row["b"], [0, 0])[1] += row["n"]
    points, sub, app = [], 0, 0
    for at in sorted(per_bucket):
        sub += per_bucket[at][0]
        app += per_bucket[at][1]
        points.append(ActivityPoint(at=at, submitted=sub, approved=app))
    return points


@replica_reads()
def campaign_spend_series(*, campaign: Campaign) -> list[SpendPoint]:
    """Cumulative money paid or committed (rewards, fees, bonuses), by hour or day of the
    ledger entry."""
    entries = LedgerEntry.objects.filter(
        campaign=campaign, status__in=(LedgerStatus.PAID, LedgerStatus.COMMITTED)
    )
    times = entries.order_by().values_list("created_at", flat=True)
    trunc = _bucket(times.order_by("created_at").first(), times.order_by("-created_at").first())
    rows = (
        entries.order_by()
        .annotate(b=trunc("created_at"))
        .values("b")
        .annotate(total=Sum("amount"))
        .order_by("b")
    )
    points, total = [], ZERO
    for row in rows:
        total += row["total"] or ZERO
        points.append(SpendPoint(at=row["b"], spent=total))
    return points


@replica_reads()
def campaign_work_time_histogram(*, campaign: Campaign) -> list[tuple[str, int]]:
    """How many submitted assignments took how long: ``[(label, count)]`` over
    ``WORK_TIME_BOUNDS``, one query."""
    lowers = (0, *WORK_TIME_BOUNDS)
    uppers: tuple[int | None, ...] = (*WORK_TIME_BOUNDS, None)
    buckets = {}
    for i, (low, high) in enumerate(zip(lowers, uppers, strict=True)):
        where = (
            Q(work_seconds__gte=low)
            if high is None
            else Q(work_seconds__gte=low, work_seconds__lt=high)
        )
        buckets[f"b{i}"] = Count("pk", filter=where)
    found = (
        Assignment.objects.filter(hit__stage__campaign=campaign, work_seconds__isnull=False)
        .order_by()
        .aggregate(**buckets)
    )
    counts = [found[f"b{i}"] for i in range(len(lowers))]
    labels = []
    lower = 0
    for bound in WORK_TIME_BOUNDS:
        labels.append(f"{_duration(lower)} to {_duration(bound)}")
        lower = bound
    labels.append(f"≥ {_duration(lower)}")
    return list(zip(labels, counts, strict=True))


def _duration(seconds: int) -> str:
    if seconds == 0:
        return "0"
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h"
