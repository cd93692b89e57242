"""Model calls: asked for in the caller's transaction, carried out off the request path.

``model_call_request`` writes the :class:`ModelCall` row and an outbox message
(``assist.model_call_run``) in the caller's transaction: the worker's own text, stored
in that same transaction, never waits on the model and is never lost with it.

``model_call_run`` (the Celery task's body) claims a slot of the endpoint's concurrency
limit, asks the endpoint once within its timeout, and then either stores the answer and
its cost (once: the ledger key ``model_usage:call:<id>``), schedules another try
(429, 5xx, timeouts, refused connections: backoff, ``Retry-After`` honoured, at most
``MAX_ATTEMPTS`` tries) or marks the call ``unavailable``. In eager mode (the embedded
default) the one try runs at commit, bounded by the timeout; later tries wait for
``model_calls_reconcile`` (beat), as platform operations do.

Locking: a claim locks the call row, then the endpoint row (to count its running calls);
finishing locks the call row, then the campaign row (the running total of model costs).
"""

from __future__ import annotations

import logging
from datetime import timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from django.db import transaction
from django.db.models import Q, Sum
from django.utils import timezone

from campaigns.assist.client import ModelUnavailable
from campaigns.assist.endpoints import EndpointAnswer, endpoint_ask, prompt_render
from campaigns.assist.judging import adversarial_try_settle
from campaigns.design.owners import campaign_can_manage
from campaigns.models import (
    Assignment,
    Campaign,
    Item,
    ModelCall,
    ModelCallPurpose,
    ModelCallStatus,
    ModelEndpoint,
)
from campaigns.payments.ledger import ledger_model_usage_record
from qaportal.errors import DomainError
from qaportal.outbox import task_after_commit

logger = logging.getLogger(__name__)

RUN_TASK = "assist.model_call_run"
MAX_ATTEMPTS = 3
MAX_BACKOFF_SECONDS = 60.0
BUSY_DELAY_SECONDS = 1.0
# A call left running this long past its timeout lost its worker: it is tried again.
STALE_GRACE_SECONDS = 30.0
_CENT = Decimal("0.01")
_MICRO = Decimal("0.000001")


def call_key(
    *, endpoint_id: int, purpose: str, item_id: int, assignment_id: int | None, try_number: int
) -> str:
    """The idempotency key of a call: one per endpoint, purpose, item, answer and try."""
    answer = assignment_id if assignment_id is not None else "-"
    return f"model:{purpose}:{endpoint_id}:{item_id}:{answer}:{try_number}"


def model_call_request(
    *,
    endpoint_id: int,
    purpose: str,
    item_id: int,
    assignment_id: int | None = None,
    try_number: int = 1,
    question: str,
    context: Any = "",
) -> ModelCall:
    """Ask ``endpoint_id`` ``question`` on ``context`` (a passage, or its sentences) for
    ``item_id``, off the request path: writes the call and its outbox message in the
    caller's transaction and returns the call (pending).

    Idempotent on ``(endpoint, purpose, item, assignment, try_number)``: asking again
    returns the first call and queues nothing. The endpoint's owner must be able to
    manage the item's campaign (``DomainError`` otherwise), whose spending it adds to.
    """
    if purpose not in ModelCallPurpose.values:
        raise DomainError("Unknown model call purpose.", errors={"purpose": [purpose]})
    if try_number < 1:
        raise DomainError("Tries are numbered from 1.", errors={"try_number": [str(try_number)]})
    endpoint = ModelEndpoint.objects.select_related("owner").filter(pk=endpoint_id).first()
    item = Item.objects.select_related("stage__campaign").filter(pk=item_id).first()
    if endpoint is None or item is None:
        raise DomainError("No such endpoint or item.", errors={"endpoint_id": [str(endpoint_id)]})
    campaign = item.stage.campaign
    if not campaign_can_manage(campaign=campaign, user=endpoint.owner):
        raise DomainError(
            "This endpoint belongs to someone who cannot spend this campaign's money.",
            errors={"endpoint_id": ["not the campaign owner's"]},
        )
    if (
        assignment_id is not None
        and not Assignment.objects.filter(pk=assignment_id, hit__stage=item.stage).exists()
    ):
        raise DomainError(
            "The answer is not one of this item's stage.",
            errors={"assignment_id": [str(assignment_id)]},
        )
    key = call_key(
        endpoint_id=endpoint_id,
        purpose=purpose,
        item_id=item_id,
        assignment_id=assignment_id,
        try_number=try_number,
    )
    content = prompt_render(
        endpoint=endpoint, task_type=item.stage.task_type, question=question, context=context
    )
    # The call and its message commit together, in the caller's transaction when there
    # is one (no savepoint of its own: a failure here fails the caller's transaction,
    # as the worker's text must not be stored with a call that was never queued).
    with transaction.atomic(savepoint=False):
        call, created = ModelCall.objects.get_or_create(
            idempotency_key=key,
            defaults={
                "endpoint": endpoint,
                "campaign": campaign,
                "stage": item.stage,
                "item": item,
                "assignment_id": assignment_id,
                "purpose": purpose,
                "try_number": try_number,
                "currency": endpoint.currency,
                "prompt": {
                    "question": question,
                    "context": context,
                    "task_type": item.stage.task_type,
                    "messages": [{"role": "user", "content": content}],
                },
            },
        )
        if created:
            task_after_commit(RUN_TASK, call.pk)
    return call


