"""Celery tasks of the shared infrastructure: the outbox's runner and its sweep."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from qaportal.outbox import outbox_purge, outbox_redispatch, outbox_run


@shared_task(name="qaportal.outbox_run", acks_late=True)
def outbox_run_task(message_id: int) -> Any:
    """Run outbox message ``message_id`` once it is committed; a no-op when done.

    Retries nothing itself: a failure leaves the message undone and
    ``qaportal.outbox_redispatch`` sends it again with a growing delay.
    """
    return outbox_run(message_id=message_id)


@shared_task(name="qaportal.outbox_redispatch")
def outbox_redispatch_task() -> int:
    """Send again the outbox messages not done in time (beat, every minute).

    Idempotent: messages are run at least once and their tasks are idempotent.
    """
    sent = outbox_redispatch()
    outbox_purge()
    return sent
