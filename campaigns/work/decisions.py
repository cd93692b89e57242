"""Review decisions on local assignments (approve, reject); paid providers' go
through ``campaigns.platforms.review``.

Part of the local-workforce work services; ``campaigns.services.work`` re-exports
these and describes the locking order they take part in.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from campaigns.models import Assignment, AssignmentStatus, Provider, Worker
from qaportal.errors import DomainError

# --- Review decisions (local provider: no money moves) -------------------------------


def _check_local_review(assignment: Assignment) -> None:
    if assignment.provider != Provider.LOCAL:
        raise DomainError(
            f"Assignments on {assignment.provider!r} are reviewed through their provider, "
            "which pays the worker; this service decides local assignments only.",
            errors={"provider": [assignment.provider]},
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
    locked.status = status
    locked.decided_at = timezone.now()
    locked.decided_by = decided_by  # type: ignore[assignment]
    locked.decision_source = source[:80]
    locked.decision_reason = reason
    locked.feedback = feedback
    locked.save(
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
    Worker.objects.filter(pk=locked.worker_id).update(**{counter: F(counter) + 1})
    return locked, True


def assignment_approve(
    *,
    assignment: Assignment,
    decided_by: AbstractBaseUser | None = None,
    source: str,
    reason: str = "",
) -> Assignment:
    """Approve a submitted assignment and hand its answer on to the next stage.

    ``source`` says what decided ("requester", "rule:auto_approve", …). Idempotent:
    approving twice changes nothing and hands off once. The hand-off runs in the
    Celery task ``campaigns.handoff_run``, enqueued after commit. On a paid
    provider the approval (and payment) is a provider operation
    (``paid_assignment_approve``): the assignment turns approved, and hands off,
    when the platform has done it.
    Locking: the assignment row.
    """
    if assignment.provider != Provider.LOCAL:
        from campaigns.platforms.review import paid_assignment_approve

        paid_assignment_approve(
            assignment=assignment, decided_by=decided_by, source=source, reason=reason
        )
        assignment.refresh_from_db()
        return assignment
    with transaction.atomic():
        decided, changed = _decide(
            assignment=assignment,
            status=AssignmentStatus.APPROVED,
            decided_by=decided_by,
            source=source,
            reason=reason,
        )
        if changed:
            # Imported here: the task module imports the services.
            from campaigns.tasks import handoff_run_task

            handoff_run_task.delay_on_commit(decided.pk)
    return decided


def assignment_reject(
    *,
    assignment: Assignment,
    decided_by: AbstractBaseUser | None,
    source: str,
    reason: str,
    feedback: str = "",
) -> Assignment:
    """Reject a submitted local assignment, saying why (``reason``) and, optionally,
    what the worker should hear (``feedback``). Idempotent. Locking: the assignment row.
    """
    if not reason.strip():
        raise DomainError("A rejection needs a reason.", errors={"reason": ["required"]})
    if assignment.provider != Provider.LOCAL:
        from campaigns.platforms.review import paid_assignment_reject

        paid_assignment_reject(
            assignment=assignment,
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
            status=AssignmentStatus.REJECTED,
            decided_by=decided_by,
            source=source,
            reason=reason,
            feedback=feedback,
        )
    return decided
