"""Places on HITs: adding them (``hit_add_assignments``), and giving them back
when an assignment is returned or expires.

Locking: the order the work room takes its locks in is in ``campaigns/work/__init__.py``.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
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
    return hits_add_assignments(
        wanted=[PlacesWanted(hit_id=hit.pk, count=count, reason=reason, key=key)]
    )[hit.pk]


@dataclass(frozen=True)
class PlacesWanted:
    """``count`` more places on HIT ``hit_id``, asked once per ``key`` (``hit_add_assignments``)."""

    hit_id: int
    count: int
    reason: str
    key: str


def hits_add_assignments(
    *, wanted: Sequence[PlacesWanted], locked: Mapping[int, HIT] | None = None
) -> dict[int, HIT]:
    """``hit_add_assignments`` for many HITs at once (a linking stage's top-up, a round of
    agreement checks): each request as there, with the reads and writes of the local
    workforce's shared (a handful of statements instead of six per HIT). The HITs as
    locked (after their places opened, on the local workforce), by id.

    ``locked``: the HITs of ``wanted``, with their stages, as the caller locked and read
    them in its transaction (``FOR UPDATE``), so that they are not read again; they are
    updated in place.

    Locking: the HIT rows, in id order (after no other lock of this module).
    """
    for request in wanted:
        if request.count < 1:
            raise DomainError("Add at least one assignment.", errors={"count": ["must be >= 1"]})
    if not wanted:
        return {}
    with transaction.atomic():
        hit_ids = sorted({request.hit_id for request in wanted})
        if locked is None:
            locked = HIT.objects.select_for_update().select_related("stage").in_bulk(hit_ids)
        else:
            locked = {hit_id: locked[hit_id] for hit_id in hit_ids}
        missing = set(hit_ids) - set(locked)
        if missing:
            raise HIT.DoesNotExist(f"No HIT {min(missing)}.")
        local: list[PlacesWanted] = []
        for request in wanted:
            hit = locked[request.hit_id]
            platform = platform_for(hit)
            if platform.pays_workers:
                platform.places_add(
                    hit=hit, count=request.count, reason=request.reason, key=request.key
                )
            else:
                local.append(request)
        if local:
            _places_open(locked=locked, wanted=local)
    return locked


def _places_open(*, locked: dict[int, HIT], wanted: list[PlacesWanted]) -> None:
    """The local workforce's places: each new key's operation written done and its places
    opened; a key already written adds nothing (asked twice, or twice in ``wanted``).
    The HITs are locked, so their new maxima are known before the operations are written."""
    keys = {(locked[r.hit_id].provider, r.key) for r in wanted}
    done = set(
        ProviderOperation.objects.filter(
            provider__in={provider for provider, _ in keys},
            idempotency_key__in={key for _, key in keys},
        ).values_list("provider", "idempotency_key")
    )
    new: dict[tuple[str, str], PlacesWanted] = {}
    for request in wanted:
        provider_key = (locked[request.hit_id].provider, request.key)
        if provider_key not in done:
            new.setdefault(provider_key, request)
    if not new:
        return
    now = timezone.now()

    def operation(request: PlacesWanted, **extra: Any) -> dict[str, Any]:
        return {
            "kind": OperationKind.ADD_ASSIGNMENTS,
            "campaign_id": locked[request.hit_id].stage.campaign_id,
            "payload": {"hit_id": request.hit_id, "count": request.count, "reason": request.reason},
            "state": OperationState.DONE,
            **extra,
        }

    def maxima() -> dict[int, int]:
        added: Counter[int] = Counter()
        for request in new.values():
            added[request.hit_id] += request.count
        return {hit_id: locked[hit_id].max_assignments + n for hit_id, n in added.items()}

    after = maxima()
    try:
        with transaction.atomic():
            ProviderOperation.objects.bulk_create(
                ProviderOperation(
                    provider=provider,
                    idempotency_key=key,
                    **operation(
                        request,
                        result={"max_assignments": after[request.hit_id]},
                        completed_at=now,
                    ),
                )
                for (provider, key), request in new.items()
            )
    except IntegrityError:
        # Written meanwhile under a key not tied to these HITs' locks: one at a time, as
        # ``get_or_create`` would (the places of a key the other side wrote stay shut).
        created = []
        for (provider, key), request in list(new.items()):
            row, fresh = ProviderOperation.objects.get_or_create(
                provider=provider, idempotency_key=key, defaults=operation(request)
            )
            if fresh:
                created.append(row.pk)
            else:
                del new[(provider, key)]
        after = maxima()
        for row in ProviderOperation.objects.filter(pk__in=created):
            row.result = {"max_assignments": after[row.payload["hit_id"]]}
            row.completed_at = now
            row.save(update_fields=["result", "completed_at", "updated_at"])
    added = {hit_id: top - locked[hit_id].max_assignments for hit_id, top in after.items()}
    _hits_places_add(added)
    for hit_id, count in added.items():
        hit = locked[hit_id]
        hit.max_assignments += count
        hit.places_left += count
        if hit.status == HITStatus.COMPLETED:
            hit.status = HITStatus.PUBLISHED
    for request in new.values():
        logger.info("HIT %s: %d more place(s) (%s)", request.hit_id, request.count, request.reason)


def _hits_places_add(added: Mapping[int, int]) -> None:
    """``hit_places_add`` for each HIT of ``added`` (one UPDATE per distinct count)."""
    by_count: dict[int, list[int]] = {}
    for hit_id, count in sorted(added.items()):
        by_count.setdefault(count, []).append(hit_id)
    for count, hit_ids in by_count.items():
        HIT.objects.filter(pk__in=hit_ids).update(
            max_assignments=F("max_assignments") + count, places_left=F("places_left") + count
        )
    HIT.objects.filter(pk__in=list(added), status=HITStatus.COMPLETED).update(
        status=HITStatus.PUBLISHED
    )


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
