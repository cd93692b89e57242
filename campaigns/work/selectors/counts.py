"""Assignments per stage and status from the counters the database keeps
(``StageAssignmentCount`` plus its pending ``StageAssignmentCountDelta`` rows, kept by
triggers in the writes' own transaction; folded and rebuilt by ``campaigns.work.counts``).

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

from django.conf import settings
from django.db import DatabaseError
from django.db.models import BigIntegerField, Count, Sum, Value

from campaigns.models import Assignment, StageAssignmentCount, StageAssignmentCountDelta
from campaigns.work.counts import stage_assignment_counts_compact

logger = logging.getLogger(__name__)

# (stage id, status) -> [n, changes]
Counters = dict[tuple[int, str], list[int]]


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
    out: Counters = {}
    waiting: dict[int, int] = defaultdict(int)
    # PostgreSQL's sum of bigints is a numeric: ints here, whichever part a row is from.
    for stage_id, status, n, changes, rows in kept.union(pending, all=True):
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
    out: dict[int, dict[str, int]] = defaultdict(dict)
    for (stage_id, status), (n, _) in _counters(stage_ids).items():
        if n > 0:
            out[stage_id][status] = n
    return dict(out)


def stage_work_versions(*, stage_ids: Iterable[int]) -> dict[int, str]:
    """Per stage with assignments, a string that changes whenever an assignment of the
    stage is made, changes status or goes (for cache keys), from the counters (the same
    before and after their deltas are folded)."""
    parts: dict[int, list[str]] = defaultdict(list)
    for (stage_id, status), (n, changes) in sorted(_counters(stage_ids).items()):
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
