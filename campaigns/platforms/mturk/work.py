"""Work arriving through MTurk's ExternalQuestion frame: the HIT a worker opened and
the assignment MTurk gave them.

MTurk allocates: a worker who accepts a HIT gets an ``assignmentId`` from MTurk and
opens our page with it. ``mturk_assignment_accept`` records that assignment once
(``provider_assignment_id`` is unique per provider), whatever the browser resends.
The ``workerId`` in the URL is a claim: the assignment's identity stays
``unconfirmed`` until the sync with MTurk confirms it, and nothing unconfirmed is
paid (``campaigns.platforms.review``).
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.db.models.functions import Greatest
from django.utils import timezone

from campaigns.models import HIT, Assignment, AssignmentStatus, HITStatus, Provider, Worker
from campaigns.work.allocation import NoWorkAvailableError, WorkerNotAllowedError
from campaigns.work.selectors.access import WORKABLE_STATES

logger = logging.getLogger(__name__)

PREVIEW_ASSIGNMENT_ID = "ASSIGNMENT_ID_NOT_AVAILABLE"
UNCONFIRMED = {
    "status": "unconfirmed",
    "reason": "workerId from the MTurk page URL; not yet confirmed by MTurk.",
}


def short_id(value: str) -> str:
    """Enough of a platform id to tell log lines apart, never the whole id."""
    return f"{value[:4]}…" if len(value) > 4 else "…"


def mturk_hit_get(*, provider_hit_id: str) -> HIT | None:
    """The MTurk HIT with this id, with its stage and campaign; None if unknown."""
    return (
        HIT.objects.filter(provider=Provider.MTURK, provider_hit_id=provider_hit_id)
        .select_related("stage__campaign")
        .first()
    )


HOLDING = (
    AssignmentStatus.SUBMITTED,
    AssignmentStatus.APPROVED,
    AssignmentStatus.REJECTED,
)


def _places_held(*, hit: HIT, now: datetime) -> int:
    """Places of ``hit`` taken: work handed in, and work accepted and not yet past its
    deadline (past it, MTurk has reopened the place)."""
    return Assignment.objects.filter(
        Q(status__in=HOLDING) | Q(status=AssignmentStatus.ACCEPTED, deadline__gt=now), hit=hit
    ).count()


def mturk_assignment_accept(*, hit: HIT, worker_external_id: str, assignment_id: str) -> Assignment:
    """The qaportal assignment of MTurk assignment ``assignment_id`` on ``hit``, made once.

    A reload or a resent request returns the same assignment. An assignment id
    already held by another worker or HIT is refused (``WorkerNotAllowedError``):
    URL parameters are claims. A worker's earlier, never submitted assignment on the
    same HIT is marked returned (MTurk gave them a new one, so the old one was
    returned or abandoned there). New assignments are refused on an expired or
    disposed HIT and while the campaign is not in pilot or live
    (``NoWorkAvailableError``), when the HIT's places are all held (an assignment id
    beyond them is made up), and for workers the requester blocked. The identity
    is recorded as unconfirmed.

    Locking: the HIT row, then the assignment rows of this HIT and worker.
    """
    with transaction.atomic():
        worker, _ = Worker.objects.get_or_create(
            provider=Provider.MTURK, external_id=worker_external_id
        )
        locked = HIT.objects.select_for_update().select_related("stage__campaign").get(pk=hit.pk)
        existing = (
            Assignment.objects.filter(provider=Provider.MTURK, provider_assignment_id=assignment_id)
            .select_related("hit__stage__campaign", "worker")
            .first()
        )
        if existing is not None:
            if existing.worker_id != worker.pk or existing.hit_id != locked.pk:
                raise WorkerNotAllowedError("This MTurk assignment belongs to someone else.")
            return existing
        campaign = locked.stage.campaign
        if locked.status in (HITStatus.EXPIRED, HITStatus.DISPOSED):
            raise NoWorkAvailableError("This HIT has expired.")
        if campaign.state not in WORKABLE_STATES:
            raise NoWorkAvailableError("This campaign is not taking work at the moment.")
        if worker.blocks.filter(requester_id=campaign.owner_id, lifted_at__isnull=True).exists():
            raise WorkerNotAllowedError("You can no longer take tasks from this requester.")
        now = timezone.now()
        stale = list(
            Assignment.objects.select_for_update().filter(
                hit=locked, worker=worker, status=AssignmentStatus.ACCEPTED
            )
        )
        for old in stale:
            old.status = AssignmentStatus.RETURNED
            old.save(update_fields=["status"])
        if _places_held(hit=locked, now=now) >= locked.max_assignments:
            # MTurk never hands out more assignments than a HIT has places: an id
            # beyond them is made up (or MTurk reopened a place it has not told us of
            # yet; the worker can try again after the next sync).
            raise NoWorkAvailableError("This HIT has no places left.")
        try:
            with transaction.atomic():
                assignment = Assignment.objects.create(
                    hit=locked,
                    worker=worker,
                    provider=Provider.MTURK,
                    provider_assignment_id=assignment_id,
                    status=AssignmentStatus.ACCEPTED,
                    accepted_at=now,
                    deadline=now + locked.stage.assignment_duration,
                    review_details={"identity": dict(UNCONFIRMED)},
                )
        except IntegrityError:
            raise WorkerNotAllowedError(
                "You already hold this HIT under another assignment."
            ) from None
        # MTurk keeps the count of places; ours follows it (never below zero).
        HIT.objects.filter(pk=locked.pk).update(
            places_left=Greatest(F("places_left") - 1 + len(stale), 0)
        )
    logger.info(
        "mturk: worker %s took assignment %s (HIT %s)",
        short_id(worker_external_id),
        assignment.pk,
        locked.pk,
    )
    assignment.hit = locked
    return assignment
