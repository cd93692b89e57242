"""Celery tasks of the campaigns app: one more interface to the services.

Every task here has an explicit name (so renaming a module never strands queued
messages), takes ids rather than model instances, is idempotent, and says in its
docstring which errors it retries. Callers enqueue after commit
(``task.delay_on_commit(...)``).
"""

from __future__ import annotations

from celery import shared_task


@shared_task(name="qaportal.ping")
def ping() -> str:
    """Return ``"pong"``: proves that a worker consumes from the broker.

    Touches nothing, so it is safe to run any number of times; retries nothing.
    """
    return "pong"


# --- Local workforce: hand-off and expiry (campaigns/services/work.py, handoff.py) ----


@shared_task(name="campaigns.handoff_run", acks_late=True)
def handoff_run_task(assignment_id: int) -> int:
    """Turn approved assignment ``assignment_id`` into items of the next stage.

    Idempotent (items are keyed by next stage and external id), so it is acked
    late and may run again after a worker crash. Retries nothing: an error is a
    bug to fix, and the hand-off can be re-run by hand once it is.
    """
    from campaigns.models import Assignment
    from campaigns.services.handoff import handoff_run

    assignment = Assignment.objects.filter(pk=assignment_id).first()
    if assignment is None:
        return 0
    return handoff_run(assignment=assignment)


@shared_task(name="campaigns.expire_assignments", acks_late=True)
def expire_assignments_task() -> int:
    """Expire accepted assignments past their deadline, freeing their places, then
    publish the remainder of hand-offs whose source stage is drained (for beat).

    Idempotent; retries nothing (the next beat tick runs it again).
    """
    from campaigns.services.handoff import handoff_flush
    from campaigns.services.work import assignments_expire

    expired = assignments_expire()
    handoff_flush()
    return expired
