"""Celery queues by class of work, so that a long export never holds up a payment.

``default``   hand-offs, review rules, expiry, pings: short work
``payments``  platform operations (approve, bonus, publish…), their reconcile and the
              platforms' sync, and the outbox's re-sends: money moves without waiting
``heavy``     background jobs (exports, large uploads) and linking stages' preparation
              (spaCy span proposals): minutes of CPU each

Names come from settings (``CELERY_TASK_DEFAULT_QUEUE``, ``QUEUE_PAYMENTS``,
``QUEUE_HEAVY``); an empty class name sends its tasks to the default queue (the test
settings, and a single worker). A worker started without ``-Q`` consumes all three
(``CELERY_TASK_QUEUES``); docker-compose.yml runs one worker service per class.

Outbox messages all run as ``qaportal.outbox_run``: the outbox asks ``queue_for`` with
the task the message carries, so a message goes where its task would.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

PAYMENTS = "payments"
HEAVY = "heavy"

# Task name -> class. Tasks not named here go to the default queue.
TASK_CLASSES: dict[str, str] = {
    "campaigns.execute_operation": PAYMENTS,
    "campaigns.reconcile_operations": PAYMENTS,
    "campaigns.prolific_sync": PAYMENTS,
    "campaigns.mturk_sync": PAYMENTS,
    "campaigns.platform_sync": PAYMENTS,
    "campaigns.platforms_sync": PAYMENTS,
    "qaportal.outbox_redispatch": PAYMENTS,
    "campaigns.job_run": HEAVY,
    "linking.prefetch_stage": HEAVY,
}


def queue_names() -> list[str]:
    """Every queue this deployment uses, the default one first."""
    names = [settings.CELERY_TASK_DEFAULT_QUEUE, settings.QUEUE_PAYMENTS, settings.QUEUE_HEAVY]
    return list(dict.fromkeys(name for name in names if name))


def queue_for(task: str) -> str | None:
    """The queue of ``task``, or None for the default queue."""
    work_class = TASK_CLASSES.get(task)
    if work_class == PAYMENTS:
        return settings.QUEUE_PAYMENTS or None
    if work_class == HEAVY:
        return settings.QUEUE_HEAVY or None
    return None


def route_task(name: str, args: Any, kwargs: Any, options: Any, task: Any = None, **_: Any) -> Any:
    """Celery router (``CELERY_TASK_ROUTES``): a task's class queue, if it has one."""
    queue = queue_for(name)
    return {"queue": queue} if queue else None
