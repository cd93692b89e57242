"""The ledger's running totals (``LedgerStageTotal``, ``LedgerWorkerTotal``): reading,
folding and rebuilding the deltas ``campaigns.payments.ledger`` appends.

A total is the sum of its rows: readers sum a campaign's rows (``ledger_stage_totals``,
``ledger_worker_earnings``), which are few once folded. ``ledger_totals_compact`` folds
every group into one row (beat, every minute); ``ledger_totals_rebuild`` recounts them
from the ledger (a load that bypassed ``payments.ledger``, a restore, a repair).
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

from django.db import connection, transaction
from django.db.models import Count, Q, Sum

from campaigns.models import LedgerEntry, LedgerStageTotal, LedgerWorkerTotal
from qaportal.money import CENT

# (model, its grouping columns)
_TABLES: tuple[tuple[type[LedgerStageTotal] | type[LedgerWorkerTotal], tuple[str, ...]], ...] = (
    (LedgerStageTotal, ("campaign_id", "stage_id", "kind", "status")),
    (LedgerWorkerTotal, ("campaign_id", "worker_id", "kind", "status")),
)


def _money(value: object) -> Decimal:
    # SQLite's sums of decimals come back with float digits: cents, as the ledger keeps.
    return Decimal(str(value)).quantize(CENT)


def ledger_stage_totals(
    *, campaign_id: int, statuses: Iterable[str]
) -> dict[tuple[int | None, str, str], Decimal]:
    """``{(stage_id, kind, status): amount}`` of the campaign's entries in ``statuses``
    (the ledger's ``Sum("amount")`` by stage, kind and status), from the totals."""
    rows = (
        LedgerStageTotal.objects.filter(campaign_id=campaign_id, status__in=list(statuses))
        .order_by()
        .values("stage_id", "kind", "status")
        .annotate(total=Sum("amount"), entries=Sum("n"))
        .filter(entries__gt=0)
    )
    return {(r["stage_id"], r["kind"], r["status"]): _money(r["total"]) for r in rows}


def ledger_worker_earnings(
    *, campaign_id: int, kinds: Iterable[str], statuses: Iterable[str]
) -> dict[int, Decimal]:
    """``{worker_id: amount}``: the campaign's entries of ``kinds`` in ``statuses`` per
    worker, from the totals (workers with none left out)."""
    rows = (
        LedgerWorkerTotal.objects.filter(
            campaign_id=campaign_id, kind__in=list(kinds), status__in=list(statuses)
        )
        .order_by()
        .values("worker_id")
        .annotate(total=Sum("amount"), entries=Sum("n"))
        .filter(entries__gt=0)
    )
    return {r["worker_id"]: _money(r["total"]) for r in rows}


def ledger_totals_full(*, campaign_id: int) -> tuple[dict, dict]:
    """What the totals must equal, counted on the ledger (for checks and tests): entries
    and amount by (stage, kind, status) and by (worker, kind, status)."""
    entries = LedgerEntry.objects.filter(campaign_id=campaign_id).order_by()
    by_stage = {
        (r["stage_id"], r["kind"], r["status"]): (r["n"], _money(r["total"]))
        for r in entries.values("stage_id", "kind", "status").annotate(
            n=Count("pk"), total=Sum("amount")
        )
    }
    by_worker = {
        (r["worker_id"], r["kind"], r["status"]): (r["n"], _money(r["total"]))
        for r in entries.filter(worker__isnull=False)
        .values("worker_id", "kind", "status")
        .annotate(n=Count("pk"), total=Sum("amount"))
    }
    return by_stage, by_worker


def ledger_totals_of(*, campaign_id: int) -> tuple[dict, dict]:
    """The totals as ``ledger_totals_full`` shapes them (groups with no entry left out)."""
    out = []
    for model, columns in _TABLES:
        group = columns[1:]
        rows = (
            model.objects.filter(campaign_id=campaign_id)
            .order_by()
            .values(*group)
            .annotate(entries=Sum("n"), total=Sum("amount"))
            .filter(~Q(entries=0))
        )
        out.append({tuple(r[c] for c in group): (r["entries"], _money(r["total"])) for r in rows})
    return out[0], out[1]


def ledger_totals_compact() -> int:
    """Fold every group of the totals into one row (rows that sum to nothing go); the
    number of rows removed.

    PostgreSQL: one statement per table (``DELETE … RETURNING`` feeding the INSERT of the
    sums), so a reader sees the rows before or after, never half; writers only INSERT
    and are not blocked. Concurrent compactions wait for each other (an advisory lock).
    """
    removed = 0
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(hashtext('ledger_totals_compact'))")
                for model, columns in _TABLES:
                    table, names = model._meta.db_table, ", ".join(columns)
                    same = " AND ".join(f"t.{c} IS NOT DISTINCT FROM g.{c}" for c in columns)
                    # Only groups of more than one row (or summing to nothing) are
                    # rewritten: a folded table is read, not rewritten, every minute.
                    cursor.execute(
                        f"WITH gone AS (DELETE FROM {table} t USING ("  # noqa: S608
                        f"SELECT {names} FROM {table} GROUP BY {names} "
                        "HAVING count(*) > 1 OR (sum(n) = 0 AND sum(amount) = 0)) g "
                        f"WHERE {same} RETURNING {', '.join('t.' + c for c in columns)}, "
                        "t.n, t.amount), "
                        f"kept AS (INSERT INTO {table} ({names}, n, amount) "
                        f"SELECT {names}, sum(n), sum(amount) FROM gone GROUP BY {names} "
                        "HAVING sum(n) <> 0 OR sum(amount) <> 0 RETURNING 1) "
                        "SELECT (SELECT count(*) FROM gone) - (SELECT count(*) FROM kept)"
                    )
                    removed += cursor.fetchone()[0]
            return removed
        # SQLite: one writer at a time; the rows up to the last id are folded.
        for model, columns in _TABLES:
            last = model.objects.order_by("-pk").values_list("pk", flat=True).first()
            if last is None:
                continue
            fields = list(columns)
            sums = list(
                model.objects.filter(pk__lte=last)
                .order_by()
                .values(*fields)
                .annotate(total_n=Sum("n"), total=Sum("amount"))
            )
            removed += model.objects.filter(pk__lte=last).delete()[0]
            kept = [
                model(**{f: r[f] for f in fields}, n=r["total_n"], amount=r["total"])
                for r in sums
                if r["total_n"] or r["total"]
            ]
            model.objects.bulk_create(kept)  # type: ignore[arg-type]
            removed -= len(kept)
    return removed


def ledger_totals_rebuild() -> int:
    """Recount the totals from the ledger; the number of rows written.

    On PostgreSQL the ledger is locked against writes while counting (a writer waits for
    the rebuild; the count includes every entry committed before it)."""
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("LOCK TABLE campaigns_ledgerentry IN SHARE MODE")
        written = 0
        for model, columns in _TABLES:
            table, names = model._meta.db_table, ", ".join(columns)
            where = "WHERE worker_id IS NOT NULL" if "worker_id" in columns else ""
            cursor.execute(f"DELETE FROM {table}")  # noqa: S608
            cursor.execute(
                f"INSERT INTO {table} ({names}, n, amount) "  # noqa: S608
                f"SELECT {names}, count(*), sum(amount) FROM campaigns_ledgerentry {where} "
                f"GROUP BY {names}"
            )
            written += cursor.rowcount
    return written


__all__ = [
    "ledger_stage_totals",
    "ledger_totals_compact",
    "ledger_totals_full",
    "ledger_totals_of",
    "ledger_totals_rebuild",
    "ledger_worker_earnings",
]
