"""The workers of a campaign as one table: arm, qualifications, blocks, counts, gold
accuracy, agreement, median work time, paste share and earnings.

Reads (and one snapshot it keeps). The table is filtered, sorted and cut in SQL, a page
at a time: a request builds only the page's rows, whatever the number of workers (two
queries for the page and its count, one for the page's qualifications). The counts come
from the per-worker counters, the earnings from the ledger's running totals; gold
accuracy, agreement (``validation.selectors.stage_quality``, a whole stage's answers),
median work time and paste share from a per-campaign snapshot that a Celery task
recomputes when the work moved past it (``worker_quality_schedule``): a request never
waits for it, outside eager mode. Workers appear by pseudonym; the external id is never
part of a row.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, overload

from django.conf import settings
from django.core.cache import cache
from django.db import connection, connections, router, transaction
from django.db.models import Count, Q
from django.utils import timezone

from campaigns.models import (
    HANDED_IN,
    HIT,
    Assignment,
    AssignmentStatus,
    Campaign,
    CampaignWorker,
    CampaignWorkerQuality,
    LedgerKind,
    LedgerStatus,
    LedgerWorkerTotal,
    QualificationGrant,
    StageAssignmentJournal,
    StageWorkerCount,
    Worker,
    WorkerBlock,
)
from campaigns.work.selectors.counts import stage_assignment_counts_full, stage_work_versions
from campaigns.workforce.stats import grouped_with_median
from qaportal.dbrouter import replica_reads
from qaportal.outbox import task_send
from validation.selectors import stage_quality

logger = logging.getLogger(__name__)

ZERO = Decimal("0.00")
CENT = Decimal("0.01")
QUALITY_CACHE_SECONDS = 600
EARNING_KINDS = (LedgerKind.REWARD, LedgerKind.BONUS, LedgerKind.QUIZ_PAYMENT)

# Columns the table can be ordered by (``-`` prefix for descending).
ORDERING_FIELDS = (
    "pseudonym",
    "arm",
    "submitted",
    "approved",
    "rejected",
    "awaiting",
    "approval_rate",
    "gold_accuracy",
    "agreement",
    "median_work_seconds",
    "paste_share",
    "earnings",
)


@dataclass
class QualificationHeld:
    qualification_type_id: int
    name: str
    value: int


@dataclass
class WorkerRow:
    worker_id: int
    pseudonym: str
    provider: str
    arm: str = ""
    blocked: bool = False
    qualifications: list[QualificationHeld] = field(default_factory=list)
    assignments: int = 0  # every assignment, whatever its status
    submitted: int = 0  # submitted, approved or rejected
    approved: int = 0
    rejected: int = 0
    awaiting: int = 0  # submitted, awaiting a decision
    approval_rate: float | None = None
    gold_correct: int = 0
    gold_total: int = 0
    gold_accuracy: float | None = None
    agreement: float | None = None
    median_work_seconds: float | None = None
    paste_share: float | None = None  # share of submitted work with at least one paste
    earnings: Decimal = ZERO  # rewards, bonuses and quiz pay, committed or paid
    statuses: set[str] = field(default_factory=set)


def campaign_worker_ids(*, campaign: Campaign) -> set[int]:
    """Workers with an assignment in the campaign or a place (arm) in it."""
    worked = (
        Assignment.objects.filter(hit__stage__campaign=campaign)
        .order_by()
        .values_list("worker_id", flat=True)
        .distinct()
    )
    placed = CampaignWorker.objects.filter(campaign=campaign).values_list("worker_id", flat=True)
    return set(worked) | set(placed)


def campaign_worker_get(*, campaign: Campaign, pseudonym: str) -> Worker:
    """The worker with ``pseudonym`` if they worked in (or were placed into) the campaign.

    ``Worker.DoesNotExist`` otherwise: a worker of another campaign is not found here.
    """
    worker = Worker.objects.get(pseudonym=pseudonym)
    in_campaign = (
        Assignment.objects.filter(hit__stage__campaign=campaign, worker=worker).exists()
        or CampaignWorker.objects.filter(campaign=campaign, worker=worker).exists()
    )
    if not in_campaign:
        raise Worker.DoesNotExist(pseudonym)
    return worker


def campaign_workers_by_pseudonym(
    *, campaign: Campaign, pseudonyms: list[str]
) -> dict[str, Worker]:
    """The workers of ``campaign`` among ``pseudonyms``, by pseudonym (three queries).

    Pseudonyms of workers who are not in the campaign are simply absent.
    """
    workers = list(Worker.objects.filter(pseudonym__in=pseudonyms))
    worked = Assignment.objects.filter(hit__stage__campaign=campaign, worker__in=workers)
    placed = CampaignWorker.objects.filter(campaign=campaign, worker__in=workers)
    inside = set(worked.order_by().values_list("worker_id", flat=True).distinct()) | set(
        placed.values_list("worker_id", flat=True)
    )
    return {w.pseudonym: w for w in workers if w.pk in inside}


def _rate(a: int, b: int) -> float | None:
    return a / b if b else None


# {worker_id: (gold_correct, gold_total, agreement, median work seconds, paste share)}
Quality = dict[int, tuple[int, int, float | None, float | None, float | None]]

REFRESH_TASK = "campaigns.worker_quality_refresh"
# A refresh waits at least this long after the last one, and this many times as long as
# the last one took (a campaign of a million assignments takes a minute or more).
REFRESH_MIN_SECONDS = 60
REFRESH_SPACING = 4


def campaign_worker_table(
    *,
    campaign: Campaign,
    status: str | None = None,
    min_approval: float | None = None,
    blocked: bool | None = None,
    arm: str | None = None,
    ordering: str = "pseudonym",
    page_hint: tuple[int, int] | None = None,
) -> WorkerTable:
    """The workers of ``campaign``, filtered and ordered, one page at a time.

    Filters: ``status`` keeps workers with at least one assignment in that status;
    ``min_approval`` (0 to 1) keeps workers whose approval rate (approved over
    decided) is at least that, leaving out workers with nothing decided; ``blocked``
    by an active block of the campaign's owner; ``arm`` by protocol arm. ``ordering``
    is one of ``ORDERING_FIELDS``, ``-`` first for descending; empty values sort last,
    ties by pseudonym (then id).

    A lazy sequence (``count()``, ``len()``, slices, iteration) for ``Paginator``: each
    slice is one SQL query that filters, sorts and cuts the campaign's workers in the
    database and builds only that slice's rows. The counts come from the per-worker
    counters (``StageWorkerCount``; counted on the assignments on SQLite), the earnings
    from the ledger's running totals (``LedgerWorkerTotal``), gold accuracy, agreement,
    median time and paste share from the campaign's snapshot (``CampaignWorkerQuality``),
    which this schedules a refresh of when the work moved past it or it is older than
    ``QUALITY_CACHE_SECONDS`` (``worker_quality_schedule``).

    ``page_hint`` (offset, limit): the slice the caller will ask for; ``count()`` then
    reads it with the count in one query (the paginator counts before it slices).
    """
    if ordering.lstrip("-") not in ORDERING_FIELDS:
        raise ValueError(f"Unknown ordering {ordering!r}.")
    if status is not None and status not in _STATUSES:
        raise ValueError(f"Unknown status {status!r}.")
    stage_ids = list(campaign.stages.values_list("pk", flat=True))
    as_of = worker_quality_schedule(campaign=campaign, stage_ids=stage_ids)
    return WorkerTable(
        campaign=campaign,
        stage_ids=stage_ids,
        page_hint=page_hint,
        status=status,
        min_approval=min_approval,
        blocked=blocked,
        arm=arm,
        ordering=ordering,
        quality_as_of=as_of,
    )


class WorkerTable:
    """``campaign_worker_table``'s rows: counted and sliced in SQL (see there)."""

    def __init__(
        self,
        *,
        campaign: Campaign,
        stage_ids: list[int],
        page_hint: tuple[int, int] | None,
        status: str | None,
        min_approval: float | None,
        blocked: bool | None,
        arm: str | None,
        ordering: str,
        quality_as_of: datetime | None,
    ) -> None:
        self.campaign = campaign
        self.ordering = ordering
        self.quality_as_of = quality_as_of
        self._stage_ids = stage_ids
        self._filters = (status, min_approval, blocked, arm)
        self._hint = page_hint
        self._count: int | None = None
        self._sql: tuple[str, list[Any]] | None = None
        self._read: dict[tuple[int, int | None], list[WorkerRow]] = {}

    def count(self) -> int:
        if self._count is None and self._hint is not None:
            self._rows(offset=self._hint[0], limit=self._hint[1])
        if self._count is None:
            sql, params = self._table_sql()
            found = _fetch(f"SELECT COUNT(*) AS n FROM ({sql}) t", params)  # noqa: S608
            self._count = int(found[0]["n"])
        return self._count

    def __len__(self) -> int:
        return self.count()

    @overload
    def __getitem__(self, index: int) -> WorkerRow: ...

    @overload
    def __getitem__(self, index: slice) -> list[WorkerRow]: ...

    def __getitem__(self, index: int | slice) -> WorkerRow | list[WorkerRow]:
        if isinstance(index, int):
            found = self[index : index + 1] if index >= 0 else list(self)[index:][:1]
            if not found:
                raise IndexError(index)
            return found[0]
        if index.step not in (None, 1) or (index.start or 0) < 0 or (index.stop or 0) < 0:
            return list(self)[index]
        start = index.start or 0
        limit = None if index.stop is None else max(index.stop - start, 0)
        return self._rows(offset=start, limit=limit)

    def __iter__(self) -> Iterator[WorkerRow]:
        return iter(self._rows(offset=0, limit=None))

    def _table_sql(self) -> tuple[str, list[Any]]:
        if self._sql is None:
            self._sql = _table_sql(self.campaign, self._stage_ids, *self._filters)
        return self._sql

    def _rows(self, *, offset: int, limit: int | None) -> list[WorkerRow]:
        if limit == 0:
            return []
        for (start, size), read in self._read.items():
            # The same start, and a read as long or that reached the table's end.
            if start == offset and (size is None or (limit is not None and size >= limit)):
                return read[:limit]
            if start == offset and size is not None and len(read) < size:
                return read[:limit]
        sql, params = self._table_sql()
        key = self.ordering.lstrip("-")
        way = "DESC" if self.ordering.startswith("-") else "ASC"
        tie = 'pseudonym COLLATE "C"' if connection.vendor == "postgresql" else "pseudonym"
        # Empty values last, ties by pseudonym (unique), whichever the direction.
        order = f"{tie} {way}" if key == "pseudonym" else f"{key} {way} NULLS LAST, {tie}"
        if limit is None:  # SQLite has no OFFSET without a LIMIT; -1 is none
            cut, extra = " LIMIT %s OFFSET %s", [-1 if connection.vendor == "sqlite" else None]
        else:
            cut, extra = " LIMIT %s OFFSET %s", [limit]
        # The count of the whole table with the page (a window over every row).
        found = _fetch(
            f"SELECT t.*, COUNT(*) OVER () AS table_count FROM ({sql}) t "  # noqa: S608 (built here)
            f"ORDER BY {order}{cut}",
            [*params, *extra, offset],
        )
        if found:
            self._count = int(found[0]["table_count"])
        rows = [_row(r) for r in found]
        _add_qualifications(campaign=self.campaign, rows=rows)
        self._read[(offset, limit)] = rows
        return rows


