"""Review decisions: the one entry point, ``assignment_decide``.

The API, the HTML review pages, review rules and platform sync all decide through
here (rules in bulk through ``validation.services``, which announce the same event).
On the local workforce a decision takes effect at once; on a paid platform it is a
platform operation (``Platform.decision_request``) and the assignment turns approved
or rejected when the platform has done it (``campaigns.platforms.review``). Either
way ``assignment_decided`` is announced once, and approved work is handed off.
"""

from __future__ import annotations

from collections import Counter

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from campaigns.design.platform import platform_for
from campaigns.models import Assignment, AssignmentStatus, Worker
from campaigns.work.events import assignment_decided
from qaportal.errors import DomainError


def _check_local_review(assignment: Assignment) -> None:
    if not platform_for(assignment).decides_at_once:
        raise DomainError(
            f"Assignments on {assignment.provider!r} are reviewed through their provider, "
            "which pays the worker; this service decides at once only where the platform "
            "does (the local workforce).",
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
    decisions_write(
        assignments=[assignment],
        status=status,
        decided_by_id=decided_by_id,
        source=source,
        reason=reason,
        feedback=feedback,
    )


def decisions_write(
    *,
    assignments: list[Assignment],
    status: str,
    decided_by_id: int | None,
    source: str,
    reason: str,
    feedback: str,
) -> None:
    """``decision_write`` for many locked, submitted assignments with the same decision:
    one UPDATE of the rows, one of each worker's counter, the announcements in the
    order given (their outbox messages in one INSERT). The objects are updated too."""
    if not assignments:
        return
    now = timezone.now()
    fields = {
        "status": status,
        "decided_at": now,
        "decided_by_id": decided_by_id,
        "decision_source": source[:80],
        "decision_reason": reason,
        "feedback": feedback,
    }
    for assignment in assignments:
        for name, value in fields.items():
            setattr(assignment, name, value)
    Assignment.objects.filter(pk__in=[a.pk for a in assignments]).update(**fields)
    counter = "approved_count" if status == AssignmentStatus.APPROVED else "rejected_count"
    by_count: dict[int, list[int]] = {}
    for worker_id, count in Counter(a.worker_id for a in assignments).items():
        by_count.setdefault(count, []).append(worker_id)
    for count, worker_ids in sorted(by_count.items()):
        Worker.objects.filter(pk__in=worker_ids).update(**{counter: F(counter) + count})
    approved = status == AssignmentStatus.APPROVED
    assignment_decided.announce_many(
        [{"assignment_id": a.pk, "approved": approved} for a in assignments]
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
    deciding twice changes nothing and hands off once. The campaign's platform
    carries it out (``Platform.decision_request``): the local workforce records it at
    once (``assignment_decision_take``) and announces ``assignment_decided`` (the
    hand-off runs after commit, through the outbox); a paid platform asks for the
    approval (and payment) or rejection as a platform operation.
    Locking: the assignment row.
    """
    if not approve and not reason.strip():
        raise DomainError("A rejection needs a reason.", errors={"reason": ["required"]})
    return platform_for(assignment).decision_request(
        assignment=assignment,
        approve=approve,
        decided_by=decided_by,
        source=source,
        reason=reason,
        feedback=feedback,
    )


def assignment_decision_take(
    *,
    assignment: Assignment,
    approve: bool,
    decided_by: AbstractBaseUser | None,
    source: str,
    reason: str,
    feedback: str,
) -> Assignment:
    """Record a decision at once: ``Platform.decision_request`` of a platform that
    ``decides_at_once`` (the local workforce). Idempotent; the assignment as it now
    stands. Locking: the assignment row."""
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


def assignments_approve(
    *,
    assignment_ids: list[int],
    decided_by: AbstractBaseUser | None = None,
    source: str,
    reason: str = "",
) -> list[Assignment]:
    """Approve the submitted ones of ``assignment_ids`` (local workforce) at once; the
    assignments approved, in id order. As ``assignment_approve`` one after the other
    (those already approved, or not submitted, are left as they are; each approval is
    announced and handed off after commit), in a handful of statements: the requester
    approving a round of work (the crowd simulator's ``--approve-all``).
    Locking: the submitted rows, in id order.
    """
    with transaction.atomic():
        rows = list(
            Assignment.objects.select_for_update()
            .filter(pk__in=assignment_ids, status=AssignmentStatus.SUBMITTED)
            .order_by("pk")
        )
        for row in {row.provider: row for row in rows}.values():
            _check_local_review(row)
        decisions_write(
            assignments=rows,
            status=AssignmentStatus.APPROVED,
            decided_by_id=decided_by.pk if decided_by is not None else None,
            source=source,
            reason=reason,
            feedback="",
        )
    return rows


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
