"""Work on the local workforce: publish HITs, accept, submit, return, expire, review.

Locking, in the order it is taken (always this order, so no two requests wait
on each other in a cycle): campaign row (``campaign_start``) → stage row
(``stage_publish``) → worker row (``assignment_accept``) → one HIT row
(``assignment_accept``). Submit, return, expiry and review lock assignment rows;
return and expiry then update the HIT rows of the places they free. Nothing that
holds a HIT row waits on an assignment row, so the two orders cannot cross.

A HIT's free places are counted in ``HIT.places_left``: taken (-1) by
``assignment_accept``, given back (+1) by ``assignment_return`` and by expiry
(``assignments_expire``, or a submission that arrives too late), always in the
transaction that changes the assignment. Its CHECK constraint (never below 0)
and ``assignment_one_per_worker_per_hit`` back the allocation.

Paid providers (MTurk, Prolific) reuse publishing and submission; their review
decisions move money and go through provider operations in their own services.

This module is the public face; the code lives by idea in ``publishing``
(publish, start), ``allocation`` (accept), ``submission`` (submit, telemetry),
``assignment_lifecycle`` (return, expiry, more places) and ``review_local``
(local approve/reject), all under ``campaigns.services``.
"""

from __future__ import annotations

from campaigns.services.allocation import (
    NoWorkAvailableError,
    WorkerNoAccessError,
    WorkerNotAllowedError,
    assignment_accept,
    hit_take_allowed,
)
from campaigns.services.assignment_lifecycle import (
    AssignmentClosedError,
    assignment_return,
    assignments_expire,
    hit_add_assignments,
)
from campaigns.services.publishing import campaign_publish, campaign_start, stage_publish
from campaigns.services.review_local import assignment_approve, assignment_reject
from campaigns.services.submission import (
    DECIDED_STATES,
    STORED_STATES,
    SubmitResult,
    assignment_submit,
    assignment_submit_for_workers,
    telemetry_sanitise,
)

__all__ = [
    "DECIDED_STATES",
    "STORED_STATES",
    "AssignmentClosedError",
    "NoWorkAvailableError",
    "SubmitResult",
    "WorkerNoAccessError",
    "WorkerNotAllowedError",
    "assignment_accept",
    "assignment_approve",
    "assignment_reject",
    "assignment_return",
    "assignment_submit",
    "assignment_submit_for_workers",
    "assignments_expire",
    "campaign_publish",
    "campaign_start",
    "hit_add_assignments",
    "hit_take_allowed",
    "stage_publish",
    "telemetry_sanitise",
]
