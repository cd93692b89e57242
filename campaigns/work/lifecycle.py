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
    hits_places_add({hit_id: count})


def hits_places_add(added: Mapping[int, int]) -> None:
    """``hit_places_add`` for each HIT of ``added`` (hit id -> places): one UPDATE per
    distinct count, one to reopen the completed ones."""
    for count, hit_ids in _by_count(added).items():
        HIT.objects.filter(pk__in=hit_ids).update(
            max_assignments=F("max_assignments") + count, places_left=F("places_left") + count
        )
    HIT.objects.filter(pk__in=list(added), status=HITStatus.COMPLETED).update(
        status=HITStatus.PUBLISHED
    )


def _by_count(counts: Mapping[int, int]) -> dict[int, list[int]]:
    """``{hit id: count}`` as ``{count: [hit ids]}``, ids in order (one UPDATE per count)."""
    by_count: dict[int, list[int]] = {}
    for hit_id, count in sorted(counts.items()):
        by_count.setdefault(count, []).append(hit_id)
    return by_count


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
        by_platform: dict[str, list[PlacesWanted]] = {}
        for request in wanted:
            by_platform.setdefault(locked[request.hit_id].provider, []).append(request)
        for provider, requests in by_platform.items():
            platform_for(provider).places_add(hits=locked, wanted=requests)
    return locked


def places_open(*, locked: Mapping[int, HIT], wanted: Sequence[PlacesWanted]) -> None:
    """Places opened at once: ``Platform.places_add`` of a platform whose HITs are open
    when made (the local workforce). Each new key's operation written done and its places
    opened; a key already written adds nothing (asked twice, or twice in ``wanted``).
    The HITs are locked, so their new maxima are known before the operations are written.
    A key another transaction wrote meanwhile (one not tied to these HITs' locks) makes
    the INSERT fail once it committed: the keys are read again and the rest written."""
    for attempt in range(2):
        new = _keys_not_written(locked=locked, wanted=wanted)
        if not new:
            return
        added: Counter[int] = Counter()
        for request in new.values():
            added[request.hit_id] += request.count
        now = timezone.now()
        operations = [
            ProviderOperation(
                provider=provider,
                idempotency_key=key,
                kind=OperationKind.ADD_ASSIGNMENTS,
                campaign_id=locked[request.hit_id].stage.campaign_id,
                payload={
                    "hit_id": request.hit_id,
                    "count": request.count,
                    "reason": request.reason,
                },
                state=OperationState.DONE,
                result={
                    "max_assignments": locked[request.hit_id].max_assignments
                    + added[request.hit_id]
                },
                completed_at=now,
            )
            for (provider, key), request in new.items()
        ]
        try:
            with transaction.atomic():
                ProviderOperation.objects.bulk_create(operations)
            break
        except IntegrityError:
            if attempt:
                raise
    hits_places_add(added)
    for hit_id, count in added.items():
        hit = locked[hit_id]
        hit.max_assignments += count
        hit.places_left += count
        if hit.status == HITStatus.COMPLETED:
            hit.status = HITStatus.PUBLISHED
    for request in new.values():
        logger.info("HIT %s: %d more place(s) (%s)", request.hit_id, request.count, request.reason)


def _keys_not_written(
    *, locked: Mapping[int, HIT], wanted: Sequence[PlacesWanted]
) -> dict[tuple[str, str], PlacesWanted]:
    """The requests of ``wanted`` whose (provider, key) has no operation yet, the first of
    each key."""
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
    return new


# --- Returning and expiry ------------------------------------------------------------


def _places_free(freed: Mapping[int, int]) -> None:
    """Give ``freed[hit_id]`` places back to each HIT (one UPDATE per distinct count).

    Call in the transaction that moved the assignments out of a holding state.
    """
    for count, hit_ids in _by_count(freed).items():
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
