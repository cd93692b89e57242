"""Celery tasks of the validation app: thin interfaces to ``validation.services``.

Explicit names, ids as arguments, idempotent, enqueued after commit
(``delay_on_commit``). None retries: a failure is a bug to fix, and running the
task again after the fix is safe.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task


@shared_task(name="validation.review_stage", acks_late=True)
def review_stage_task(stage_id: int) -> dict[str, Any]:
    """Run stage ``stage_id``'s review rules and gold actions, then its early-stop rule
    over HITs still waiting for it. Idempotent (see ``stage_review``); acked late so
    a crashed worker's run is repeated. Retries nothing."""
    from campaigns.models import Stage
    from validation.early_stopping import stage_early_stop
    from validation.services import stage_review

    stage = Stage.objects.filter(pk=stage_id).first()
    if stage is None:
        return {}
    summary = stage_review(stage=stage)
    return {
        "run": summary.run_id,
        "decisions": dict(summary.decisions),
        "worker_actions": dict(summary.worker_actions),
        "early_stop": stage_early_stop(stage_id=stage_id),
    }


@shared_task(name="validation.review_submission", acks_late=True)
def review_submission_task(assignment_id: int) -> dict[str, Any]:
    """After assignment ``assignment_id`` was submitted: review its HIT's submitted
    assignments and its worker's gold, then the HIT's early-stop rule. Idempotent
    (decided assignments are left alone, gold actions and the extension are keyed).
    Retries nothing."""
    from campaigns.models import Assignment
    from validation.early_stopping import hit_early_stop
    from validation.services import assignment_review

    assignment = (
        Assignment.objects.select_related("hit__stage__campaign").filter(pk=assignment_id).first()
    )
    if assignment is None:
        return {}
    reviews = assignment_review(assignment=assignment, fresh=True)
    return {
        "decisions": {str(pk): r.decision for pk, r in reviews.items()},
        "early_stop": hit_early_stop(hit=assignment.hit),
    }