def _stale_before(endpoint: ModelEndpoint) -> Any:
    return timezone.now() - timedelta(seconds=float(endpoint.timeout_seconds) + STALE_GRACE_SECONDS)


def _call_locked(call_id: int) -> ModelCall | None:
    """The call with its row locked (only its own row: the endpoint's and campaign's are
    locked apart, where needed), or None. Call inside a transaction."""
    return (
        ModelCall.objects.select_for_update(of=("self",))
        .select_related("endpoint")
        .filter(pk=call_id)
        .first()
    )


def _claim(call_id: int) -> tuple[ModelCall | None, bool]:
    """Lock the call; mark it running if it is due and the endpoint has a free slot.
    Returns the call and whether this run claimed it."""
    now = timezone.now()
    with transaction.atomic():
        call = _call_locked(call_id)
        if call is None or call.status in (ModelCallStatus.DONE, ModelCallStatus.UNAVAILABLE):
            return call, False
        endpoint = ModelEndpoint.objects.select_for_update(no_key=True).get(pk=call.endpoint_id)
        stale = _stale_before(endpoint)
        if call.status == ModelCallStatus.RUNNING and call.started_at and call.started_at > stale:
            return call, False  # another run has it
        if (
            call.status == ModelCallStatus.PENDING
            and call.next_attempt_at
            and call.next_attempt_at > now
        ):
            return call, False  # not due yet
        running = (
            ModelCall.objects.filter(
                endpoint_id=endpoint.pk, status=ModelCallStatus.RUNNING, started_at__gt=stale
            )
            .exclude(pk=call.pk)
            .count()
        )
        if running >= endpoint.concurrency:
            call.status = ModelCallStatus.PENDING
            call.next_attempt_at = now + timedelta(seconds=BUSY_DELAY_SECONDS)
            call.save(update_fields=["status", "next_attempt_at"])
            return call, False
        call.status = ModelCallStatus.RUNNING
        call.started_at = now
        call.attempts += 1
        call.next_attempt_at = None
        call.save(update_fields=["status", "started_at", "attempts", "next_attempt_at"])
        call.endpoint = endpoint
        return call, True


def call_cost(*, endpoint: ModelEndpoint, prompt_tokens: int, completion_tokens: int) -> Decimal:
    """Tokens at the endpoint's prices per 1,000, to the millionth."""
    cost = (
        Decimal(prompt_tokens) * endpoint.price_in_per_1k
        + Decimal(completion_tokens) * endpoint.price_out_per_1k
    ) / 1000
    return cost.quantize(_MICRO, rounding=ROUND_HALF_UP)


def _record_cost(call: ModelCall) -> None:
    """The ledger row of ``call``: the cents the campaign's running total of model costs
    (in the call's currency) crossed with it. Holds the campaign row."""
    Campaign.objects.select_for_update(no_key=True).filter(pk=call.campaign_id).first()
    before = ModelCall.objects.filter(
        campaign_id=call.campaign_id,
        currency=call.currency,
        status=ModelCallStatus.DONE,
        cost__isnull=False,
    ).exclude(pk=call.pk).aggregate(total=Sum("cost"))["total"] or Decimal("0")
    cost = call.cost or Decimal("0")
    amount = (before + cost).quantize(_CENT, rounding=ROUND_HALF_UP) - before.quantize(
        _CENT, rounding=ROUND_HALF_UP
    )
    ledger_model_usage_record(call=call, amount=amount, currency=call.currency)


