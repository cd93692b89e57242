"""Review decisions: the one entry point, ``assignment_decide``.

The API, the HTML review pages, review rules and platform sync all decide through
here (rules in bulk through ``validation.services``, which announce the same event).
On the local workforce a decision takes effect at once; on a paid platform it is a
platform operation (``Platform.decision_request``) and the assignment turns approved
or rejected when the platform has done it (``campaigns.platforms.review``). Either
way ``assignment_decided`` is announced once, and approved work is handed off.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from campaigns.design.platform import platform_for
from campaigns.models import Assignment, AssignmentStatus, Worker
from campaigns.work.events import assignment_decided
from qaportal.errors import DomainError


def _check_local_review(assignment: Assignment) -> None:
    if platform_for(assignment).pays_workers:
        raise DomainError(
            f"Assignments on {assignment.provider!r} are reviewed through their provider, "
            "which pays the worker; this service decides local assignments only.",
            errors={"provider": [assignment.provider]},
        )


def decision_write(
    *,
    assignment: Assignment,
    status: str,
    decided_by_id: int | None,
    source: str,
    reason: str,
    feedback: str,
) -> None:
    """Record a decision on a locked, submitted ``assignment`` and count it for its
    worker, then announce ``assignment_decided`` (the hand-off follows after commit).
    Shared by local decisions and decisions a platform carried out
    (``campaigns.platforms.review.assignment_decision_record``). Call in the
    transaction that holds the row lock."""
    assignment.status = status
    assignment.decided_at = timezone.now()
    assignment.decided_by_id = decided_by_id
    assignment.decision_source = source[:80]
    assignment.decision_reason = reason
    assignment.feedback = feedback
    assignment.save(
        update_fields=[
            "status",
            "decided_at",
            "decided_by",
            "decision_source",
            "decision_reason",
            "feedback",
        ]
    )
    counter = "approved_count" if status == AssignmentStatus.APPROVED else "rejected_count"
    Worker.objects.filter(pk=assignment.worker_id).update(**{counter: F(counter) + 1})
    assignment_decided.announce(
        assignment_id=assignment.pk, approved=status == AssignmentStatus.APPROVED
    )


def _decide(
    *,
    assignment: Assignment,
    status: str,
    decided_by: AbstractBaseUser | None,
    source: str,
    reason: str,
    feedback: str = "",
) -> tuple[Assignment, bool]:
    """Lock and record a decision; returns (assignment, changed). Same decision twice: no-op."""
    _check_local_review(assignment)
    locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
    if locked.status == status:
        return locked, False
    if locked.status != AssignmentStatus.SUBMITTED:
        raise DomainError(
            f"Only a submitted assignment can be decided; this one is {locked.status!r}.",
            errors={"status": [locked.status]},
        )
    decision_write(
        assignment=locked,
        status=status,
        decided_by_id=decided_by.pk if decided_by is not None else None,
        source=source,
        reason=reason,
        feedback=feedback,
    )
    return locked, True


def assignment_decide(
    *,
    assignment: Assignment,
    approve: bool,
    decided_by: AbstractBaseUser | None = None,
    source: str,
    reason: str = "",
    feedback: str = "",
) -> Assignment:
    """Approve or reject a submitted assignment; the assignment as it now stands.

    ``source`` says what decided ("requester", "rule:auto_approve", …); a rejection
    needs a ``reason``, and ``feedback`` is what the worker hears. Idempotent:
    deciding twice changes nothing and hands off once. Local workforce: the decision
    is recorded at once and ``assignment_decided`` announced (the hand-off runs after
    commit, through the outbox). Paid platforms: ``Platform.decision_request`` asks
    for the approval (and payment) or rejection as a platform operation.
    Locking: the assignment row.
    """
    if not approve and not reason.strip():
        raise DomainError("A rejection needs a reason.", errors={"reason": ["required"]})
    platform = platform_for(assignment)
    if platform.pays_workers:
        platform.decision_request(
            assignment=assignment,
            approve=approve,
            decided_by=decided_by,
            source=source,
            reason=reason,
            feedback=feedback,
        )
        assignment.refresh_from_db()
        return assignment
    with transaction.atomic():
        decided, _ = _decide(
            assignment=assignment,
            status=AssignmentStatus.APPROVED if approve else AssignmentStatus.REJECTED,
            decided_by=decided_by,
            source=source,
            reason=reason,
            feedback=feedback,
        )
    return decided


def assignment_approve(
    *,
    assignment: Assignment,
    decided_by: AbstractBaseUser | None = None,
    source: str,
    reason: str = "",
) -> Assignment:
    """Approve ``assignment`` (``assignment_decide`` with ``approve=True``)."""
    return assignment_decide(
        assignment=assignment, approve=True, decided_by=decided_by, source=source, reason=reason
    )


def assignment_reject(
    *,
    assignment: Assignment,
    decided_by: AbstractBaseUser | None,
    source: str,
    reason: str,
    feedback: str = "",
) -> Assignment:
    """Reject ``assignment``, saying why (``assignment_decide`` with ``approve=False``)."""
    return assignment_decide(
        assignment=assignment,
        approve=False,
        decided_by=decided_by,
        source=source,
        reason=reason,
        feedback=feedback,
    )
