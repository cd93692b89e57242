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

from django.db.models import Count

from campaigns.models import Assignment, StageAssignmentCount


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