def _fetch(sql: str, params: list[Any]) -> list[dict[str, Any]]:
    """Rows of ``sql`` as dicts, from the database the router reads workers from (a
    replica when one is set and nothing was written before, see ``replica_reads``)."""
    with replica_reads():
        alias = router.db_for_read(Worker)
    with connections[alias].cursor() as cursor:
        cursor.execute(sql, params)
        names = [c[0] for c in cursor.description]
        return [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]


_STATUSES = [s.value for s in AssignmentStatus]


def _table_sql(
    campaign: Campaign,
    stage_ids: list[int],
    status: str | None,
    min_approval: float | None,
    blocked: bool | None,
    arm: str | None,
) -> tuple[str, list[Any]]:
    """One row per worker of the campaign with every column the table shows but the
    qualifications, filtered (``WHERE``), for the caller to count or order and cut."""
    stage_ids = stage_ids or [0]
    marks = ", ".join(["%s"] * len(stage_ids))
    # The statuses shown, and the one filtered by.
    statuses = [str(x) for x in HANDED_IN]
    if status is not None and status not in statuses:
        statuses.append(status)
    real = "double precision" if connection.vendor == "postgresql" else "REAL"
    if connection.vendor == "postgresql":
        # The per-worker counters' deltas (summed), kept by the assignments' triggers,
        # and the worker writes' journal rows not yet folded into them (migration 0026):
        # the status entered +1, the status left -1.
        journal = StageAssignmentJournal._meta.db_table
        source = (
            f"SELECT worker_id, status, n FROM {StageWorkerCount._meta.db_table} "  # noqa: S608
            f"WHERE stage_id IN ({marks}) "
            f"UNION ALL SELECT worker_id, new_status, 1 FROM {journal} "
            f"WHERE stage_id IN ({marks}) AND new_status IS NOT NULL "
            f"UNION ALL SELECT worker_id, old_status, -1 FROM {journal} "
            f"WHERE stage_id IN ({marks}) AND old_status IS NOT NULL"
        )
        stage_params = [*stage_ids, *stage_ids, *stage_ids]
    else:
        source = (
            f"SELECT a.worker_id, a.status, 1 AS n FROM {Assignment._meta.db_table} a "  # noqa: S608
            f"JOIN {HIT._meta.db_table} h ON h.id = a.hit_id WHERE h.stage_id IN ({marks})"
        )
        stage_params = list(stage_ids)
    params: list[Any] = [*statuses, *stage_params]
    by_status = ", ".join(
        f"CAST(SUM(CASE WHEN status = %s THEN n ELSE 0 END) AS bigint) AS s_{s}" for s in statuses
    )
    kinds, paid = list(EARNING_KINDS), [LedgerStatus.COMMITTED, LedgerStatus.PAID]
    sql = f"""
        WITH counts AS (
            SELECT worker_id, {by_status}, CAST(SUM(n) AS bigint) AS total
            FROM ({source}) c GROUP BY worker_id HAVING SUM(n) > 0
        ),
        earned AS (
            SELECT worker_id, SUM(amount) AS amount FROM {LedgerWorkerTotal._meta.db_table}
            WHERE campaign_id = %s AND kind IN ({", ".join(["%s"] * len(kinds))})
                AND status IN ({", ".join(["%s"] * len(paid))})
            GROUP BY worker_id HAVING SUM(n) > 0
        ),
        members AS (
            SELECT worker_id FROM counts
            UNION SELECT worker_id FROM {CampaignWorker._meta.db_table} WHERE campaign_id = %s
        )
        SELECT w.id, w.pseudonym, w.provider, COALESCE(cw.arm, '') AS arm,
            COALESCE(c.total, 0) AS assignments,
            {" + ".join(f"COALESCE(c.s_{s}, 0)" for s in HANDED_IN)} AS submitted,
            COALESCE(c.s_approved, 0) AS approved,
            COALESCE(c.s_rejected, 0) AS rejected,
            COALESCE(c.s_submitted, 0) AS awaiting,
            CASE WHEN c.s_approved + c.s_rejected > 0
                THEN CAST(c.s_approved AS {real}) / (c.s_approved + c.s_rejected) END
                AS approval_rate,
            CASE WHEN EXISTS (
                SELECT 1 FROM {WorkerBlock._meta.db_table} b WHERE b.worker_id = w.id
                    AND b.requester_id = %s AND b.lifted_at IS NULL
            ) THEN 1 ELSE 0 END AS blocked,
            COALESCE(q.gold_correct, 0) AS gold_correct,
            COALESCE(q.gold_total, 0) AS gold_total,
            q.gold_accuracy, q.agreement, q.median_work_seconds, q.paste_share,
            COALESCE(e.amount, 0) AS earnings,
            {", ".join(f"COALESCE(c.s_{s}, 0) AS s_{s}" for s in statuses)}
        FROM members m
        JOIN {Worker._meta.db_table} w ON w.id = m.worker_id
        LEFT JOIN counts c ON c.worker_id = m.worker_id
        LEFT JOIN {CampaignWorker._meta.db_table} cw
            ON cw.campaign_id = %s AND cw.worker_id = m.worker_id
        LEFT JOIN {CampaignWorkerQuality._meta.db_table} q
            ON q.campaign_id = %s AND q.worker_id = m.worker_id
        LEFT JOIN earned e ON e.worker_id = m.worker_id
    """  # noqa: S608 (tables and columns of this module's models; values are parameters)
    params += [campaign.pk, *kinds, *paid, campaign.pk, campaign.owner_id, campaign.pk, campaign.pk]
    where: list[str] = []
    more: list[Any] = []
    if status is not None:
        where.append(f"s_{status} > 0")
    if min_approval is not None:
        where.append("approval_rate >= %s")
        more.append(min_approval)
    if blocked is not None:
        where.append("blocked = %s")
        more.append(1 if blocked else 0)
    if arm is not None:
        where.append("arm = %s")
        more.append(arm)
    if where:
        sql = f"SELECT * FROM ({sql}) f WHERE {' AND '.join(where)}"  # noqa: S608
    return sql, [*params, *more]


