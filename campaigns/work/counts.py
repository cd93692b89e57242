"""Rebuilding the assignment counters (``StageAssignmentCount``) from the assignments.

The database keeps them itself (triggers of migration 0016, in the transaction of every
write); this is for a load with triggers off, a restore, or a repair
(``manage.py counters_rebuild``). Reads are in ``campaigns.work.selectors.counts``.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connection, transaction
from django.db.models import Count

from campaigns.models import Assignment, StageAssignmentCount


def stage_assignment_counts_rebuild(*, stage_ids: Iterable[int] | None = None) -> int:
    """Recompute the counters of ``stage_ids`` (every stage when None) from the
    assignments; returns the number of counter rows written.

    On PostgreSQL the assignments are locked against writes while counting (a concurrent
    write waits for the rebuild; the count includes every write committed before it).
    ``changes`` is kept and grows by one on a rebuilt row, so caches keyed on it are
    refreshed.
    """
    ids = None if stage_ids is None else list(stage_ids)
    with transaction.atomic():
        if connection.vendor == "postgresql":
            # Writes to the assignments wait while counting (taken before the counter
            # rows, in the order a writer takes them: no deadlock).
            with connection.cursor() as cursor:
                cursor.execute("LOCK TABLE campaigns_assignment IN SHARE MODE")
        existing = StageAssignmentCount.objects.select_for_update()
        if ids is not None:
            existing = existing.filter(stage_id__in=ids)
        changes = {(r.stage_id, r.status): r.changes for r in existing}
        full = (
            Assignment.objects.order_by().values("hit__stage_id", "status").annotate(n=Count("pk"))
        )
        if ids is not None:
            full = full.filter(hit__stage_id__in=ids)
        rows = [
            StageAssignmentCount(
                stage_id=r["hit__stage_id"],
                status=r["status"],
                n=r["n"],
                changes=changes.get((r["hit__stage_id"], r["status"]), 0) + 1,
            )
            for r in full
        ]
        existing.delete()
        StageAssignmentCount.objects.bulk_create(rows, batch_size=1000)
    return len(rows)
