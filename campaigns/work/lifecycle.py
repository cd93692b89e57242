"""Places on HITs: adding them (``hit_add_assignments``), and giving them back
when an assignment is returned or expires.

Locking: the order the work room takes its locks in is in ``campaigns/work/__init__.py``.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from campaigns.design.platform import platform_for
from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    HITStatus,
    OperationKind,
    OperationState,
    ProviderOperation,
    Worker,
)
from qaportal.errors import DomainError

logger = logging.getLogger(__name__)


class AssignmentClosedError(DomainError):
    """The assignment can no longer be submitted (returned, expired, abandoned).

    ``assignment`` is the closed assignment as loaded, when the service had it.
    """

    code = "assignment_closed"
    assignment: Assignment | None = None


# --- More places on a HIT ------------------------------------------------------------


def hit_places_add(*, hit_id: int, count: int) -> None:
    """The database effect of added assignments, whichever provider carried them out:
    ``count`` more places (and a larger maximum) on the HIT, a completed HIT reopened.

    Call it in the transaction that records the operation as done.
    """
    HIT.objects.filter(pk=hit_id).update(
        max_assignments=F("max_assignments") + count, places_left=F("places_left") + count
    )
    HIT.objects.filter(pk=hit_id, status=HITStatus.COMPLETED).update(status=HITStatus.PUBLISHED)


def hit_add_assignments(*, hit: HIT, count: int = 1, reason: str, key: str) -> HIT:
    """Add ``count`` places to a published HIT (escalation, early-stopping extension).

    Idempotent per ``key`` (say ``escalate:item:42:3``): the request is written as a
    ``ProviderOperation`` (kind ``add_assignments``) whose (provider, key) is
    unique, so asking twice adds the places once. On the local workforce the
    places open at once and the operation is done; on a paid provider it stays
    pending for the provider's executor, and the places open when it is done.

    Locking: the HIT row (after no other lock of this module, so any order is safe).
    """
    if count < 1:
        raise DomainError("Add at least one assignment.", errors={"count": ["must be >= 1"]})
    with transaction.atomic():
        locked = HIT.objects.select_for_update().select_related("stage").get(pk=hit.pk)
        platform = platform_for(locked)
        if platform.pays_workers:
            platform.places_add(hit=locked, count=count, reason=reason, key=key)
            return locked
        operation, created = ProviderOperation.objects.get_or_create(
            provider=locked.provider,
            idempotency_key=key,
            defaults={
                "kind": OperationKind.ADD_ASSIGNMENTS,
                "campaign_id": locked.stage.campaign_id,
                "payload": {"hit_id": locked.pk, "count": count, "reason": reason},
                "state": OperationState.DONE,
            },
        )
        if not created:
            return locked
        hit_places_add(hit_id=locked.pk, count=count)
        locked.refresh_from_db(fields=["max_assignments", "places_left", "status"])
        operation.result = {"max_assignments": locked.max_assignments}
        operation.completed_at = timezone.now()
        operation.save(update_fields=["result", "completed_at", "updated_at"])
    logger.info("HIT %s: %d more place(s) (%s)", locked.pk, count, reason)
    return locked


# --- Returning and expiry ------------------------------------------------------------


def _places_free(freed: Mapping[int, int]) -> None:
    """Give ``freed[hit_id]`` places back to each HIT (one UPDATE per distinct count).

    Call in the transaction that moved the assignments out of a holding state.
    """
    by_count: dict[int, list[int]] = {}
    for hit_id, count in sorted(freed.items()):
        by_count.setdefault(count, []).append(hit_id)
    for count, hit_ids in by_count.items():
        HIT.objects.filter(pk__in=hit_ids).update(places_left=F("places_left") + count)


def assignment_return(*, assignment_id: int, worker: Worker) -> Assignment:
    """The worker gives the assignment back; its place frees up. Idempotent.

    ``Assignment.DoesNotExist`` if the worker does not hold it; ``AssignmentClosedError``
    once it is submitted. Locking: the assignment row, then its HIT row (``places_left + 1``).
    """
    with transaction.atomic():
        assignment = Assignment.objects.select_for_update().get(pk=assignment_id, worker=worker)
        if assignment.status == AssignmentStatus.RETURNED:
            return assignment
        if assignment.status != AssignmentStatus.ACCEPTED:
            raise AssignmentClosedError(
                "This task was already submitted or closed; it cannot be returned.",
                errors={"status": [assignment.status]},
            )
        assignment.status = AssignmentStatus.RETURNED
        assignment.save(update_fields=["status"])
        _places_free({assignment.hit_id: 1})
    return assignment


def assignments_expire(*, now: Any = None) -> int:
    """Expire accepted assignments past their deadline (their places free up); the count.

    Idempotent. Locking: the expired assignment rows (in id order), then their HIT
    rows (``places_left`` + the places freed). The locking SELECT waits for a row a
    concurrent submit or return holds and re-checks its status once it is
    released, so a just-submitted or returned assignment is never expired.
    """
    now = now or timezone.now()
    with transaction.atomic():
        rows = list(
            Assignment.objects.select_for_update()
            .filter(status=AssignmentStatus.ACCEPTED, deadline__isnull=False, deadline__lte=now)
            .order_by("pk")
            .values_list("pk", "hit_id")
        )
        if not rows:
            return 0
        Assignment.objects.filter(pk__in=[pk for pk, _ in rows]).update(
            status=AssignmentStatus.EXPIRED
        )
        _places_free(Counter(hit_id for _, hit_id in rows))
    return len(rows)
