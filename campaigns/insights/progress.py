"""Where a campaign stands: per stage counts by status, progress and an estimated time
to completion from the recent submission rate.

Five grouped queries whatever the campaign's size (items, HITs, the assignment counters,
recent submissions, items done), so the overview page and the live updates it polls stay
cheap on large campaigns: assignments by status come from the counters the database keeps
(``campaigns.work.counts``), the recent ones through the index on ``submitted_at``.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.core.cache import cache
from django.db.models import Count, Exists, OuterRef, QuerySet
from django.utils import timezone

from campaigns.models import (
    HANDED_IN,
    Assignment,
    AssignmentStatus,
    Campaign,
    HITItem,
    HITStatus,
)
from campaigns.models.choices import ItemStatus
from campaigns.work.selectors.counts import (
    stage_assignment_counts_and_versions,
    stage_hit_counts,
    stage_item_counts,
    stage_recent_submissions,
)
from qaportal.dbrouter import replica_reads

# Submissions in this window give the rate the estimate extrapolates.
RATE_WINDOW = timedelta(hours=1)
ITEMS_DONE_CACHE_SECONDS = 600


@dataclass
class StageProgress:
    """One stage: counts by status, places done and left, rate and estimate."""

    stage_id: int
    name: str
    task_type: str
    items: dict[str, int] = field(default_factory=dict)
    hits: dict[str, int] = field(default_factory=dict)
    assignments: dict[str, int] = field(default_factory=dict)
    done: int = 0
    remaining: int = 0
    recent: int = 0  # submissions within RATE_WINDOW
    items_done: int = 0  # items whose every place is done (their HIT is full, none under way)
    # Published HITs with a place free: what a worker could still take (a published HIT
    # whose places are all taken is not open).
    hits_open: int = 0
    rate_per_hour: float | None = None
    eta_seconds: int | None = None
    eta_at: datetime | None = None

    @property
    def total(self) -> int:
        return self.done + self.remaining

    @property
    def percent(self) -> float:
        """Share of the stage's places done, 0 to 100 (100 when nothing is left to do)."""
        return 100.0 if self.total == 0 else round(100.0 * self.done / self.total, 1)

    @property
    def percent_or_none(self) -> float | None:
        """``percent``, or None for a stage with no work at all (no items, no places):
        an empty stage is not "100 % done"."""
        return None if self.total == 0 else self.percent

    @property
    def items_total(self) -> int:
        """Items of the stage that count for progress (dropped ones do not)."""
        return sum(n for status, n in self.items.items() if status != ItemStatus.DROPPED)


@dataclass
class CampaignProgress:
    """The campaign's stages in pipeline order and their sums."""

    stages: list[StageProgress]
    measured_at: datetime
    window_seconds: int

    @property
    def done(self) -> int:
        return sum(s.done for s in self.stages)

    @property
    def remaining(self) -> int:
        return sum(s.remaining for s in self.stages)

    @property
    def percent(self) -> float:
        total = self.done + self.remaining
        return 100.0 if total == 0 else round(100.0 * self.done / total, 1)

    @property
    def percent_or_none(self) -> float | None:
        """``percent``, or None while the campaign has no work at all."""
        return None if self.done + self.remaining == 0 else self.percent

    @property
    def without_estimate(self) -> list[str]:
        """Names of the stages with work left and no submission within ``RATE_WINDOW``:
        why the campaign has no estimate while other stages have a rate."""
        return [s.name for s in self.stages if s.remaining and s.eta_at is None]

    @property
    def estimate_missing(self) -> str:
        """Why the campaign has no estimate, in words: nothing submitted lately at all,
        or the (first three) stages without a rate beside others that have one."""
        names = self.without_estimate
        if not names:
            return ""
        if len(names) == len([s for s in self.stages if s.remaining]):
            return "nothing submitted in the last hour"
        quoted = ", ".join(f"“{n}”" for n in names[:3])
        more = f" and {len(names) - 3} more" if len(names) > 3 else ""
        verb = "has" if len(names) == 1 else "have"
        return f"{quoted}{more} {verb} had no submission in the last hour"

    @property
    def eta_at(self) -> datetime | None:
        """When the last stage with work left should finish; None when a stage with
        work left has no recent submissions (no rate to extrapolate)."""
        pending = [s for s in self.stages if s.remaining]
        if not pending or any(s.eta_at is None for s in pending):
            return None
        return max(s.eta_at for s in pending if s.eta_at is not None)


def _places_of_pending_items(*, pending: int, items_per_hit: int, per_hit: int) -> int:
    """Places the stage's not yet published items will open when published."""
    return math.ceil(pending / max(items_per_hit, 1)) * max(per_hit, 1)


def recent_submissions(*, stage_ids: list[int], since: datetime) -> QuerySet[Any]:
    """Work submitted since ``since`` per stage (``hit__stage_id``, ``n``), read through
    the index on ``submitted_at`` (``assignment_submitted_at``)."""
    return (
        Assignment.objects.filter(
            hit__stage_id__in=stage_ids, submitted_at__gte=since, status__in=HANDED_IN
        )
        .order_by()
        .values("hit__stage_id")
        .annotate(n=Count("pk"))
    )