def _row(r: dict[str, Any]) -> WorkerRow:
    return WorkerRow(
        worker_id=r["id"],
        pseudonym=r["pseudonym"],
        provider=r["provider"],
        arm=r["arm"],
        blocked=bool(r["blocked"]),
        assignments=int(r["assignments"]),
        submitted=int(r["submitted"]),
        approved=int(r["approved"]),
        rejected=int(r["rejected"]),
        awaiting=int(r["awaiting"]),
        approval_rate=_float(r["approval_rate"]),
        gold_correct=int(r["gold_correct"]),
        gold_total=int(r["gold_total"]),
        gold_accuracy=_float(r["gold_accuracy"]),
        agreement=_float(r["agreement"]),
        median_work_seconds=_float(r["median_work_seconds"]),
        paste_share=_float(r["paste_share"]),
        earnings=Decimal(str(r["earnings"])).quantize(CENT),
        statuses={s for s in _STATUSES if r.get(f"s_{s}")},
    )


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _add_qualifications(*, campaign: Campaign, rows: list[WorkerRow]) -> None:
    """The owner's unrevoked qualifications of the page's workers (one query)."""
    by_id = {r.worker_id: r for r in rows}
    if not by_id:
        return
    with replica_reads():
        grants = list(
            QualificationGrant.objects.filter(
                worker_id__in=list(by_id),
                revoked_at__isnull=True,
                qualification_type__owner_id=campaign.owner_id,
            )
            .order_by("qualification_type__name")
            .values_list("worker_id", "qualification_type_id", "qualification_type__name", "value")
        )
    for worker_id, type_id, name, value in grants:
        by_id[worker_id].qualifications.append(QualificationHeld(type_id, name, value))


