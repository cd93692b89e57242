"""Writing what an MTurk sync read: per-assignment identity and MTurk's view, per-HIT
cursors (``campaigns.platforms.mturk.sync`` reads; this module writes).

Every batch is written with a constant number of queries: one read of the batch's
assignments (locked, in id order), one ``UPDATE … FROM (VALUES …)`` per 1,000 changed
rows, one upsert of the cursors.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from campaigns.models import (
    HIT,
    Assignment,
    OperationKind,
    Provider,
    ProviderOperation,
    ProviderSyncCursor,
)
from campaigns.platforms.mturk.checks import short_worker
from campaigns.platforms.operations import operation_effect
from campaigns.platforms.review import submission_identity
from campaigns.work.submission import STORED_STATES

logger = logging.getLogger(__name__)

UPDATE_ROWS = 1000  # assignment rows per UPDATE statement


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
    return submission_identity(
        assignment=assignment,
        platform_worker_id=record["worker_id"] if record is not None else None,
        missing="MTurk lists no submission for this id.",
        other="The MTurk assignment belongs to another worker.",
    )


def sync_batch_apply(reads: list[HITRead], *, hits: dict[str, int], stats: SyncStats) -> None:
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
            elif a.status not in STORED_STATES or a.hit_id not in complete:
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
        if a.status not in STORED_STATES and record["answers"] is not None:
            # MTurk has a submission our page never stored: keep MTurk's copy for review.
            mturk["answers"] = record["answers"]
    if details.get("identity") == identity and details.get("mturk", {}) == mturk:
        return False
    if identity["status"] != "confirmed" and a.status in STORED_STATES:
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


@operation_effect(OperationKind.ADD_ASSIGNMENTS, provider="mturk")
def _places_added_resync(op: ProviderOperation) -> None:
    """The HIT takes work again: the next syncs read it again."""
    mturk_cursors_unsettle(hit_pks=[int((op.payload or {})["hit_id"])])


@operation_effect(OperationKind.EXPIRE, provider="mturk")
def _hits_resumed_resync(op: ProviderOperation) -> None:
    """HITs re-opened after a pause are read again by the next syncs."""
    if (op.payload or {}).get("mode") == "resume":
        mturk_cursors_unsettle(provider_hit_ids=list((op.result or {}).get("updated") or []))
