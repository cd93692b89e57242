"""Syncing MTurk's assignments back onto qaportal's records.

The worker page stores each submission here (an ``Assignment`` whose
``provider_assignment_id`` is MTurk's AssignmentId) before posting to MTurk. The
sync reads what MTurk holds — ``ListReviewableHITs``, and the HITs with page
submissions still waiting for confirmation — then each HIT's assignments
(``ListAssignmentsForHIT``, 100 a page) and records, per assignment, MTurk's status,
accept and submit times and work time, and whether MTurk's WorkerId matches the
worker who submitted on our page (``review_details["identity"]``). A page submission
MTurk does not list once the HIT has been read to its end is flagged ``unconfirmed``;
identity from the URL is a claim, and only ``confirmed`` assignments are ever paid.

Cost: HITs are read in batches (a page of reviewable HITs, ≤100), their assignment
pages fetched by a few threads, and each batch written with a constant number of
queries (one read of the batch's assignments, one bulk update, one bulk upsert of
the per-HIT cursors), whatever its size. A HIT whose read stops half-way (a crash, a
transient error) keeps its ``NextToken`` in its cursor and the next sync resumes
there; every write is idempotent.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    HITStatus,
    OperationKind,
    OperationState,
    Provider,
    ProviderOperation,
    ProviderSyncCursor,
)
from campaigns.providers import provider_for
from campaigns.providers.base import ProviderError
from campaigns.providers.mturk import MTurkProvider, short_worker
from campaigns.services.errors import DomainError
from campaigns.services.provider_review import paid_assignments_approve

logger = logging.getLogger(__name__)

STORED = (AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED, AssignmentStatus.REJECTED)
UPDATE_ROWS = 1000  # assignment rows per UPDATE statement
PAGES_PER_ROUND = 10  # assignment pages read per HIT before its batch is written


@dataclass
class SyncStats:
    hits: int = 0
    assignments: int = 0  # MTurk assignments read
    changed: int = 0  # qaportal assignments updated
    confirmed: int = 0
    flagged: int = 0  # mismatch or unconfirmed
    unmatched: int = 0  # on MTurk, not stored by our page
    errors: int = 0
    api_calls: int = 0
    approvals_requested: int = 0
    skipped: int = 0  # settled HITs not read again
    unmatched_ids: list[str] = field(default_factory=list)


@dataclass
class HITRead:
    hit_id: str
    records: list[dict[str, Any]]
    token: str | None  # where to resume; None once read to the end
    complete: bool  # read from its start to its end in this pass
    error: str = ""
    reviewable: bool = False  # listed by ListReviewableHITs in this pass


def _read_hit(provider: MTurkProvider, hit_id: str, token: str | None) -> HITRead:
    records: list[dict[str, Any]] = []
    complete = token is None
    try:
        for _ in range(PAGES_PER_ROUND):
            page, token = provider.assignments_page(hit_id=hit_id, token=token)
            records.extend(page)
            if not token:
                return HITRead(hit_id, records, None, complete)
    except ProviderError as exc:
        return HITRead(hit_id, records, token, False, str(exc))
    return HITRead(hit_id, records, token, False)


def _settled(read: HITRead) -> bool:
    """A Reviewable HIT read whole whose every assignment MTurk has decided: nothing
    more can happen to it (until assignments are added or its expiry moves on, which
    unsettle it: ``mturk_cursors_unsettle``)."""
    return (
        read.reviewable
        and read.complete
        and not read.error
        and bool(read.records)
        and all(r["status"] in ("Approved", "Rejected") for r in read.records)
    )


def mturk_cursors_unsettle(
    *, hit_pks: Iterable[int] = (), provider_hit_ids: Iterable[str] = ()
) -> int:
    """Make the next syncs read these HITs again (assignments were added, or the HITs
    re-opened); the cursors changed. One UPDATE."""
    ids = set(provider_hit_ids) | {
        str(h)
        for h in HIT.objects.filter(pk__in=list(hit_pks)).values_list("provider_hit_id", flat=True)
        if h
    }
    if not ids:
        return 0
    return ProviderSyncCursor.objects.filter(
        provider=Provider.MTURK, scope__in=[f"hit:{h}" for h in ids]
    ).update(state={"token": None, "settled": False}, updated_at=timezone.now())


def _identity(assignment: Assignment, record: dict[str, Any] | None) -> dict[str, Any]:
    if record is None:
        return {"status": "unconfirmed", "reason": "MTurk lists no submission for this id."}
    if record["worker_id"] != assignment.worker.external_id:
        return {"status": "mismatch", "reason": "The MTurk assignment belongs to another worker."}
    return {"status": "confirmed"}


def _apply(reads: list[HITRead], *, hits: dict[str, int], stats: SyncStats) -> None:
    """Write one batch: a read of its assignments, a bulk update, the cursors' upsert."""
    now = timezone.now()
    by_id = {r["assignment_id"]: r for read in reads for r in read.records}
    complete = {hits[read.hit_id] for read in reads if read.complete and not read.error}
    with transaction.atomic():
        rows = list(
            Assignment.objects.select_for_update(of=("self",))
            .filter(provider=Provider.MTURK, hit_id__in=[hits[r.hit_id] for r in reads])
            .select_related("worker")
            .only(
                "pk",
                "hit_id",
                "status",
                "provider_assignment_id",
                "submitted_at",
                "work_seconds",
                "review_details",
                "worker__external_id",
            )
            .order_by("pk")
        )
        seen: set[str] = set()
        changed: list[Assignment] = []
        for a in rows:
            record = by_id.get(a.provider_assignment_id or "")
            if record is not None:
                seen.add(record["assignment_id"])
            elif a.status not in STORED or a.hit_id not in complete:
                continue  # not read this round, or not submitted on our page
            if _record(a, record):
                changed.append(a)
        for start in range(0, len(changed), UPDATE_ROWS):
            _update_rows(changed[start : start + UPDATE_ROWS])
        ProviderSyncCursor.objects.bulk_create(
            [
                ProviderSyncCursor(
                    provider=Provider.MTURK,
                    scope=f"hit:{read.hit_id}",
                    state={
                        "token": read.token,
                        "read": len(read.records),
                        "error": read.error,
                        "settled": _settled(read),
                        "synced_at": now.isoformat(),
                    },
                    updated_at=now,
                )
                for read in reads
            ],
            update_conflicts=True,
            unique_fields=["provider", "scope"],
            update_fields=["state", "updated_at"],
        )
    unmatched = [i for i in by_id if i not in seen]
    stats.assignments += len(by_id)
    stats.changed += len(changed)
    stats.confirmed += sum(
        1 for a in changed if a.review_details["identity"]["status"] == "confirmed"
    )
    stats.flagged += sum(
        1 for a in changed if a.review_details["identity"]["status"] != "confirmed"
    )
    stats.unmatched += len(unmatched)
    stats.unmatched_ids.extend(unmatched[:100])
    stats.errors += sum(1 for r in reads if r.error)