def _items_done(
    *, stage_ids: list[int], hit_rows: Sequence[Mapping[str, Any]], versions: dict[int, str]
) -> dict[int, int]:
    """Items done per stage: an item is done when a HIT holding it has no free place and
    nobody working on it. Counted on the HIT-item links (no join to the items, no
    DISTINCT: about half the cost); an item in several HITs (gold) is capped by the
    caller at the stage's items.

    The count reads every HIT of the stages, so it is cached under what it depends on:
    the HITs by status with their places (``hit_rows``, already read) and the stages'
    assignment counters (``versions``: an accept, return, expiry or submission changes
    them).
    """
    state = repr((sorted(versions.items()), sorted(sorted(r.items()) for r in hit_rows)))
    key = f"qaportal:items-done:{hashlib.sha256(state.encode()).hexdigest()[:40]}"
    found: dict[int, int] | None = cache.get(key)
    if found is not None:
        return found
    busy = Assignment.objects.filter(hit_id=OuterRef("hit_id"), status=AssignmentStatus.ACCEPTED)
    found = {
        row["hit__stage_id"]: row["n"]
        for row in HITItem.objects.filter(hit__stage_id__in=stage_ids, hit__places_left=0)
        .exclude(hit__status=HITStatus.PENDING)
        .exclude(Exists(busy))
        .order_by()
        .values("hit__stage_id")
        .annotate(n=Count("pk"))
    }
    cache.set(key, found, ITEMS_DONE_CACHE_SECONDS)
    return found


@replica_reads()
def campaign_progress(*, campaign: Campaign, now: datetime | None = None) -> CampaignProgress:
    """Progress of every stage of ``campaign`` (read only, five grouped queries).

    Done = assignments submitted, approved or rejected; an item is done when a HIT
    holding it is full and none of its assignments is under way. Left = free places of published
    HITs + assignments in progress + places of HITs not yet published + the places that
    pending items (not yet in a HIT) will open. The estimate divides what is left by the
    rate of submissions within the last hour.
    """
    now = now or timezone.now()
    since = now - RATE_WINDOW
    stages = {
        s.pk: (
            s,
            StageProgress(stage_id=s.pk, name=s.name, task_type=s.task_type),
        )
        for s in campaign.stages.order_by("position")
    }
    # Items and HITs by stage and status from the counters the database keeps.
    for stage_id, by_status in stage_item_counts(stage_ids=list(stages)).items():
        stages[stage_id][1].items = by_status
    places_left: dict[int, int] = {}
    hit_rows = [
        {"stage_id": stage_id, "status": status, **sums}
        for stage_id, by_status in sorted(stage_hit_counts(stage_ids=list(stages)).items())
        for status, sums in sorted(by_status.items())
    ]
    for hit_row in hit_rows:
        progress = stages[hit_row["stage_id"]][1]
        progress.hits[hit_row["status"]] = hit_row["n"]
        if hit_row["status"] == HITStatus.PUBLISHED:
            progress.hits_open = hit_row["open"]
        stage_id = hit_row["stage_id"]
        if hit_row["status"] == HITStatus.PUBLISHED:
            places_left[stage_id] = places_left.get(stage_id, 0) + hit_row["free"]
        elif hit_row["status"] == HITStatus.PENDING:
            places_left[stage_id] = places_left.get(stage_id, 0) + hit_row["places"]
    # Counts by status from the counters the database keeps (not a count of the table).
    counts, versions = stage_assignment_counts_and_versions(stage_ids=list(stages))
    for stage_id, by_status in counts.items():
        stages[stage_id][1].assignments = by_status
    # Recent submissions from the per-minute counters (PostgreSQL; the window starts at
    # its first minute's start) or the index on submitted_at (SQLite).
    for stage_id, recent in stage_recent_submissions(stage_ids=list(stages), since=since).items():
        stages[stage_id][1].recent = recent
    done_by_stage = _items_done(stage_ids=list(stages), hit_rows=hit_rows, versions=versions)
    for stage_id, done in done_by_stage.items():
        stages[stage_id][1].items_done = done
    for stage_id, (stage, progress) in stages.items():
        progress.items_done = min(progress.items_done, progress.items_total)
        progress.done = sum(progress.assignments.get(s, 0) for s in HANDED_IN)
        progress.remaining = (
            places_left.get(stage_id, 0)
            + progress.assignments.get(AssignmentStatus.ACCEPTED, 0)
            + _places_of_pending_items(
                pending=progress.items.get(ItemStatus.PENDING, 0),
                items_per_hit=stage.items_per_hit,
                per_hit=stage.assignments_per_hit,
            )
        )
        if progress.recent:
            rate = progress.recent / (RATE_WINDOW.total_seconds() / 3600)
            progress.rate_per_hour = round(rate, 1)
            progress.eta_seconds = math.ceil(progress.remaining / rate * 3600)
            progress.eta_at = now + timedelta(seconds=progress.eta_seconds)
        elif progress.remaining == 0:
            progress.eta_seconds = 0
            progress.eta_at = now
    return CampaignProgress(
        stages=[p for _, p in stages.values()],
        measured_at=now,
        window_seconds=int(RATE_WINDOW.total_seconds()),
    )