# --- The slow numbers: a snapshot per campaign, refreshed in the background ---------------


def _fingerprint(stage_ids: list[int]) -> str:
    """The stages' work versions (``stage_work_versions``) as one digest: "" for none.
    Where the database keeps no assignment counters (a SQLite database whose triggers
    are gone), the stages' assignments counted by status instead (embedded scale)."""
    versions: Any = stage_work_versions(stage_ids=stage_ids)
    if not versions and connection.vendor != "postgresql":
        versions = stage_assignment_counts_full(stage_ids=stage_ids)
    if not versions:
        return ""
    flat = sorted((k, sorted(v.items()) if isinstance(v, dict) else v) for k, v in versions.items())
    return hashlib.sha256(repr(flat).encode()).hexdigest()[:32]


def _refresh_lock(campaign_id: int) -> str:
    return f"qaportal:worker-quality-refresh:{campaign_id}"


def _empty_key(campaign_id: int) -> str:
    return f"qaportal:worker-quality-empty:{campaign_id}"


def worker_quality_schedule(*, campaign: Campaign, stage_ids: list[int]) -> datetime | None:
    """Schedule ``REFRESH_TASK`` for ``campaign`` when its snapshot is behind its work or
    older than ``QUALITY_CACHE_SECONDS`` (once: a lock in the cache holds until the run
    ends), no sooner than ``REFRESH_MIN_SECONDS`` and ``REFRESH_SPACING`` times the last
    run's duration after the last run. Returns when the snapshot was computed (None:
    never). In eager mode (no Celery worker: the embedded default, tests) it runs here."""
    fingerprint = _fingerprint(stage_ids)
    state = (
        CampaignWorkerQuality.objects.filter(campaign=campaign)
        .values_list("fingerprint", "computed_at", "seconds")
        .first()
    )
    now = timezone.now()
    if state is None and (not fingerprint or cache.get(_empty_key(campaign.pk)) == fingerprint):
        return None  # no work, or none with numbers to show: nothing to compute
    if state is not None:
        done_fingerprint, computed_at, seconds = state
        age = (now - computed_at).total_seconds()
        if done_fingerprint == fingerprint and age < QUALITY_CACHE_SECONDS:
            return computed_at
        wait = max(REFRESH_MIN_SECONDS, REFRESH_SPACING * seconds) - age
    else:
        computed_at, wait = None, 0.0
    countdown = max(wait, 0.0)
    lock = _refresh_lock(campaign.pk)
    if cache.add(lock, 1, timeout=int(countdown) + QUALITY_CACHE_SECONDS):
        try:
            task_send(REFRESH_TASK, campaign.pk, countdown=countdown or None)
        except Exception as exc:  # the broker is down: the next reader tries again
            cache.delete(lock)
            logger.warning("worker quality refresh not sent (%s)", type(exc).__name__)
        else:
            if settings.CELERY_TASK_ALWAYS_EAGER:
                return (
                    CampaignWorkerQuality.objects.filter(campaign=campaign)
                    .values_list("computed_at", flat=True)
                    .first()
                )
    return computed_at


