"""Work arriving from Toy Crowd: the assignment Toy Crowd gave a worker, recorded once.

The worker id in the URL is a claim: the identity stays unconfirmed until the sync
asks Toy Crowd (``ToyPlatform.sync``), and nothing unconfirmed is paid.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import F
from django.db.models.functions import Greatest
from django.utils import timezone

from campaigns.models import HIT, Assignment, AssignmentStatus, Worker
from campaigns.work.allocation import NoWorkAvailableError, WorkerNotAllowedError
from campaigns.work.selectors.access import WORKABLE_STATES

UNCONFIRMED = {"status": "unconfirmed", "reason": "workerId from the URL; not yet confirmed."}


def toy_assignment_accept(*, hit_id: str, worker_id: str, assignment_id: str) -> Assignment:
    """The assignment of Toy Crowd assignment ``assignment_id``, made once (a reload gets
    the same one). Refused: an unknown HIT, an id held by someone else, a campaign not
    taking work, a blocked worker. Locking: the HIT row."""
    with transaction.atomic():
        hit = (
            HIT.objects.select_for_update()
            .select_related("stage__campaign")
            .filter(provider="toy", provider_hit_id=hit_id)
            .first()
        )
        if hit is None:
            raise NoWorkAvailableError("No such task.")
        worker, _ = Worker.objects.get_or_create(provider="toy", external_id=worker_id)
        existing = Assignment.objects.filter(
            provider="toy", provider_assignment_id=assignment_id
        ).first()
        if existing is not None:
            if existing.worker_id != worker.pk or existing.hit_id != hit.pk:
                raise WorkerNotAllowedError("This assignment belongs to someone else.")
            return existing
        campaign = hit.stage.campaign
        if campaign.state not in WORKABLE_STATES:
            raise NoWorkAvailableError("This campaign is not taking work at the moment.")
        if worker.blocks.filter(requester_id=campaign.owner_id, lifted_at__isnull=True).exists():
            raise WorkerNotAllowedError("You can no longer take tasks from this requester.")
        now = timezone.now()
        try:
            with transaction.atomic():
                assignment = Assignment.objects.create(
                    hit=hit,
                    worker=worker,
                    provider="toy",
                    provider_assignment_id=assignment_id,
                    status=AssignmentStatus.ACCEPTED,
                    accepted_at=now,
                    deadline=now + hit.stage.assignment_duration,
                    review_details={"identity": dict(UNCONFIRMED)},
                )
        except IntegrityError:
            raise WorkerNotAllowedError("You already hold this task.") from None
        HIT.objects.filter(pk=hit.pk).update(places_left=Greatest(F("places_left") - 1, 0))
    return assignment
