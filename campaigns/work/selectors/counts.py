"""Assignments per stage and status from the counters the database keeps
(``StageAssignmentCount`` plus its pending ``StageAssignmentCountDelta`` rows, kept by
triggers in the writes' own transaction; folded and rebuilt by ``campaigns.work.counts``).
On PostgreSQL, each reader of an assignment summary (counts, held work, handed-in
minutes, per-worker counts) adds the rows of the worker writes' journal not yet folded
(``StageAssignmentJournal``, migration 0026) in the same statement.

Reads that would count a campaign's assignments (the overview, the progress API, the
review queue's pages, caches' fingerprints) read a few counter rows instead: the same
numbers at a cost that does not grow with the table. Each read is one statement over
the counter rows and the pending deltas (one snapshot: a compaction committing meanwhile
is seen whole or not at all, so the sums are exact either way). A read that finds more
than ``COUNTERS_COMPACT_PENDING`` deltas pending for its stages folds them afterwards
(``stage_assignment_counts_compact``: no number changes, so it is a matter of storage,
like a cache fill, not a write a reader could see).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection
from django.db.models import (
    BigIntegerField,
    Count,
    DecimalField,
    Exists,
    ExpressionWrapper,
    F,
    OuterRef,
    Q,
    QuerySet,
    Sum,
    Value,
)

from campaigns.models import (
    HANDED_IN,
    HIT,
    Assignment,
    AssignmentStatus,
    Item,
    LedgerEntry,
    StageAssignmentCount,
    StageAssignmentCountDelta,
    StageAssignmentJournal,
    StageHeldWork,
    StageHITCount,
    StageItemCount,
    StageSubmissionMinute,
    StageWorkerCount,
)
from campaigns.work.counts import stage_assignment_counts_compact
from qaportal.money import CENT

logger = logging.getLogger(__name__)

HELD = (AssignmentStatus.ACCEPTED, AssignmentStatus.SUBMITTED)
_MONEY = DecimalField(max_digits=14, decimal_places=2)

# (stage id, status) -> [n, changes]
Counters = dict[tuple[int, str], list[int]]
_BIG = BigIntegerField()


def _journal(**filters: Any) -> QuerySet[StageAssignmentJournal]:
    """The worker writes' journal rows (``StageAssignmentJournal``, migration 0026) not yet
    folded into the summaries: every reader of an assignment summary adds them, in the
    same statement (one snapshot: a fold committing meanwhile is seen whole or not)."""
    return StageAssignmentJournal.objects.filter(**filters).order_by()


def _entered_and_left(
    rows: QuerySet[StageAssignmentJournal], key: str
) -> tuple[QuerySet[Any, Any], QuerySet[Any, Any]]:
    """``rows`` grouped by ``key`` and the status entered, ``n`` their count; and by
    ``key`` and the status left, ``n`` minus their count (values: ``key``, ``status``,
    ``n``)."""
    entered = (
        rows.filter(new_status__isnull=False)
        .annotate(status=F("new_status"))
        .values(key, "status")
        .annotate(n=Count("pk"))
    )
    left = (
        rows.filter(old_status__isnull=False)
        .annotate(status=F("old_status"))
        .values(key, "status")
        .annotate(n=ExpressionWrapper(-Count("pk"), output_field=_BIG))
    )
    return entered, left


def _counters(stage_ids: Iterable[int]) -> Counters:
    """Each (stage, status) of ``stage_ids`` with a counter row or pending deltas: its
    ``n`` and ``changes``, the row's plus its deltas', read in one statement. Folds the
    stages' deltas afterwards when more than ``COUNTERS_COMPACT_PENDING`` are pending."""
    ids = list(stage_ids)
    if not ids:
        return {}
    kept = (
        StageAssignmentCount.objects.filter(stage_id__in=ids)
        .order_by()
        .annotate(pending=Value(0, output_field=BigIntegerField()))
        .values_list("stage_id", "status", "n", "changes", "pending")
    )
    pending = (
        StageAssignmentCountDelta.objects.filter(stage_id__in=ids)
        .order_by()
        .values("stage_id", "status")
        .annotate(delta_n=Sum("n"), delta_changes=Sum("changes"), rows=Count("pk"))
        .values_list("stage_id", "status", "delta_n", "delta_changes", "rows")
    )
    # The journal's rows: n +1 / -1 and one change per side; each row pending once.
    entered, left = _entered_and_left(_journal(stage_id__in=ids), "stage_id")
    columns = ("stage_id", "status", "n", "changes", "rows")
    entered_rows = entered.annotate(changes=Count("pk"), rows=Count("pk")).values_list(*columns)
    left_rows = left.annotate(changes=Count("pk"), rows=Value(0, _BIG)).values_list(*columns)
    out: Counters = {}
    waiting: dict[int, int] = defaultdict(int)
    # PostgreSQL's sum of bigints is a numeric: ints here, whichever part a row is from.
    for stage_id, status, n, changes, rows in kept.union(
        pending, entered_rows, left_rows, all=True
    ):
        total = out.setdefault((stage_id, status), [0, 0])
        total[0] += int(n)
        total[1] += int(changes)
        waiting[stage_id] += int(rows)
    if sum(waiting.values()) > settings.COUNTERS_COMPACT_PENDING:
        try:
            stage_assignment_counts_compact(stage_ids=[s for s, rows in waiting.items() if rows])
        except DatabaseError as exc:  # the read has its numbers; beat folds them later
            logger.warning("counters not compacted on read: %s", exc.__class__.__name__)
    return out


