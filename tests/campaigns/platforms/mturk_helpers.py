"""What the MTurk worker page does, for tests: a worker accepts and submits on MTurk,
and the page stores the submission with qaportal first (an ``Assignment`` whose
``provider_assignment_id`` is MTurk's AssignmentId)."""

from __future__ import annotations

from django.utils import timezone

from campaigns.models import HIT, Assignment, AssignmentStatus, Worker
from tests.campaigns.platforms.fake_mturk import FakeMTurk

ANSWERS = {"questions/0/question": "Which river is longer?", "questions/0/answer": "The Nile"}


def page_submit(
    fake: FakeMTurk,
    hit: HIT,
    worker_id: str,
    *,
    on_mturk: bool = True,
    claimed_worker: str | None = None,
) -> Assignment:
    """``worker_id`` submits on ``hit``; ``on_mturk`` False: MTurk never got it (the page
    stored a submission MTurk does not confirm). ``claimed_worker``: the workerId the
    page was given (a forged URL), when it differs."""
    if on_mturk:
        assignment_id = fake.submit_assignment(hit.provider_hit_id or "", worker_id, ANSWERS)
    else:
        with fake.lock:
            assignment_id = fake._id("3Z")
    worker, _ = Worker.objects.get_or_create(
        provider="mturk", external_id=claimed_worker or worker_id
    )
    now = timezone.now()
    return Assignment.objects.create(
        hit=hit,
        worker=worker,
        provider="mturk",
        provider_assignment_id=assignment_id,
        status=AssignmentStatus.SUBMITTED,
        answers=ANSWERS,
        accepted_at=now,
        submitted_at=now,
    )
