"""Celery tasks of the campaigns app: one more interface to the services.

Every task here has an explicit name (so renaming a module never strands queued
messages), takes ids rather than model instances, is idempotent, and says in its
docstring which errors it retries. Callers enqueue after commit
(``task.delay_on_commit(...)``).
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

logger = logging.getLogger(__name__)


@shared_task(name="qaportal.ping")
def ping() -> str:
    """Return ``"pong"``: proves that a worker consumes from the broker.

    Touches nothing, so it is safe to run any number of times; retries nothing.
    """
    return "pong"


# --- Local workforce: hand-off and expiry (campaigns/work/) ----


@shared_task(name="campaigns.handoff_run", acks_late=True)
def handoff_run_task(assignment_id: int) -> int:
    """Turn approved assignment ``assignment_id`` into items of the next stage.

    Idempotent (items are keyed by next stage and external id), so it is acked
    late and may run again after a worker crash. Retries nothing: an error is a
    bug to fix, and the hand-off can be re-run by hand once it is.
    """
    from campaigns.models import Assignment
    from campaigns.work.handoff import handoff_run

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
    from campaigns.work.handoff import handoff_flush
    from campaigns.work.lifecycle import assignments_expire

    expired = assignments_expire()
    handoff_flush()
    return expired


@shared_task(name="campaigns.counters_compact", acks_late=True)
def counters_compact_task() -> int:
    """Fold the assignment counters' pending deltas into their rows (for beat, every
    ``COUNTERS_COMPACT_SECONDS``); the number folded (0 when another compaction or a
    rebuild held the counters).

    Idempotent (a delta is folded once, by whichever compaction deletes it); retries
    nothing (the next beat tick folds what is left).
    """
    from campaigns.work.counts import stage_assignment_counts_compact

    return stage_assignment_counts_compact() or 0


# --- Provider operations and platform syncs (campaigns/platforms/operations.py, Platform.sync)


@shared_task(name="campaigns.execute_operation", bind=True, acks_late=True)
def execute_operation_task(self, operation_id: int, recover: bool = False) -> str:
    """Carry out ProviderOperation ``operation_id`` (done or failed ones are skipped).

    Idempotent (the row's state and the provider's checkpoints), so acked late.
    Transient platform errors are retried: the service schedules ``next_attempt_at``
    and this task re-enqueues itself with that countdown (with a broker; in eager mode
    the beat's ``campaigns.reconcile_operations`` picks the row up instead).
    """
    from django.conf import settings
    from django.utils import timezone

    from campaigns.models import OperationState
    from campaigns.platforms.operations import operation_execute

    op = operation_execute(operation_id=operation_id, recover=recover)
    if op is None:
        return "missing"
    eager = getattr(settings, "CELERY_TASK_ALWAYS_EAGER", False)
    if op.state == OperationState.PENDING and op.next_attempt_at is not None and not eager:
        countdown = max(0.0, (op.next_attempt_at - timezone.now()).total_seconds())
        self.apply_async((operation_id, False), countdown=countdown)
    return str(op.state)


@shared_task(name="campaigns.reconcile_operations", acks_late=True)
def reconcile_operations_task() -> dict[str, int]:
    """Re-enqueue due retries and recover operations left running (for beat).

    Idempotent; retries nothing (the next beat tick runs it again).
    """
    from campaigns.platforms.operations import operations_reconcile

    return operations_reconcile()


@shared_task(name="campaigns.platform_sync", acks_late=True)
def platform_sync_task(name: str | None = None, scope: str | None = None) -> dict[str, Any]:
    """Sync platform ``name`` (``Platform.sync``, ``scope`` in its terms: a study, a
    campaign id), or every registered platform if None; what each did, by name.

    Idempotent (a sync writes what the platform says). Retries nothing: transient
    errors are logged and the next beat tick or webhook syncs again. A platform whose
    sync fails does not keep the others from theirs; the first failure is raised last.
    """
    from campaigns.design.platform import platform_for, platforms_registered

    platforms = platforms_registered() if name is None else [platform_for(name)]
    done: dict[str, Any] = {}
    failed: Exception | None = None
    for platform in platforms:
        try:
            done[platform.name] = platform.sync(scope=scope)
        except Exception as exc:  # the others still sync; this one is raised below
            logger.exception("sync of platform %s failed", platform.name)
            failed = failed or exc
    if failed is not None:
        raise failed
    return done


# The name of Prolific's sync before there was one for every platform: outbox rows
# written after a webhook before the change may still carry it. (MTurk's sync was only
# ever sent by beat, with an expiry: its old name is gone.)
@shared_task(name="campaigns.prolific_sync", acks_late=True)
def prolific_sync_task(
    study_id: str | None = None, submission_id: str | None = None
) -> dict[str, Any]:
    """``campaigns.platform_sync("prolific", …)``, under its former name: study
    ``study_id``, or the study of submission ``submission_id``."""
    scope = f"submission:{submission_id}" if study_id is None and submission_id else study_id
    return platform_sync_task("prolific", scope)


@shared_task(name="campaigns.purge_idempotency_records", acks_late=True)
def purge_idempotency_records_task() -> int:
    """Delete API idempotency records past their time to live (for beat).

    Idempotent; retries nothing (expired records are also ignored when read).
    """
    from campaigns.api.idempotency_store import idempotency_records_purge

    return idempotency_records_purge()


@shared_task(name="campaigns.summaries_compact", acks_late=True)
def summaries_compact_task() -> int:
    """Fold the dashboard's counters (items, HITs, held work) and the ledger's running
    totals into one row per group (for beat, every minute); the rows removed.

    Idempotent (folding folded rows changes nothing); retries nothing: the next run
    folds what this one left.
    """
    from campaigns.payments.totals import ledger_totals_compact
    from campaigns.work.counts import stage_counters_compact

    return stage_counters_compact() + ledger_totals_compact()


# --- Background jobs: exports and large uploads (campaigns/jobs.py) -----------


@shared_task(name="campaigns.worker_quality_refresh", acks_late=True)
def worker_quality_refresh_task(campaign_id: int) -> int:
    """Recompute the workers table's slow numbers of campaign ``campaign_id`` (gold
    accuracy, agreement, median time, paste share): the rows written. Sent by the
    table's reader when its snapshot is behind (``worker_quality_schedule``).

    Idempotent (the campaign's snapshot is replaced whole); retries nothing (the next
    reader of a stale table sends it again).
    """
    from campaigns.insights.workers import worker_quality_refresh

    return worker_quality_refresh(campaign_id=campaign_id)


@shared_task(name="campaigns.job_run", time_limit=3600, soft_time_limit=3540)
def job_run_task(job_id: str) -> str:
    """Run export or upload job ``job_id``; its status afterwards.

    Idempotent: a finished job, or one another worker is running, is left alone. Acked
    early: a worker killed mid-job is noticed by ``campaigns.reconcile_jobs`` (its
    heartbeat stops) and the job restarts. Retries nothing itself.
    """
    from campaigns.jobs import job_run

    return job_run(job_id=job_id)


@shared_task(name="campaigns.reconcile_jobs")
def reconcile_jobs_task() -> int:
    """Send again queued jobs the broker may have lost and restart jobs whose worker
    died (for beat). Idempotent; retries nothing (the next tick runs it again)."""
    from campaigns.jobs import jobs_reconcile

    return jobs_reconcile()


@shared_task(name="campaigns.purge_job_files")
def purge_job_files_task() -> int:
    """Delete old export files and rejected upload inputs (for beat, daily; the
    retention is ``JOB_FILES_RETENTION_DAYS``). Idempotent; retries nothing."""
    from campaigns.jobs import job_files_purge

    return job_files_purge()


# --- Model in the loop (campaigns/assist/calls.py) ---------------------------------


@shared_task(name="assist.model_call_run", bind=True, acks_late=True)
def model_call_run_task(self, call_id: int) -> str:
    """Ask model call ``call_id``'s endpoint once (idempotent: see ``model_call_run``).

    Retries 429, 5xx, timeouts and refused connections: the service schedules
    ``next_attempt_at`` and, with a broker, this task re-enqueues itself with that
    countdown; in eager mode ``assist.model_calls_reconcile`` (beat) runs it again.
    """
    from django.conf import settings
    from django.utils import timezone

    from campaigns.assist.calls import model_call_run
    from campaigns.assist.flags import llm_flag_after_call
    from campaigns.models import ModelCallStatus

    call = model_call_run(call_id=call_id)
    llm_flag_after_call(call=call)
    if call is None:
        return "missing"
    eager = getattr(settings, "CELERY_TASK_ALWAYS_EAGER", False)
    if call.status == ModelCallStatus.PENDING and call.next_attempt_at is not None and not eager:
        countdown = max(0.0, (call.next_attempt_at - timezone.now()).total_seconds())
        self.apply_async((call_id,), countdown=countdown)
    return str(call.status)


@shared_task(name="assist.model_calls_reconcile", acks_late=True)
def model_calls_reconcile_task() -> int:
    """Run again the model calls that are due or whose run went stale (for beat)."""
    from django.conf import settings

    from campaigns.assist.calls import model_call_run, model_calls_reconcile
    from campaigns.assist.flags import llm_flag_after_call, llm_flags_reconcile

    due = model_calls_reconcile()
    for call_id in due:
        if getattr(settings, "CELERY_TASK_ALWAYS_EAGER", False):
            llm_flag_after_call(call=model_call_run(call_id=call_id))
        else:
            model_call_run_task.delay(call_id)
    # A flag whose recording was lost with its run (the calls final, no flag stored).
    llm_flags_reconcile()
    return len(due)