def worker_quality_refresh(*, campaign_id: int) -> int:
    """Recompute ``campaign_id``'s snapshot (``CampaignWorkerQuality``): every stage's
    ``stage_quality`` and the workers' handed-in work, then the rows replaced in one
    transaction. Returns the rows written. The body of ``REFRESH_TASK``."""
    try:
        campaign = Campaign.objects.filter(pk=campaign_id).first()
        if campaign is None:
            return 0
        started, now = time.perf_counter(), timezone.now()
        stage_ids = list(campaign.stages.values_list("pk", flat=True))
        fingerprint = _fingerprint(stage_ids)  # before reading: later work shows as behind
        found = _worker_quality(campaign=campaign)
        seconds = time.perf_counter() - started
        rows = [
            CampaignWorkerQuality(
                campaign_id=campaign_id,
                worker_id=worker_id,
                gold_correct=correct,
                gold_total=total,
                gold_accuracy=_rate(correct, total),
                agreement=agreement,
                median_work_seconds=median,
                paste_share=paste_share,
                fingerprint=fingerprint,
                computed_at=now,
                seconds=seconds,
            )
            for worker_id, (correct, total, agreement, median, paste_share) in found.items()
        ]
        with transaction.atomic():
            CampaignWorkerQuality.objects.filter(campaign_id=campaign_id).delete()
            CampaignWorkerQuality.objects.bulk_create(rows, batch_size=2000)
        if not rows:  # nothing to keep a row for: remember the work it was computed for
            cache.set(_empty_key(campaign_id), fingerprint, QUALITY_CACHE_SECONDS)
        return len(rows)
    finally:
        cache.delete(_refresh_lock(campaign_id))


