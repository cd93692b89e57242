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

import logging
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.conf import settings
from django.db.models import Q

from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    HITStatus,
    Provider,
    ProviderSyncCursor,
)
from campaigns.platforms import provider_for
from campaigns.platforms.base import ProviderError
from campaigns.platforms.mturk.provider import MTurkProvider
from campaigns.platforms.mturk.records import HITRead, SyncStats, sync_batch_apply
from campaigns.platforms.review import assignments_not_rejecting, paid_assignments_approve
from qaportal.errors import DomainError

logger = logging.getLogger(__name__)

PAGES_PER_ROUND = 10  # assignment pages read per HIT before its batch is written


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
    candidates = assignments_not_rejecting(provider=Provider.MTURK, assignments=candidates)
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
        sync_batch_apply(reads, hits=hits, stats=stats)
        _approvals_follow([hits[r.hit_id] for r in reads], stats)
        for read in reads:
            if read.error:
                logger.warning("mturk sync of HIT %s: %s", read.hit_id, read.error)
        # HITs with more pages than a round continue from their token.
        pending = [r.hit_id for r in reads if r.token and not r.error]
        tokens = {r.hit_id: r.token for r in reads if r.token}
