"""Assignments per stage and status from the counters the database keeps
(``StageAssignmentCount``, kept by triggers in the writes' own transaction; rebuilt by
``campaigns.work.counts``).

Reads that would count a campaign's assignments (the overview, the progress API, the
review queue's pages, caches' fingerprints) read a few counter rows instead: the same
numbers at a cost that does not grow with the table.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import connection
from django.db.models import Count, DecimalField, Exists, F, OuterRef, Q, Sum

from campaigns.models import (
    HANDED_IN,
    HIT,
    Assignment,
    AssignmentStatus,
    Item,
    LedgerEntry,
    StageAssignmentCount,
    StageHeldWork,
    StageHITCount,
    StageItemCount,
    StageSubmissionMinute,
    StageWorkerCount,
)
from qaportal.money import CENT

HELD = (AssignmentStatus.ACCEPTED, AssignmentStatus.SUBMITTED)
_MONEY = DecimalField(max_digits=14, decimal_places=2)


def stage_assignment_counts(*, stage_ids: Iterable[int]) -> dict[int, dict[str, int]]:
    """``{stage_id: {status: n}}`` for ``stage_ids`` (statuses with none left out), one
    query on the counters."""
    out: dict[int, dict[str, int]] = defaultdict(dict)
    for stage_id, status, n in StageAssignmentCount.objects.filter(
        stage_id__in=list(stage_ids), n__gt=0
    ).values_list("stage_id", "status", "n"):
        out[stage_id][status] = n
    return dict(out)


def stage_work_versions(*, stage_ids: Iterable[int]) -> dict[int, str]:
    """Per stage with assignments, a string that changes whenever an assignment of the
    stage is made, changes status or goes (for cache keys), from the counters."""
    parts: dict[int, list[str]] = defaultdict(list)
    for stage_id, status, n, changes in (
        StageAssignmentCount.objects.filter(stage_id__in=list(stage_ids))
        .order_by("stage_id", "status")
        .values_list("stage_id", "status", "n", "changes")
    ):
        parts[stage_id].append(f"{status}={n}/{changes}")
    return {stage_id: ",".join(p) for stage_id, p in parts.items()}


def stage_assignment_counts_full(*, stage_ids: Iterable[int]) -> dict[int, dict[str, int]]:
    """The same numbers as ``stage_assignment_counts``, counted on the assignments (what
    the counters must equal; for checks and tests)."""
    out: dict[int, dict[str, int]] = defaultdict(dict)
    for row in (
        Assignment.objects.filter(hit__stage_id__in=list(stage_ids))
        .order_by()
        .values("hit__stage_id", "status")
        .annotate(n=Count("pk"))
    ):
        out[row["hit__stage_id"]][row["status"]] = row["n"]
    return dict(out)


def _money(value: object) -> Decimal:
    # SQLite's sums of decimals come back with float digits: cents, as the rows keep.
    return Decimal(str(value)).quantize(CENT)


def _deltas() -> bool:
    """Whether the item, HIT and held-work counters are kept (PostgreSQL's triggers);
    elsewhere (SQLite) their readers count the rows, which the embedded scale allows."""
    return connection.vendor == "postgresql"


def stage_item_counts(*, stage_ids: Iterable[int]) -> dict[int, dict[str, int]]:
    """``{stage_id: {status: n}}`` of the stages' items (statuses with none left out):
    the sum of the counters' deltas (``StageItemCount``), or a count on SQLite."""
    ids = list(stage_ids)
    if not _deltas():
        return stage_item_counts_full(stage_ids=ids)
    out: dict[int, dict[str, int]] = defaultdict(dict)
    for row in (
        StageItemCount.objects.filter(stage_id__in=ids)
        .order_by()
        .values("stage_id", "status")
        .annotate(total=Sum("n"))
        .filter(total__gt=0)
    ):
        out[row["stage_id"]][row["status"]] = int(row["total"])
    return dict(out)


def stage_item_counts_full(*, stage_ids: Iterable[int]) -> dict[int, dict[str, int]]:
    """``stage_item_counts`` counted on the items."""
    out: dict[int, dict[str, int]] = defaultdict(dict)
    for row in (
        Item.objects.filter(stage_id__in=list(stage_ids))
        .order_by()
        .values("stage_id", "status")
        .annotate(n=Count("pk"))
    ):
        out[row["stage_id"]][row["status"]] = row["n"]
    return dict(out)


# {stage_id: {status: {"n", "places", "free", "open", "free_reward"}}}
HITCounts = dict[int, dict[str, dict[str, Any]]]
_HIT_SUMS = ("n", "places", "free", "open")


def stage_hit_counts(*, stage_ids: Iterable[int]) -> HITCounts:
    """Per stage and HIT status: how many HITs (``n``), their places (``places``), free
    places (``free``), HITs with a free place (``open``) and the rewards of the free
    places (``free_reward``, a Decimal); from the counters' deltas (``StageHITCount``),
    or counted on SQLite."""
    ids = list(stage_ids)
    if not _deltas():
        return stage_hit_counts_full(stage_ids=ids)
    out: HITCounts = defaultdict(dict)
    for row in (
        StageHITCount.objects.filter(stage_id__in=ids)
        .order_by()
        .values("stage_id", "status")
        .annotate(
            n=Sum("n"),
            places=Sum("places"),
            free=Sum("free"),
            open=Sum("open"),
            free_reward=Sum("free_reward"),
        )
        .filter(n__gt=0)
    ):
        sums: dict[str, Any] = dict(row)
        out[row["stage_id"]][row["status"]] = {k: int(sums[k]) for k in _HIT_SUMS} | {
            "free_reward": _money(row["free_reward"])
        }
    return dict(out)


def stage_hit_counts_full(*, stage_ids: Iterable[int]) -> HITCounts:
    """``stage_hit_counts`` counted on the HITs."""
    out: HITCounts = defaultdict(dict)
    for row in (
        HIT.objects.filter(stage_id__in=list(stage_ids))
        .order_by()
        .values("stage_id", "status")
        .annotate(
            n=Count("pk"),
            places=Sum("max_assignments"),
            free=Sum("places_left"),
            open=Count("pk", filter=Q(places_left__gt=0)),
            free_reward=Sum(F("places_left") * F("reward"), output_field=_MONEY),
        )
    ):
        sums: dict[str, Any] = dict(row)
        out[row["stage_id"]][row["status"]] = {k: int(sums[k] or 0) for k in _HIT_SUMS} | {
            "free_reward": _money(row["free_reward"] or 0)
        }
    return dict(out)


def stage_held_work(*, stage_ids: Iterable[int]) -> dict[int, tuple[int, Decimal]]:
    """``{stage_id: (assignments, rewards)}``: accepted or submitted assignments without
    a ledger entry and their HITs' rewards (stages with none left out); from the
    counters' deltas (``StageHeldWork``), or counted on SQLite."""
    ids = list(stage_ids)
    if not _deltas():
        return stage_held_work_full(stage_ids=ids)
    return {
        row["stage_id"]: (int(row["total"]), _money(row["reward"]))
        for row in StageHeldWork.objects.filter(stage_id__in=ids)
        .order_by()
        .values("stage_id")
        .annotate(total=Sum("n"), reward=Sum("reward"))
        .filter(total__gt=0)
    }


def stage_held_work_full(*, stage_ids: Iterable[int]) -> dict[int, tuple[int, Decimal]]:
    """``stage_held_work`` counted on the assignments."""
    entries = LedgerEntry.objects.filter(assignment_id=OuterRef("pk"))
    return {
        row["hit__stage_id"]: (row["n"], _money(row["reward"]))
        for row in Assignment.objects.filter(hit__stage_id__in=list(stage_ids), status__in=HELD)
        .exclude(Exists(entries))
        .order_by()
        .values("hit__stage_id")
        .annotate(n=Count("pk"), reward=Sum("hit__reward"))
    }


def stage_recent_submissions(*, stage_ids: Iterable[int], since: datetime) -> dict[int, int]:
    """``{stage_id: n}``: handed-in work (submitted, approved, rejected) submitted since
    ``since`` rounded down to its minute (stages with none left out). On PostgreSQL from
    the per-minute counters (``StageSubmissionMinute``): what it reads grows with the
    window's minutes, not with its submissions; on SQLite counted on the assignments,
    from ``since`` to the second."""
    ids = list(stage_ids)
    if not _deltas():
        return {
            row["hit__stage_id"]: row["n"]
            for row in Assignment.objects.filter(
                hit__stage_id__in=ids, submitted_at__gte=since, status__in=HANDED_IN
            )
            .order_by()
            .values("hit__stage_id")
            .annotate(n=Count("pk"))
        }
    return {
        row["stage_id"]: int(row["total"])
        for row in StageSubmissionMinute.objects.filter(
            stage_id__in=ids, minute__gte=since.replace(second=0, microsecond=0)
        )
        .order_by()
        .values("stage_id")
        .annotate(total=Sum("n"))
        .filter(total__gt=0)
    }


def stage_worker_counts(
    *, stage_ids: Iterable[int], worker_ids: Iterable[int]
) -> dict[int, dict[str, int]]:
    """``{worker_id: {status: n}}``: the workers' assignments of the stages by status
    (statuses with none left out). On PostgreSQL from the per-worker counters
    (``StageWorkerCount``): a few rows per worker, whatever their work; on SQLite
    counted on the assignments."""
    stages, workers = list(stage_ids), set(worker_ids)
    if not _deltas():
        return stage_worker_counts_full(stage_ids=stages, worker_ids=workers)
    out: dict[int, dict[str, int]] = defaultdict(dict)
    for row in (
        StageWorkerCount.objects.filter(worker_id__in=workers, stage_id__in=stages)
        .order_by()
        .values("worker_id", "status")
        .annotate(total=Sum("n"))
        .filter(total__gt=0)
    ):
        out[row["worker_id"]][row["status"]] = int(row["total"])
    return dict(out)


def stage_worker_counts_full(
    *, stage_ids: Iterable[int], worker_ids: Iterable[int]
) -> dict[int, dict[str, int]]:
    """``stage_worker_counts`` counted on the assignments. By the stage ids as
    constants: PostgreSQL then sees how many HITs a large campaign has and starts from
    the workers' assignments."""
    out: dict[int, dict[str, int]] = defaultdict(dict)
    for row in (
        Assignment.objects.filter(hit__stage_id__in=list(stage_ids), worker_id__in=set(worker_ids))
        .order_by()
        .values("worker_id", "status")
        .annotate(n=Count("pk"))
    ):
        out[row["worker_id"]][row["status"]] = row["n"]
    return dict(out)