def _approvals_follow(hit_pks: list[int], stats: SyncStats) -> None:
    """Ask for the approval of confirmed submissions that MTurk approved by itself (its
    auto-approval delay passed: the ledger must show the money) or that a stage with an
    ``auto_approve`` rule may pay; one bulk approval per batch. Assignments whose
    approval or rejection was already requested are left out. One query when there
    is nothing to approve.
    """
    candidates = list(
        Assignment.objects.filter(
            provider=Provider.MTURK,
            hit_id__in=hit_pks,
            status=AssignmentStatus.SUBMITTED,
            review_details__identity__status="confirmed",
        )
        .filter(
            Q(review_details__mturk__status="Approved")
            | Q(
                review_details__mturk__status="Submitted",
                hit__stage__review_rules__contains=[{"rule": "auto_approve"}],
            )
        )
        .order_by("pk")
    )
    if not candidates:
        return
    rejecting = set(
        ProviderOperation.objects.filter(
            provider=Provider.MTURK,
            kind=OperationKind.REJECT,
            payload__assignment_id__in=[a.pk for a in candidates],
        )
        .exclude(state=OperationState.FAILED)
        .values_list("payload__assignment_id", flat=True)
    )
    candidates = [a for a in candidates if a.pk not in rejecting]
    if not candidates:
        return
    try:
        op = paid_assignments_approve(
            assignments=candidates, source="mturk:sync", reason="approved on MTurk or by rule"
        )
    except DomainError as exc:  # a decision raced the sync: the next sync tries again
        logger.warning("mturk: approvals after sync refused: %s", exc)
        return
    if op is not None:
        stats.approvals_requested += len((op.payload or {}).get("assignment_ids") or [1])


