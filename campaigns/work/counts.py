"""The assignment counters' upkeep: folding the pending deltas into the counter rows
(``stage_assignment_counts_compact``), and rebuilding both from the assignments
(``stage_assignment_counts_rebuild``).

The database keeps the counters itself, in the transaction of every write to the
assignments. On PostgreSQL its triggers append delta rows (``StageAssignmentCountDelta``,
migration 0017) and never update a shared row, so concurrent writers take no lock on
the counters; a count is its ``StageAssignmentCount`` row plus its pending deltas
(``campaigns.work.selectors.counts`` reads both in one statement). The compaction folds
the deltas into the rows (beat, ``campaigns.counters_compact``; and a read that finds
more than ``COUNTERS_COMPACT_PENDING`` pending): it changes no number a reader sees, and
a read made before, during or after it gets the same sums. On SQLite the triggers update
the rows (migration 0016: it serialises writers anyway) and there is nothing to fold.

A worker's one-row write appends one journal row instead (``StageAssignmentJournal``,
migration 0026), which ``stage_assignment_journal_fold`` moves into the deltas of the
counters and of the other assignment summaries; every compaction below folds it first.

The rebuild is for a load with triggers off, a restore, or a repair
(``manage.py counters_rebuild``).
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import DEFAULT_DB_ALIAS, connection, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Count, F, Sum

from campaigns.models import Assignment, StageAssignmentCount, StageAssignmentCountDelta

# The PostgreSQL advisory lock (transaction-scoped) held by one compaction or rebuild
# at a time: two compactions deleting the same deltas in different orders would
# deadlock each other. Writers of assignments never take it.
COUNTERS_LOCK = 0x7161_636F_756E_7473  # "qacounts" in ASCII, a positive bigint

# The stages whose deltas are folded, each locked FOR KEY SHARE (as the counter row's
# foreign key check would at commit, but first, and skipping a stage being deleted or
# locked FOR UPDATE: it is folded next time). A stage so locked cannot be deleted
# until the compaction commits, so the counter rows it inserts always have their stage,
# and a stage's deletion (whose trigger deletes its counters and deltas) never waits
# for a compaction that waits for it.
_STAGES_SQL = """
SELECT s.id FROM campaigns_stage s
WHERE s.id IN (SELECT d.stage_id FROM campaigns_stageassignmentcountdelta d {where})
ORDER BY s.id FOR KEY SHARE OF s SKIP LOCKED
"""
# The deltas of those stages deleted and added to their counter rows, in one statement
# (one snapshot: a delta committed meanwhile stays for the next compaction); counter
# rows are written in (stage, status) order. The number of deltas folded.
_FOLD_SQL = """
WITH moved AS (
    DELETE FROM campaigns_stageassignmentcountdelta d WHERE d.stage_id = ANY(%s)
    RETURNING d.stage_id, d.status, d.n, d.changes
), folded AS (
    SELECT m.stage_id, m.status, sum(m.n) AS n, sum(m.changes) AS changes, count(*) AS rows
    FROM moved m GROUP BY m.stage_id, m.status
), written AS (
    INSERT INTO campaigns_stageassignmentcount AS c (stage_id, status, n, changes)
    SELECT f.stage_id, f.status, f.n, f.changes FROM folded f ORDER BY 1, 2
    ON CONFLICT (stage_id, status) DO UPDATE
    SET n = c.n + EXCLUDED.n, changes = c.changes + EXCLUDED.changes
    RETURNING 1
)
SELECT coalesce(sum(rows), 0) FROM folded
"""
# Deltas whose stage is gone (a stage deleted with triggers off): nothing to fold into.
_ORPHANS_SQL = """
DELETE FROM campaigns_stageassignmentcountdelta d
WHERE NOT EXISTS (SELECT 1 FROM campaigns_stage s WHERE s.id = d.stage_id) {where}
"""


# The worker writes' journal (``StageAssignmentJournal``, migration 0026): one row per
# one-row write, folded here into the summaries its row stands for, grouped: the
# counters' deltas (``n`` entered +1, left -1; ``changes`` one per side), the per-worker
# counts (unfolded), held work and handed-in minutes. One statement: the rows deleted
# are the rows added (a reader sees them in the journal or in the summaries, never in
# both or neither); writers only insert, so a row committed meanwhile waits for the next
# fold. Rows of stages gone are dropped. The number of journal rows folded.
JOURNAL_LOCK = 0x7161_6A6F_7572_6E6C  # "qajournl" in ASCII, a positive bigint
_JOURNAL_FOLD_SQL = """
WITH j AS (DELETE FROM campaigns_stageassignmentjournal d {where} RETURNING d.*),
s AS MATERIALIZED (SELECT j.* FROM j WHERE j.stage_id IN (SELECT id FROM campaigns_stage)),
sides AS MATERIALIZED (
    SELECT stage_id, worker_id, new_status AS status, 1 AS n FROM s WHERE new_status IS NOT NULL
    UNION ALL
    SELECT stage_id, worker_id, old_status, -1 FROM s WHERE old_status IS NOT NULL),
