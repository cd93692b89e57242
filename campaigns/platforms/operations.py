"""Provider operations: request a platform effect once, carry it out, recover after a crash.

Every state-changing call to a crowd platform goes through here:

1. ``operation_request`` writes a ``ProviderOperation`` (unique per provider and
   idempotency key, so asking twice asks once) and enqueues
   ``campaigns.execute_operation`` after commit;
2. ``operation_execute`` claims the row (``pending`` → ``running``, ``attempts + 1``)
   in a short transaction, calls the provider *outside* any transaction (network
   calls never hold locks), then in a second transaction marks it ``done`` and
   applies its effects in the database (ledger ``committed`` → ``paid``, HIT
   platform ids, review decisions). Provider checkpoints (``OperationCall.checkpoint``)
   are committed as they happen, so a crash keeps what the platform already did;
3. ``operations_reconcile`` (Celery beat) re-enqueues pending rows whose retry is
   due and *recovers* rows left ``running`` for longer than the stale period: the
   provider is told (``recovering``) to look on the platform before repeating.

Locking: one ``ProviderOperation`` row at a time, never while a platform call is
in flight; effects then lock the rows they change (HIT, assignment, ledger entries).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from campaigns.models import (
    Campaign,
    LedgerStatus,
    OperationKind,
    OperationState,
    Provider,
    ProviderOperation,
)
from campaigns.payments.ledger import ledger_operation_settle
from campaigns.platforms import provider_for
from campaigns.platforms.base import (
    OperationCall,
    PermanentProviderError,
    ProviderError,
    TransientProviderError,
)
from campaigns.platforms.operation_payloads import operation_payload_complete
from qaportal.outbox import task_after_commit

logger = logging.getLogger(__name__)

# publish_study is not here: it re-starts a paused study (``campaign_provider_resume``)
# and publishes no HITs.
PUBLISH_KINDS = (OperationKind.CREATE_HIT, OperationKind.CREATE_STUDY)
# Done operations that give a qualification type its platform id (a group, an MTurk type).
QUALIFYING_KINDS = (OperationKind.GRANT, OperationKind.CREATE_QUALIFICATION_TYPE)


def _max_attempts() -> int:
    return int(getattr(settings, "PROVIDER_OPERATION_MAX_ATTEMPTS", 8))


def _max_wait() -> float:
    """Seconds an operation may wait for what the platform does after answering."""
    return float(getattr(settings, "PROVIDER_OPERATION_MAX_WAIT_SECONDS", 86400))


def _stale_after() -> timedelta:
    return timedelta(minutes=float(getattr(settings, "PROVIDER_OPERATION_STALE_MINUTES", 10)))


def _backoff(attempts: int, retry_after: float | None) -> float:
    base = float(getattr(settings, "PROVIDER_OPERATION_BACKOFF_BASE", 30))
    cap = float(getattr(settings, "PROVIDER_OPERATION_BACKOFF_MAX", 3600))
    if retry_after is not None:
        return min(max(retry_after, 1.0), cap)
    return float(min(base * 2 ** max(attempts - 1, 0), cap))


def _enqueue(operation_id: int, *, recover: bool = False) -> None:
    """Execute the operation after commit, through the outbox (a broker outage delays
    it; ``operations_reconcile`` is the second net for rows left pending or running)."""
    task_after_commit("campaigns.execute_operation", operation_id, recover)


# --- Requesting ------------------------------------------------------------------------


def operation_request(
    *,
    provider: str,
    kind: str,
    key: str,
    payload: dict[str, Any],
    campaign: Campaign | None,
) -> tuple[ProviderOperation, bool]:
    """Ask for a platform effect once; returns (operation, created).

    Idempotency key: ``(provider, key)``. A second request with the same key returns
    the first operation unchanged (its payload is not replaced) and enqueues nothing.
    The new operation is executed by ``campaigns.execute_operation`` after commit.
    """
    operation, created = ProviderOperation.objects.get_or_create(
        provider=provider,
        idempotency_key=key,
        defaults={"kind": kind, "payload": payload, "campaign": campaign},
    )
    if created:
        _enqueue(operation.pk)
    return operation, created


# --- Executing -------------------------------------------------------------------------


def _claim(operation_id: int, *, recover: bool) -> tuple[ProviderOperation, bool] | None:
    """Lock the row and mark it running; None when there is nothing to do."""
    now = timezone.now()
    with transaction.atomic():
        op = ProviderOperation.objects.select_for_update().filter(pk=operation_id).first()
        if op is None or op.state in (OperationState.DONE, OperationState.FAILED):
            return None
        recovering = op.state == OperationState.RUNNING
        if recovering and not (recover and op.updated_at <= now - _stale_after()):
            return None  # another executor holds it (or it is not stale yet)
        op.state = OperationState.RUNNING
        op.attempts += 1
        op.next_attempt_at = None
        op.save(update_fields=["state", "attempts", "next_attempt_at", "updated_at"])
    return op, recovering


def _save_result(operation_id: int) -> Any:
    def save(result: dict[str, Any]) -> None:
        # Autocommit: a checkpoint survives whatever happens to the caller next.
        ProviderOperation.objects.filter(pk=operation_id).update(
            result=result, updated_at=timezone.now()
        )

    return save


def operation_execute(*, operation_id: int, recover: bool = False) -> ProviderOperation | None:
    """Carry out operation ``operation_id`` once; the operation as it ends up.

    Skips operations done or failed, and running ones unless ``recover`` is set and
    the row is stale (then the provider is told it is recovering). Transient errors
    put it back to ``pending`` with ``next_attempt_at`` (exponential backoff, or the
    platform's Retry-After) until ``PROVIDER_OPERATION_MAX_ATTEMPTS``, then fail it;
    permanent errors fail it with the platform's message as the reason. Any other
    exception leaves it ``running`` for ``operations_reconcile`` to recover.
    """
    claimed = _claim(operation_id, recover=recover)
    if claimed is None:
        return ProviderOperation.objects.filter(pk=operation_id).first()
    op, recovering = claimed
    payload = dict(op.payload or {})
    if op.provider == Provider.MTURK:
        payload = operation_payload_complete(payload=payload)
    call = OperationCall(
        operation_id=op.pk,
        kind=op.kind,
        key=op.idempotency_key,
        payload=payload,
        result=dict(op.result or {}),
        attempts=op.attempts,
        recovering=recovering,
        _save=_save_result(op.pk),
    )
    try:
        result = provider_for(op.provider, campaign_id=op.campaign_id).execute(call)
    except PermanentProviderError as exc:
        return _fail(op.pk, str(exc), call.result)
    except TransientProviderError as exc:
        return _retry_or_fail(op.pk, exc, call.result)
    except ProviderError as exc:
        return _retry_or_fail(op.pk, TransientProviderError(str(exc)), call.result)
    except ValueError as exc:  # provider_for: unknown or unconfigured provider
        return _fail(op.pk, str(exc), call.result)
    return _finish(op.pk, result)


def _retry_or_fail(
    operation_id: int, exc: TransientProviderError, result: dict[str, Any]
) -> ProviderOperation:
    with transaction.atomic():
        op = ProviderOperation.objects.select_for_update().get(pk=operation_id)
        if exc.waiting:
            # The platform is still at work: not a failed attempt, but not for ever.
            waited = (timezone.now() - op.created_at).total_seconds()
            if waited > _max_wait():
                return _fail(operation_id, f"Gave up after waiting {waited:.0f} s: {exc}", result)
            op.attempts = max(0, op.attempts - 1)
        elif op.attempts >= _max_attempts():
            return _fail(operation_id, f"Gave up after {op.attempts} attempts: {exc}", result)
        delay = _backoff(max(op.attempts, 1), exc.retry_after)
        op.state = OperationState.PENDING
        op.last_error = str(exc)[:2000]
        op.result = result
        op.next_attempt_at = timezone.now() + timedelta(seconds=delay)
        op.save(
            update_fields=[
                "state",
                "attempts",
                "last_error",
                "result",
                "next_attempt_at",
                "updated_at",
            ]
        )
    logger.warning("operation %s: %s; retry in %.0fs", operation_id, exc, delay)
    return op


def _fail(operation_id: int, reason: str, result: dict[str, Any]) -> ProviderOperation:
    with transaction.atomic():
        op = ProviderOperation.objects.select_for_update().get(pk=operation_id)
        op.state = OperationState.FAILED
        op.last_error = (reason or "failed")[:2000]
        op.result = result
        op.completed_at = timezone.now()
        op.save(update_fields=["state", "last_error", "result", "completed_at", "updated_at"])
        # Money that surely did not move is released; a payment whose fate is unknown
        # keeps its ledger entries committed until someone checks the platform.
        if not result.get("pay_requested"):
            ledger_operation_settle(operation=op, status=LedgerStatus.CANCELLED)
    logger.error("operation %s failed: %s", operation_id, op.last_error)
    return op


def _finish(operation_id: int, result: dict[str, Any]) -> ProviderOperation:
    """Mark done and apply the effects, in one transaction (so effects happen once)."""
    with transaction.atomic():
        op = ProviderOperation.objects.select_for_update().get(pk=operation_id)
        if op.state == OperationState.DONE:
            return op
        op.state = OperationState.DONE
        op.result = result
        op.last_error = ""
        op.completed_at = timezone.now()
        op.save(update_fields=["state", "result", "last_error", "completed_at", "updated_at"])
        _apply_effects(op)
    return op


Effect = Callable[[ProviderOperation], None]
_EFFECTS: dict[tuple[str, str | None], list[Effect]] = defaultdict(list)


def operation_effect(*kinds: str, provider: str | None = None) -> Callable[[Effect], Effect]:
    """Register ``fn(operation)`` as what a done operation of ``kinds`` changes in the
    database (for every provider, or only ``provider``'s). The module that owns each
    kind registers its effect; effects run in the transaction that marks the operation
    done, those for every provider first, so they happen exactly once."""

    def register(fn: Effect) -> Effect:
        for kind in kinds:
            if fn not in _EFFECTS[(kind, provider)]:
                _EFFECTS[(kind, provider)].append(fn)
        return fn

    return register


def _apply_effects(op: ProviderOperation) -> None:
    """What a done operation changes in the database: its kind's registered effects."""
    for fn in _EFFECTS.get((op.kind, None), ()):
        fn(op)
    for fn in _EFFECTS.get((op.kind, op.provider), ()):
        fn(op)


# --- Reconciling -----------------------------------------------------------------------


def operations_reconcile(*, now: Any = None) -> dict[str, int]:
    """Re-enqueue what should be running and is not (for Celery beat); the counts.

    ``retry``: pending rows whose ``next_attempt_at`` has come, or that have waited
    longer than the stale period without one (their first enqueue was lost).
    ``recover``: running rows untouched for the stale period (a crashed or killed
    worker): executed with ``recover`` so the provider checks the platform first.
    """
    now = now or timezone.now()
    stale = now - _stale_after()
    due = list(
        ProviderOperation.objects.filter(state=OperationState.PENDING)
        .filter(
            Q(next_attempt_at__lte=now) | Q(next_attempt_at__isnull=True, updated_at__lte=stale)
        )
        .values_list("pk", flat=True)[:1000]
    )
    stuck = list(
        ProviderOperation.objects.filter(
            state=OperationState.RUNNING, updated_at__lte=stale
        ).values_list("pk", flat=True)[:1000]
    )
    for pk in due:
        _enqueue(pk)
    for pk in stuck:
        _enqueue(pk, recover=True)
    if due or stuck:
        logger.info("operations: %d due, %d to recover", len(due), len(stuck))
    return {"retry": len(due), "recover": len(stuck)}


__all__ = [
    "PUBLISH_KINDS",
    "QUALIFYING_KINDS",
    "operation_effect",
    "operation_execute",
    "operation_request",
    "operations_reconcile",
]