def _update_rows(rows: list[Assignment]) -> None:
    """One ``UPDATE … FROM (VALUES …)`` for ``rows`` (Django's ``bulk_update`` builds a
    CASE per field whose cost grows with the square of the rows)."""
    table = Assignment._meta.db_table
    values = ", ".join(["(%s, %s::jsonb, %s::timestamptz, %s::integer)"] * len(rows))
    params: list[Any] = []
    for a in rows:
        params += [a.pk, json.dumps(a.review_details), a.submitted_at, a.work_seconds]
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} AS a SET review_details = v.details, "  # noqa: S608 - no input
            "submitted_at = v.submitted, work_seconds = v.seconds "
            f"FROM (VALUES {values}) AS v(id, details, submitted, seconds) WHERE a.id = v.id",
            params,
        )


def _record(a: Assignment, record: dict[str, Any] | None) -> bool:
    """Put MTurk's view of ``a`` on it; True when something changed."""
    details = dict(a.review_details or {})
    identity = _identity(a, record)
    mturk = dict(details.get("mturk") or {})
    if record is not None:
        mturk.update(
            status=record["status"],
            worker=short_worker(record["worker_id"]),
            accept_time=record["accept_time"],
            submit_time=record["submit_time"],
            work_seconds=record["work_seconds"],
        )
        if record["answer_error"]:
            mturk["answer_error"] = record["answer_error"]
        if a.status not in STORED and record["answers"] is not None:
            # MTurk has a submission our page never stored: keep MTurk's copy for review.
            mturk["answers"] = record["answers"]
    if details.get("identity") == identity and details.get("mturk", {}) == mturk:
        return False
    if identity["status"] != "confirmed" and a.status in STORED:
        logger.warning("mturk: assignment %s flagged (%s)", a.pk, identity["status"])
    details["identity"] = identity
    if mturk:
        details["mturk"] = mturk
    a.review_details = details
    if record is not None and record["submit_time"] and a.submitted_at is None:
        a.submitted_at = datetime.fromisoformat(record["submit_time"])
    if record is not None and a.work_seconds is None and record["work_seconds"] is not None:
        a.work_seconds = record["work_seconds"]
    return True


def _batches(provider: MTurkProvider, *, hit_type_ids: Iterable[str]) -> Iterator[list[str]]:
    for hit_type_id in hit_type_ids:
        yield from provider.reviewable_hits(hit_type_id=hit_type_id)