counts AS (INSERT INTO campaigns_stageassignmentcountdelta (stage_id, status, n, changes)
    SELECT stage_id, status, sum(n), count(*) FROM sides GROUP BY 1, 2 ORDER BY 1, 2),
workers AS (INSERT INTO campaigns_stageworkercount (stage_id, worker_id, status, n, folded)
    SELECT stage_id, worker_id, status, sum(n), false FROM sides GROUP BY 1, 2, 3
    HAVING sum(n) <> 0),
held AS (INSERT INTO campaigns_stageheldwork (stage_id, n, reward)
    SELECT stage_id, sum(held), sum(held * reward) FROM s WHERE held <> 0 GROUP BY 1
    HAVING sum(held) <> 0 OR sum(held * reward) <> 0),
minutes AS (INSERT INTO campaigns_stagesubmissionminute (stage_id, minute, n)
    SELECT stage_id, minute, sum(n) FROM (
        SELECT stage_id, new_minute AS minute, 1 AS n FROM s WHERE new_minute IS NOT NULL
        UNION ALL
        SELECT stage_id, old_minute, -1 FROM s WHERE old_minute IS NOT NULL) m
    GROUP BY 1, 2 HAVING sum(n) <> 0)
SELECT count(*) FROM j
"""


def stage_assignment_journal_fold(
    *, stage_ids: Iterable[int] | None = None, wait: bool = False
) -> int | None:
    """Fold the journal rows of ``stage_ids`` (every stage when None) into the assignment
    summaries (``_JOURNAL_FOLD_SQL``); the number of rows folded, or None when another
    fold holds the journal and ``wait`` is false (this one does nothing: that one or the
    next folds what is left). PostgreSQL only (SQLite writes no journal: 0).

    No number a reader sees changes. Runs in the caller's transaction (or its own).
    Locking: the advisory lock ``JOURNAL_LOCK`` (tried, or waited for with ``wait``: the
    rebuilds, which must count every row), then the journal rows it deletes."""
    connection = _primary()
    if connection.vendor != "postgresql":
        return 0
    ids = None if stage_ids is None else sorted(set(stage_ids))
    if ids == []:
        return 0
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        if wait:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [JOURNAL_LOCK])
        else:
            cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [JOURNAL_LOCK])
            if not cursor.fetchone()[0]:
                return None
        where = "" if ids is None else "WHERE d.stage_id = ANY(%s)"
        cursor.execute(_JOURNAL_FOLD_SQL.format(where=where), [] if ids is None else [ids])
        return int(cursor.fetchone()[0])


def _primary() -> BaseDatabaseWrapper:
    # The counters are written on the primary even when the read that asks for a
    # compaction went to a replica; nothing a reader sees changes, so the request is
    # not marked as having written (qaportal.dbrouter).
    return connections[DEFAULT_DB_ALIAS]


def _fold(connection: BaseDatabaseWrapper, ids: list[int] | None, *, wait: bool = False) -> int:
    """Fold the pending deltas of ``ids`` (every stage when None) into the counter rows,
    inside the caller's transaction and lock, the journal's rows first (waiting for
    another fold of the journal with ``wait``); the number of deltas folded."""
    if connection.vendor != "postgresql":
        return _fold_portable(ids)
    # The journal's rows first, into the deltas folded below (a fold elsewhere holding
    # the journal leaves them to it: they stay counted by the readers meanwhile).
    stage_assignment_journal_fold(stage_ids=ids, wait=wait)
    with connection.cursor() as cursor:
        where = "" if ids is None else "WHERE d.stage_id = ANY(%s)"
        cursor.execute(_STAGES_SQL.format(where=where), [] if ids is None else [ids])
        stages = [row[0] for row in cursor.fetchall()]
        folded = 0
        if stages:
            cursor.execute(_FOLD_SQL, [stages])
            folded = int(cursor.fetchone()[0])
        where = "" if ids is None else "AND d.stage_id = ANY(%s)"
        cursor.execute(_ORPHANS_SQL.format(where=where), [] if ids is None else [ids])
    return folded


def _fold_portable(ids: list[int] | None) -> int:
    """``_fold`` through the ORM, for a database whose writers are serialised (SQLite's
    triggers write no deltas; rows made by hand are folded all the same)."""
    pending = StageAssignmentCountDelta.objects.all()
    if ids is not None:
        pending = pending.filter(stage_id__in=ids)
    rows = list(pending.values_list("pk", "stage_id", "status", "n", "changes"))
    sums: dict[tuple[int, str], list[int]] = {}
    for _, stage_id, status, n, changes in rows:
        total = sums.setdefault((stage_id, status), [0, 0])
        total[0] += n
        total[1] += changes
    StageAssignmentCountDelta.objects.filter(pk__in=[row[0] for row in rows]).delete()
    for (stage_id, status), (n, changes) in sorted(sums.items()):
        updated = StageAssignmentCount.objects.filter(stage_id=stage_id, status=status).update(
            n=F("n") + n, changes=F("changes") + changes
        )
        if not updated:
            StageAssignmentCount.objects.create(
                stage_id=stage_id, status=status, n=n, changes=changes
            )
    return len(rows)


def stage_assignment_counts_compact(*, stage_ids: Iterable[int] | None = None) -> int | None:
    """Fold the pending counter deltas of ``stage_ids`` (every stage when None) into
    their ``StageAssignmentCount`` rows and delete them; the number of deltas folded, or
    None when another compaction or a rebuild holds the counters (this one does nothing
    and waits for nothing: the next one folds what is left).

    Idempotent, and safe beside any writer: writers only insert deltas, and a delta
    committed while this runs is left for the next compaction. Runs in its own
    transaction on the primary, or in the caller's (a read inside a service's
    transaction), whose commit then carries it. Locking: the advisory lock
    ``COUNTERS_LOCK`` (tried, not waited for); the deltas' stages FOR KEY SHARE, skipping
    those locked FOR UPDATE; then the deltas it deletes and the counter rows it writes,
    in (stage, status) order. Readers never wait for it.
    """
    ids = None if stage_ids is None else sorted(set(stage_ids))
    if ids == []:
        return 0
    connection = _primary()
    with transaction.atomic(using=connection.alias):
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [COUNTERS_LOCK])
                if not cursor.fetchone()[0]:
                    return None
        return _fold(connection, ids)


def stage_assignment_counts_rebuild(*, stage_ids: Iterable[int] | None = None) -> int:
    """Recompute the counters of ``stage_ids`` (every stage when None) from the
    assignments; returns the number of counter rows written. Their pending deltas are
    deleted (the rebuilt rows count everything).

    On PostgreSQL it waits for a running compaction (``COUNTERS_LOCK``), then locks the
    assignments against writes while counting (a concurrent write waits for the
    rebuild; the count includes every write committed before it). ``changes`` is kept
    (with the pending deltas' own) and grows by one on a rebuilt row, so caches keyed on
    it are refreshed.
    """
    ids = None if stage_ids is None else list(stage_ids)
    connection = _primary()
    with transaction.atomic(using=connection.alias):
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [COUNTERS_LOCK])
                # Writes to the assignments wait while counting; every delta committed
                # before the lock is in the count (and folded first, to keep `changes`).
                cursor.execute("LOCK TABLE campaigns_assignment IN SHARE MODE")
        _fold(connection, ids, wait=True)
        existing = StageAssignmentCount.objects.select_for_update()
        pending = StageAssignmentCountDelta.objects.all()
        if ids is not None:
            existing = existing.filter(stage_id__in=ids)
            pending = pending.filter(stage_id__in=ids)
        changes = {(r.stage_id, r.status): r.changes for r in existing}
        # Left only by a stage locked while folding: counted below all the same.
        for row in pending.values("stage_id", "status").annotate(c=Sum("changes")):
            key = (row["stage_id"], row["status"])
            changes[key] = changes.get(key, 0) + row["c"]
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
        pending.delete()
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
        # The journal's rows into the deltas compacted below.
        stage_assignment_journal_fold()
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
        # The journal's rows into the summaries (those of the assignment counters stay
        # with them as deltas; the rest are recounted below).
        stage_assignment_journal_fold(stage_ids=ids, wait=True)
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