def _worker_quality(*, campaign: Campaign) -> Quality:
    """Gold and agreement from ``stage_quality`` once per stage with work (gold: correct
    and total summed over stages; agreement: the mean of the worker's per-stage
    agreement weighted by their submissions in each), the median work time and the
    paste share of their handed-in work (one grouped query)."""
    stage_ids = list(campaign.stages.values_list("pk", flat=True))
    handed_in = Assignment.objects.filter(hit__stage_id__in=stage_ids, status__in=HANDED_IN)
    work = grouped_with_median(
        queryset=handed_in,
        group="worker_id",
        value="work_seconds",
        with_telemetry=Count("id", filter=Q(telemetry__has_key="paste_count")),
        pasted=Count("id", filter=Q(telemetry__paste_count__gt=0)),
    )
    gold: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    weighted: dict[int, list[tuple[float, int]]] = defaultdict(list)
    worked = set(stage_work_versions(stage_ids=stage_ids))
    for stage in campaign.stages.filter(pk__in=list(worked)).order_by("pk"):
        for wq in stage_quality(stage=stage).workers:
            gold[wq.worker_id][0] += wq.gold_correct
            gold[wq.worker_id][1] += wq.gold_total
            if wq.agreement is not None:
                weighted[wq.worker_id].append((wq.agreement, max(wq.submitted, 1)))
    out: Quality = {}
    for worker_id in set(work) | set(gold):
        w = work.get(worker_id, {})
        parts = weighted.get(worker_id)
        out[worker_id] = (
            gold[worker_id][0] if worker_id in gold else 0,
            gold[worker_id][1] if worker_id in gold else 0,
            sum(a * n for a, n in parts) / sum(n for _, n in parts) if parts else None,
            w.get("median"),
            _rate(w.get("pasted", 0), w.get("with_telemetry", 0)),
        )
    return out


def stage_work_fingerprints(*, campaign: Campaign) -> dict[int, str]:
    """Per stage with work, a string that changes whenever a submission or decision does
    (or any other change of an assignment's status): from the assignment counters the
    database keeps, a few rows whatever the number of assignments."""
    return stage_work_versions(stage_ids=campaign.stages.values_list("pk", flat=True))