def _finish(
    call_id: int, attempt: int, answer: EndpointAnswer | None, failure: ModelUnavailable | None
) -> ModelCall | None:
    now = timezone.now()
    with transaction.atomic():
        call = _call_locked(call_id)
        if call is None or call.status != ModelCallStatus.RUNNING or call.attempts != attempt:
            return call  # taken over after going stale: the later run decides
        if answer is not None:
            call.status = ModelCallStatus.DONE
            call.answer = answer.text
            call.model_id = answer.model_id
            call.model_version = answer.model_version
            call.prompt_tokens = answer.prompt_tokens
            call.completion_tokens = answer.completion_tokens
            call.cost = call_cost(
                endpoint=call.endpoint,
                prompt_tokens=answer.prompt_tokens or 0,
                completion_tokens=answer.completion_tokens or 0,
            )
            call.currency = call.endpoint.currency
            call.error = ""
            call.finished_at = now
            call.save()
            _record_cost(call)
            adversarial_try_settle(call=call)
            return call
        assert failure is not None
        call.error = failure.reason[:500]
        if failure.retryable and call.attempts < MAX_ATTEMPTS:
            delay = failure.retry_after
            if delay is None:
                delay = float(2 ** (call.attempts - 1))
            call.status = ModelCallStatus.PENDING
            call.next_attempt_at = now + timedelta(seconds=min(delay, MAX_BACKOFF_SECONDS))
        else:
            call.status = ModelCallStatus.UNAVAILABLE
            call.finished_at = now
        call.save(update_fields=["status", "error", "next_attempt_at", "finished_at"])
        adversarial_try_settle(call=call)
        return call


def model_call_run(*, call_id: int) -> ModelCall | None:
    """Carry out call ``call_id`` once if it is due and its endpoint has a free slot.

    Idempotent: a done or unavailable call, one running elsewhere, or one not due yet
    is left as it is. Returns the call (None when it does not exist): ``pending`` with
    ``next_attempt_at`` set means the caller should run it again then.
    """
    call, claimed = _claim(call_id)
    if call is None or not claimed:
        return call
    prompt = call.prompt or {}
    try:
        answer = endpoint_ask(
            endpoint=call.endpoint,
            task_type=str(prompt.get("task_type") or ""),
            question=str(prompt.get("question") or ""),
            context=prompt.get("context") or "",
        )
    except ModelUnavailable as failure:
        logger.info("model call %s try %s failed: %s", call.pk, call.attempts, failure.reason)
        return _finish(call.pk, call.attempts, None, failure)
    return _finish(call.pk, call.attempts, answer, None)


def model_calls_run_due(*, assignment_id: int) -> int:
    """Run the pending calls of ``assignment_id`` now, as a Celery worker would (the crowd
    simulator's workers, whose queue runs at the end of a round). Returns how many ran."""
    pending = ModelCall.objects.filter(
        assignment_id=assignment_id, status=ModelCallStatus.PENDING
    ).values_list("pk", flat=True)
    ran = 0
    for call_id in list(pending):
        model_call_run(call_id=call_id)
        ran += 1
    return ran


def model_calls_reconcile(*, limit: int = 500) -> list[int]:
    """The ids of calls to run again (for beat): pending ones that are due, and running
    ones whose run went stale (set back to pending). Queues nothing itself."""
    now = timezone.now()
    due = list(
        ModelCall.objects.filter(status=ModelCallStatus.PENDING)
        .filter(Q(next_attempt_at__lte=now) | Q(next_attempt_at__isnull=True))
        .order_by("id")
        .values_list("pk", flat=True)[:limit]
    )
    stale_ids = []
    for call in ModelCall.objects.filter(status=ModelCallStatus.RUNNING).select_related("endpoint")[
        :limit
    ]:
        if call.started_at is None or call.started_at <= _stale_before(call.endpoint):
            stale_ids.append(call.pk)
    if stale_ids:
        with transaction.atomic():
            for call in ModelCall.objects.select_for_update().filter(pk__in=stale_ids):
                if call.attempts >= MAX_ATTEMPTS:
                    call.status = ModelCallStatus.UNAVAILABLE
                    call.error = call.error or "the worker running it stopped"
                    call.finished_at = now
                else:
                    call.status = ModelCallStatus.PENDING
                    call.next_attempt_at = None
                call.save(update_fields=["status", "error", "finished_at", "next_attempt_at"])
        due.extend(
            ModelCall.objects.filter(pk__in=stale_ids, status=ModelCallStatus.PENDING).values_list(
                "pk", flat=True
            )
        )
    return due