def stage_assignment_counts(*, stage_ids: Iterable[int]) -> dict[int, dict[str, int]]:
    """``{stage_id: {status: n}}`` for ``stage_ids`` (statuses with none left out), one
    query on the counters and their pending deltas."""
    return _counts_of(_counters(stage_ids))


def stage_work_versions(*, stage_ids: Iterable[int]) -> dict[int, str]:
    """Per stage with assignments, a string that changes whenever an assignment of the
    stage is made, changes status or goes (for cache keys), from the counters (the same
    before and after their deltas are folded)."""
    return _versions_of(_counters(stage_ids))


def stage_assignment_counts_and_versions(
    *, stage_ids: Iterable[int]
) -> tuple[dict[int, dict[str, int]], dict[int, str]]:
    """``stage_assignment_counts`` and ``stage_work_versions`` from one read."""
    counters = _counters(stage_ids)
    return _counts_of(counters), _versions_of(counters)


def _counts_of(counters: Counters) -> dict[int, dict[str, int]]:
    out: dict[int, dict[str, int]] = defaultdict(dict)
    for (stage_id, status), (n, _) in counters.items():
        if n > 0:
            out[stage_id][status] = n
    return dict(out)


def _versions_of(counters: Counters) -> dict[int, str]:
    parts: dict[int, list[str]] = defaultdict(list)
    for (stage_id, status), (n, changes) in sorted(counters.items()):
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
    kept = (
        StageHeldWork.objects.filter(stage_id__in=ids)
        .order_by()
        .values_list("stage_id")
        .annotate(total=Sum("n"), reward=Sum("reward"))
    )
    journal = (
        _journal(stage_id__in=ids)
        .exclude(held=0)
        .values_list("stage_id")
        .annotate(total=Sum("held"), reward=Sum(F("held") * F("reward"), output_field=_MONEY))
    )
    sums: dict[int, list[Any]] = defaultdict(lambda: [0, Decimal(0)])
    for stage_id, total, reward in kept.union(journal, all=True):
        sums[stage_id][0] += int(total)
        sums[stage_id][1] += Decimal(str(reward))
    return {stage_id: (n, _money(reward)) for stage_id, (n, reward) in sums.items() if n > 0}


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
    start = since.replace(second=0, microsecond=0)
    kept = (
        StageSubmissionMinute.objects.filter(stage_id__in=ids, minute__gte=start)
        .order_by()
        .values_list("stage_id")
        .annotate(total=Sum("n"))
    )
    entered = (
        _journal(stage_id__in=ids, new_minute__gte=start)
        .values_list("stage_id")
        .annotate(total=Count("pk"))
    )
    left = (
        _journal(stage_id__in=ids, old_minute__gte=start)
        .values_list("stage_id")
        .annotate(total=ExpressionWrapper(-Count("pk"), output_field=_BIG))
    )
    sums: dict[int, int] = defaultdict(int)
    for stage_id, total in kept.union(entered, left, all=True):
        sums[stage_id] += int(total)
    return {stage_id: n for stage_id, n in sums.items() if n > 0}


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
    kept = (
        StageWorkerCount.objects.filter(worker_id__in=workers, stage_id__in=stages)
        .order_by()
        .values("worker_id", "status")
        .annotate(total=Sum("n"))
        .values_list("worker_id", "status", "total")
    )
    entered, left = (
        side.values_list("worker_id", "status", "n")
        for side in _entered_and_left(
            _journal(stage_id__in=stages, worker_id__in=workers), "worker_id"
        )
    )
    sums: dict[tuple[int, str], int] = defaultdict(int)
    for worker_id, status, n in kept.union(entered, left, all=True):
        sums[worker_id, status] += int(n)
    out: dict[int, dict[str, int]] = defaultdict(dict)
    for (worker_id, status), n in sums.items():
        if n > 0:
            out[worker_id][status] = n
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
