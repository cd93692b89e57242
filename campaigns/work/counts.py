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


# The stage counters kept as deltas by PostgreSQL triggers (migration 0018): table, the
# columns a row is grouped by, the columns summed.
_DELTAS = (
    ("campaigns_stageitemcount", ("stage_id", "status"), ("n",)),
    (
        "campaigns_stagehitcount",
        ("stage_id", "status"),
        ("n", "places", "free", "open", "free_reward"),
    ),
    ("campaigns_stageheldwork", ("stage_id",), ("n", "reward")),
    ("campaigns_stagesubmissionminute", ("stage_id", "minute"), ("n",)),
)
# Submission minutes older than this are dropped by compaction (the rate reads one hour).
MINUTES_KEPT = "1 day"
_HELD = "('accepted', 'submitted')"
_RECOUNT = {
    "campaigns_stageitemcount": "SELECT stage_id, status, count(*) FROM campaigns_item {where} "
    "GROUP BY 1, 2",
    "campaigns_stagehitcount": "SELECT stage_id, status, count(*), sum(max_assignments), "
    "sum(places_left), count(*) FILTER (WHERE places_left > 0), sum(places_left * reward) "
    "FROM campaigns_hit {where} "
    "GROUP BY 1, 2",
    "campaigns_stageheldwork": "SELECT h.stage_id, count(*), sum(h.reward) "  # noqa: S608
    "FROM campaigns_assignment a JOIN campaigns_hit h ON h.id = a.hit_id "
    f"WHERE a.status IN {_HELD} AND NOT EXISTS (SELECT 1 FROM campaigns_ledgerentry e "
    "WHERE e.assignment_id = a.id) {and_where} GROUP BY 1",
    "campaigns_stagesubmissionminute": "SELECT h.stage_id, "  # noqa: S608
    "date_trunc('minute', a.submitted_at), "
    "count(*) FROM campaigns_assignment a JOIN campaigns_hit h ON h.id = a.hit_id "
    f"WHERE a.submitted_at >= now() - interval '{MINUTES_KEPT}' "
    "AND a.status IN ('submitted', 'approved', 'rejected') {and_where} GROUP BY 1, 2",
}


def stage_counters_compact() -> int:
    """Fold the deltas of the item, HIT, held-work, submission-minute and per-worker
    counters into one row per group, dropping groups that sum to nothing, stages that
    are gone and minutes older than ``MINUTES_KEPT``; the number of rows removed.
    PostgreSQL only (SQLite keeps no deltas: 0).

    One statement per table (``DELETE … RETURNING`` feeding the INSERT of the sums): a
    reader sees the rows before or after, never half; the triggers only INSERT and are
    not blocked. Concurrent compactions wait for each other (an advisory lock)."""
    if connection.vendor != "postgresql":
        return 0
    removed = 0
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtext('stage_counters_compact'))")
        for table, group, summed in _DELTAS:
            keys = ", ".join(group)
            values = ", ".join(summed)
            sums = ", ".join(f"sum({c})" for c in summed)
            nonzero = " OR ".join(f"sum({c}) <> 0" for c in summed)
            old = f"minute < now() - interval '{MINUTES_KEPT}'" if "minute" in group else "false"
            # Only groups of more than one row (or summing to nothing, or gone) are
            # rewritten: a folded table is read, not rewritten, every minute.
            cursor.execute(
                f"WITH gone AS (DELETE FROM {table} WHERE ({keys}) IN ("  # noqa: S608
                f"SELECT {keys} FROM {table} GROUP BY {keys} "
                f"HAVING count(*) > 1 OR NOT ({nonzero})) "
                f"OR stage_id NOT IN (SELECT id FROM campaigns_stage) OR {old} "
                f"RETURNING {keys}, {values}), "
                f"kept AS (INSERT INTO {table} ({keys}, {values}) "
                f"SELECT {keys}, {sums} FROM gone "
                f"WHERE stage_id IN (SELECT id FROM campaigns_stage) AND NOT {old} "
                f"GROUP BY {keys} HAVING {nonzero} RETURNING 1) "
                "SELECT (SELECT count(*) FROM gone) - (SELECT count(*) FROM kept)"
            )
            removed += cursor.fetchone()[0]
        # The per-worker counters are many (a row per worker, stage and status): only the
        # groups with a new (unfolded) delta are folded, found through a partial index.
        cursor.execute(
            "WITH touched AS (SELECT DISTINCT stage_id, worker_id, status "
            "FROM campaigns_stageworkercount WHERE NOT folded), "
            "gone AS (DELETE FROM campaigns_stageworkercount c USING touched t "
            "WHERE c.stage_id = t.stage_id AND c.worker_id = t.worker_id "
            "AND c.status = t.status RETURNING c.stage_id, c.worker_id, c.status, c.n), "
            "kept AS (INSERT INTO campaigns_stageworkercount "
            "(stage_id, worker_id, status, n, folded) "
            "SELECT stage_id, worker_id, status, sum(n), true FROM gone "
            "WHERE stage_id IN (SELECT id FROM campaigns_stage) "
            "GROUP BY 1, 2, 3 HAVING sum(n) <> 0 RETURNING 1) "
            "SELECT (SELECT count(*) FROM gone) - (SELECT count(*) FROM kept)"
        )
        removed += cursor.fetchone()[0]
    return removed


def stage_counters_rebuild(*, stage_ids: Iterable[int] | None = None) -> int:
    """Recount the item, HIT, held-work, submission-minute and per-worker counters of
    ``stage_ids``
    (every stage when None); the number of rows written. PostgreSQL only (SQLite keeps none: 0).

    The items, HITs, assignments and ledger are locked against writes while counting."""
    if connection.vendor != "postgresql":
        return 0
    ids = None if stage_ids is None else list(stage_ids)
    written = 0
    with transaction.atomic(), connection.cursor() as cursor:
        # In the order the writers take them (HITs before their assignments).
        for table in ("campaigns_item", "campaigns_hit", "campaigns_assignment"):
            cursor.execute(f"LOCK TABLE {table} IN SHARE MODE")
        cursor.execute("LOCK TABLE campaigns_ledgerentry IN SHARE MODE")
        for table, group, summed in _DELTAS:
            joined = table in ("campaigns_stageheldwork", "campaigns_stagesubmissionminute")
            stage = "h.stage_id" if joined else "stage_id"
            where = "" if ids is None else f"WHERE {stage} = ANY(%s)"
            params = [] if ids is None else [ids]
            cursor.execute(
                f"DELETE FROM {table} "  # noqa: S608
                + ("" if ids is None else "WHERE stage_id = ANY(%s)"),
                params,
            )
            cursor.execute(
                f"INSERT INTO {table} ({', '.join(group + summed)}) "
                + _RECOUNT[table].format(where=where, and_where=where.replace("WHERE", "AND")),
                params,
            )
            written += cursor.rowcount
        cursor.execute(
            "DELETE FROM campaigns_stageworkercount "  # noqa: S608
            + ("" if ids is None else "WHERE stage_id = ANY(%s)"),
            [] if ids is None else [ids],
        )
        cursor.execute(
            "INSERT INTO campaigns_stageworkercount (stage_id, worker_id, status, n, folded) "
            "SELECT h.stage_id, a.worker_id, a.status, count(*), true "
            "FROM campaigns_assignment a JOIN campaigns_hit h ON h.id = a.hit_id "
            + ("" if ids is None else "WHERE h.stage_id = ANY(%s) ")
            + "GROUP BY 1, 2, 3",
            [] if ids is None else [ids],
        )
        written += cursor.rowcount
    return written