def mturk_hits_sync(
    *, campaign_id: int | None = None, hit_ids: list[str] | None = None, threads: int | None = None
) -> SyncStats:
    """Sync MTurk assignments onto qaportal's (see the module docstring); the counts.

    Reads, per campaign (with its own credentials or the environment's): the
    Reviewable HITs of its HIT types, then the HITs holding page submissions that
    MTurk has not confirmed yet — or only ``hit_ids`` (MTurk HIT ids). A transient
    error on one HIT is counted and logged; the others still sync, and that HIT's
    cursor keeps its place. Idempotent. Locking: each batch's assignment rows, in id
    order, one transaction per batch.
    """
    threads = threads or int(getattr(settings, "MTURK_SYNC_THREADS", 4))
    published = HIT.objects.filter(provider=Provider.MTURK, provider_hit_id__isnull=False)
    if campaign_id is not None:
        published = published.filter(stage__campaign_id=campaign_id)
    if hit_ids is not None:
        published = published.filter(provider_hit_id__in=hit_ids)
    campaigns = sorted(set(published.values_list("stage__campaign_id", flat=True)))
    stats = SyncStats()
    for cid in campaigns:
        try:
            provider = provider_for(Provider.MTURK, campaign_id=cid)
        except ProviderError as exc:
            logger.warning("mturk sync of campaign %s: %s", cid, exc)
            stats.errors += 1
            continue
        assert isinstance(provider, MTurkProvider)
        ours = {
            str(hit_id): pk
            for hit_id, pk in published.filter(stage__campaign_id=cid).values_list(
                "provider_hit_id", "pk"
            )
        }
        calls_before = provider.client.calls
        with ThreadPoolExecutor(max_workers=threads) as pool:
            for batch, reviewable in _campaign_batches(provider, cid=cid, ours=ours, only=hit_ids):
                _sync_batch(provider, pool, batch, reviewable, hits=ours, stats=stats)
        stats.api_calls += provider.client.calls - calls_before
    logger.info(
        "mturk sync: %d HITs, %d assignments read, %d changed, %d flagged, %d unmatched",
        stats.hits,
        stats.assignments,
        stats.changed,
        stats.flagged,
        stats.unmatched,
    )
    return stats


def _campaign_batches(
    provider: MTurkProvider, *, cid: int, ours: dict[str, int], only: list[str] | None
) -> Iterator[tuple[list[str], bool]]:
    """Batches (≤100) of the campaign's HIT ids to read, each with whether MTurk listed
    them as Reviewable: first the Reviewable pages, then HITs with page submissions not
    confirmed yet (or only ``only``)."""
    if only is not None:
        wanted = [h for h in only if h in ours]
        for i in range(0, len(wanted), 100):
            yield wanted[i : i + 100], False
        return
    done: set[str] = set()
    group_ids = sorted(
        set(
            HIT.objects.filter(provider=Provider.MTURK, stage__campaign_id=cid)
            .exclude(provider_group_id="")
            .values_list("provider_group_id", flat=True)
        )
    )
    for page in _batches(provider, hit_type_ids=group_ids):
        batch = [h for h in page if h in ours and h not in done]
        done.update(batch)
        if batch:
            yield batch, True
    waiting = sorted(
        {
            str(h)
            for h in Assignment.objects.filter(
                provider=Provider.MTURK,
                hit__stage__campaign_id=cid,
                hit__status=HITStatus.PUBLISHED,
                status=AssignmentStatus.SUBMITTED,
            )
            .exclude(review_details__identity__status="confirmed")
            .values_list("hit__provider_hit_id", flat=True)
        }
        - done
    )
    for i in range(0, len(waiting), 100):
        yield waiting[i : i + 100], False


def _sync_batch(
    provider: MTurkProvider,
    pool: ThreadPoolExecutor,
    batch: list[str],
    reviewable: bool,
    *,
    hits: dict[str, int],
    stats: SyncStats,
) -> None:
    """Read and write one batch; a Reviewable HIT settled at an earlier sync is skipped."""
    cursors = dict(
        ProviderSyncCursor.objects.filter(
            provider=Provider.MTURK, scope__in=[f"hit:{h}" for h in batch]
        ).values_list("scope", "state")
    )
    states = {h: cursors.get(f"hit:{h}") or {} for h in batch}
    pending = [h for h in batch if not (reviewable and states[h].get("settled"))]
    stats.skipped += len(batch) - len(pending)
    tokens = {h: states[h].get("token") for h in pending}
    stats.hits += len(pending)
    while pending:
        starts = [tokens.get(h) for h in pending]
        reads = list(pool.map(lambda h, t: _read_hit(provider, h, t), pending, starts))
        for read in reads:
            read.reviewable = reviewable
        _apply(reads, hits=hits, stats=stats)
        _approvals_follow([hits[r.hit_id] for r in reads], stats)
        for read in reads:
            if read.error:
                logger.warning("mturk sync of HIT %s: %s", read.hit_id, read.error)
        # HITs with more pages than a round continue from their token.
        pending = [r.hit_id for r in reads if r.token and not r.error]
        tokens = {r.hit_id: r.token for r in reads if r.token}
