"""The workers of a campaign as one table: arm, qualifications, blocks, counts, gold
accuracy, agreement, median work time, paste share and earnings.

Reads only. A bounded number of queries whatever the number of workers: a handful
of GROUP BY queries over the campaign's assignments and ledger, one per lookup table
(arms, grants, blocks), plus ``validation.selectors.stage_quality`` once per stage
with work (gold accuracy and agreement are computed there and combined here; cached
per stage until its work or decisions change, see ``_stage_worker_quality``).
Workers appear by pseudonym; the external id is never part of a row.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal

from django.core.cache import cache
from django.db import connection
from django.db.models import BooleanField, Count, Q
from django.db.models.expressions import RawSQL

from campaigns.models import (
    HANDED_IN,
    Assignment,
    AssignmentStatus,
    Campaign,
    CampaignWorker,
    LedgerKind,
    LedgerStatus,
    QualificationGrant,
    Stage,
    Worker,
    WorkerBlock,
)
from campaigns.payments.totals import ledger_worker_earnings
from campaigns.work.selectors.counts import stage_work_versions
from campaigns.workforce.stats import medians_by
from qaportal.dbrouter import replica_reads
from validation.selectors import stage_quality

ZERO = Decimal("0.00")
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


def _among(column: str, ids: list[int]) -> Q:
    """``column IN ids`` for thousands of ids: on PostgreSQL one array parameter
    (``= ANY(%s)``; Django compiles an ``__in`` list placeholder by placeholder, half of
    the 5,000-worker table's CPU), elsewhere ``__in``."""
    if connection.vendor == "postgresql":
        # Unqualified: each query here filters one table by it.
        return Q(RawSQL(f"{column} = ANY(%s)", (ids,), output_field=BooleanField()))  # noqa: S611 (column: a constant of this module)
    return Q(**{f"{column}__in": ids})


def _rate(a: int, b: int) -> float | None:
    return a / b if b else None


@replica_reads()
def campaign_worker_table(
    *,
    campaign: Campaign,
    status: str | None = None,
    min_approval: float | None = None,
    blocked: bool | None = None,
    arm: str | None = None,
    ordering: str = "pseudonym",
) -> list[WorkerRow]:
    """One row per worker of ``campaign``, filtered and ordered.

    Filters: ``status`` keeps workers with at least one assignment in that status;
    ``min_approval`` (0 to 1) keeps workers whose approval rate (approved over
    decided) is at least that, leaving out workers with nothing decided; ``blocked``
    by an active block of the campaign's owner; ``arm`` by protocol arm. ``ordering``
    is one of ``ORDERING_FIELDS``, ``-`` first for descending; empty values sort last.
    """
    rows: dict[int, WorkerRow] = {}
    for worker_id, (by_status, pasted, measured, median) in _worker_work(campaign=campaign).items():
        row = WorkerRow(worker_id=worker_id, pseudonym="", provider="")
        row.assignments = sum(by_status.values())
        row.submitted = sum(by_status.get(s, 0) for s in HANDED_IN)
        row.approved = by_status.get(AssignmentStatus.APPROVED, 0)
        row.rejected = by_status.get(AssignmentStatus.REJECTED, 0)
        row.awaiting = by_status.get(AssignmentStatus.SUBMITTED, 0)
        row.approval_rate = _rate(row.approved, row.approved + row.rejected)
        row.statuses = set(by_status)
        row.paste_share = _rate(pasted, measured)
        row.median_work_seconds = median
        rows[worker_id] = row
    for worker_id, arm_name in CampaignWorker.objects.filter(campaign=campaign).values_list(
        "worker_id", "arm"
    ):
        rows.setdefault(worker_id, WorkerRow(worker_id=worker_id, pseudonym="", provider=""))
        rows[worker_id].arm = arm_name
    ids = list(rows)
    for pk, pseudonym, provider in Worker.objects.filter(_among("id", ids)).values_list(
        "pk", "pseudonym", "provider"
    ):
        rows[pk].pseudonym, rows[pk].provider = pseudonym, provider
    grants = (
        QualificationGrant.objects.filter(
            _among("worker_id", ids),
            revoked_at__isnull=True,
            qualification_type__owner_id=campaign.owner_id,
        )
        .order_by("qualification_type__name")
        .values_list("worker_id", "qualification_type_id", "qualification_type__name", "value")
    )
    for worker_id, type_id, name, value in grants:
        rows[worker_id].qualifications.append(QualificationHeld(type_id, name, value))
    for worker_id in WorkerBlock.objects.filter(
        _among("worker_id", ids), requester_id=campaign.owner_id, lifted_at__isnull=True
    ).values_list("worker_id", flat=True):
        rows[worker_id].blocked = True
    # From the ledger's running totals per worker (kept by its writer), not the entries.
    earnings = ledger_worker_earnings(
        campaign_id=campaign.pk,
        kinds=EARNING_KINDS,
        statuses=[LedgerStatus.COMMITTED, LedgerStatus.PAID],
    )
    for worker_id, total in earnings.items():
        if worker_id in rows:
            rows[worker_id].earnings = total
    _add_quality(campaign=campaign, rows=rows)

    table = [
        r
        for r in rows.values()
        if (status is None or status in r.statuses)
        and (blocked is None or r.blocked == blocked)
        and (arm is None or r.arm == arm)
        and (
            min_approval is None
            or (r.approval_rate is not None and r.approval_rate >= min_approval)
        )
    ]
    return _ordered(table, ordering)


# {worker_id: ({status: n}, pasted, with telemetry, median work seconds)}
WorkerWork = dict[int, tuple[dict[str, int], int, int, float | None]]


def _worker_work(*, campaign: Campaign) -> WorkerWork:
    """Each worker's assignments in the campaign by status, their submitted work with a
    paste and with telemetry at all, and the median work time of their submitted work:
    two grouped queries over the campaign's assignments, cached under the stages'
    assignment counters (``stage_work_versions``), which every change of these numbers
    moves (they change only with an assignment's status: its answer, telemetry and work
    time are stored as it is submitted)."""
    stage_ids = list(campaign.stages.values_list("pk", flat=True))
    versions = stage_work_versions(stage_ids=stage_ids)
    digest = hashlib.sha256(repr(sorted(versions.items())).encode()).hexdigest()[:32]
    key = f"qaportal:worker-work:{campaign.pk}:{digest}"
    found: WorkerWork | None = cache.get(key)
    if found is not None:
        return found
    work = Assignment.objects.filter(hit__stage_id__in=stage_ids).order_by()
    done = Q(status__in=HANDED_IN)
    by_worker: dict[int, dict[str, int]] = defaultdict(dict)
    pastes: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for c in work.values("worker_id", "status").annotate(
        n=Count("id"),
        with_telemetry=Count("id", filter=done & Q(telemetry__has_key="paste_count")),
        pasted=Count("id", filter=done & Q(telemetry__paste_count__gt=0)),
    ):
        by_worker[c["worker_id"]][c["status"]] = c["n"]
        pastes[c["worker_id"]][0] += c["pasted"]
        pastes[c["worker_id"]][1] += c["with_telemetry"]
    medians = medians_by(queryset=work.filter(done), group="worker_id", value="work_seconds")
    found = {
        worker_id: (counts, pastes[worker_id][0], pastes[worker_id][1], medians.get(worker_id))
        for worker_id, counts in by_worker.items()
    }
    cache.set(key, found, QUALITY_CACHE_SECONDS)
    return found


def stage_work_fingerprints(*, campaign: Campaign) -> dict[int, str]:
    """Per stage with work, a string that changes whenever a submission or decision does
    (or any other change of an assignment's status): from the assignment counters the
    database keeps, a few rows whatever the number of assignments."""
    return stage_work_versions(stage_ids=campaign.stages.values_list("pk", flat=True))


def _stage_worker_quality(
    *, stage: Stage, fingerprint: str
) -> dict[int, tuple[int, int, float | None, int]]:
    """``{worker_id: (gold_correct, gold_total, agreement, submitted)}`` of one stage from
    ``stage_quality``, cached for ``QUALITY_CACHE_SECONDS`` under the stage's fingerprint:
    new work or a new decision recomputes it at once; an edited gold answer shows
    within that time."""
    digest = hashlib.sha256(fingerprint.encode()).hexdigest()[:32]
    key = f"qaportal:worker-quality:{stage.pk}:{digest}"
    found = cache.get(key)
    if found is None:
        found = {
            wq.worker_id: (wq.gold_correct, wq.gold_total, wq.agreement, wq.submitted)
            for wq in stage_quality(stage=stage).workers
        }
        cache.set(key, found, QUALITY_CACHE_SECONDS)
    return found


def _add_quality(*, campaign: Campaign, rows: dict[int, WorkerRow]) -> None:
    """Gold accuracy and agreement from ``stage_quality``, once per stage with work.

    Gold: correct and total summed over stages. Agreement: the mean of the worker's
    per-stage agreement weighted by their submissions in each stage.
    """
    fingerprints = stage_work_fingerprints(campaign=campaign)
    stages = list(campaign.stages.filter(pk__in=list(fingerprints)).order_by("pk"))
    weighted: dict[int, list[tuple[float, int]]] = defaultdict(list)
    for stage in stages:
        per_worker = _stage_worker_quality(stage=stage, fingerprint=fingerprints[stage.pk])
        for worker_id, (correct, total, agreement, submitted) in per_worker.items():
            row = rows.get(worker_id)
            if row is None:
                continue
            row.gold_correct += correct
            row.gold_total += total
            if agreement is not None:
                weighted[worker_id].append((agreement, max(submitted, 1)))
    for row in rows.values():
        row.gold_accuracy = _rate(row.gold_correct, row.gold_total)
        parts = weighted.get(row.worker_id)
        if parts:
            row.agreement = sum(a * n for a, n in parts) / sum(n for _, n in parts)


def _ordered(table: list[WorkerRow], ordering: str) -> list[WorkerRow]:
    """Sort by one column (``-`` for descending), then pseudonym; empty values last."""
    descending = ordering.startswith("-")
    name = ordering.lstrip("-")
    if name not in ORDERING_FIELDS:
        raise ValueError(f"Unknown ordering {ordering!r}.")
    by_name = sorted(table, key=lambda r: r.pseudonym)
    present = [r for r in by_name if getattr(r, name) is not None]
    missing = [r for r in by_name if getattr(r, name) is None]
    # A stable sort, also in reverse: equal values keep the pseudonym order.
    present.sort(key=lambda r: getattr(r, name), reverse=descending)
    return present + missing
