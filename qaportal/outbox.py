"""The transactional outbox: work that must follow a commit is never lost.

``task_after_commit(name, *args)`` writes an :class:`~qaportal.models.OutboxMessage`
in the caller's transaction. When that transaction commits, the message is sent to
Celery (``qaportal.outbox_run``), which runs task ``name``'s body with ``args`` and
marks the message done. If the broker is down at commit, or the worker dies before
the task finishes, the message stays undone and ``outbox_redispatch`` (Celery beat)
sends it again, with a growing delay. The request that committed the change has
succeeded either way: a broker outage delays the work, never loses it.

Delivery is at least once: every task run through the outbox takes ids and is
idempotent (the house rule for Celery tasks), so a second run changes nothing.
With ``CELERY_TASK_ALWAYS_EAGER`` (the embedded default, and the tests) the message
runs in-process at commit, by configuration, not as a fallback; inside
``outbox_deferred()`` it waits for the end of the block instead, as in a worker's queue.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from qaportal import prepared
from qaportal.models import OutboxMessage
from qaportal.queues import queue_for

logger = logging.getLogger(__name__)

RUN_TASK = "qaportal.outbox_run"

# Per thread: the ids of the messages committed inside ``outbox_deferred()``, in order.
_deferred = threading.local()

# Task name -> a body that runs many queued messages of that task at once, given their
# argument lists in queue order (``task_batch_register``).
_BATCH_RUNNERS: dict[str, Callable[[list[list[Any]]], Any]] = {}


def task_batch_register(task: str, run_many: Callable[[list[list[Any]]], Any]) -> None:
    """Let ``outbox_deferred()`` hand consecutive queued messages of ``task`` to
    ``run_many(args_lists)`` in one call instead of one run each. ``run_many`` must do
    what running them one after the other would (same idempotency), and may share the
    work they have in common (the hand-offs of a round of approvals publish each
    stage once). Outside ``outbox_deferred()`` each message still runs on its own."""
    _BATCH_RUNNERS[task] = run_many


def _app() -> Any:
    from qaportal.celery import app  # the Celery app imports Django settings: loaded on use

    return app


# The task modules are imported on the first eager run; one thread at a time (threads
# importing them at once could find a task module half imported, its task missing).
_tasks_import = threading.Lock()


def _task(app: Any, name: str) -> Any:
    """Celery task ``name``, its module imported on first use (eager mode)."""
    if name not in app.tasks:
        with _tasks_import:
            if name not in app.tasks:
                app.loader.import_default_modules()
    return app.tasks[name]


def task_after_commit(task: str, *args: Any) -> OutboxMessage:
    """Run Celery task ``task`` with ``args`` once the current transaction commits.

    The message row is part of the caller's transaction: rolled back with it, or
    committed with it and then delivered at least once.
    """
    message = _message_insert(task, list(args))
    transaction.on_commit(lambda: outbox_dispatch(message_id=message.pk, task=task))
    return message


# One message row, written out: one goes with every submission, and the ORM's INSERT
# took several times the database's time to build. Prepared on PostgreSQL.
_INSERT_SQL = (
    f"INSERT INTO {OutboxMessage._meta.db_table} "  # noqa: S608 (the model's table)
    "(task, args, created_at, dispatches, last_error) VALUES (%s, %s, %s, 0, '') RETURNING id"
)


def _message_insert(task: str, args: list[Any]) -> OutboxMessage:
    """``OutboxMessage.objects.create(task=task, args=args)``, in one prepared statement."""
    if not connection.features.can_return_columns_from_insert:
        return OutboxMessage.objects.create(task=task, args=args)
    now = timezone.now()
    with connection.cursor() as cursor:
        prepared.execute(
            cursor,
            _INSERT_SQL,
            [task, json.dumps(args), connection.ops.adapt_datetimefield_value(now)],
        )
        (pk,) = cursor.fetchone()
    message = OutboxMessage(pk=pk, task=task, args=args, created_at=now, dispatches=0)
    message._state.adding = False
    message._state.db = connection.alias
    return message


def tasks_after_commit(task: str, args_lists: list[list[Any]]) -> list[OutboxMessage]:
    """``task_after_commit`` for many runs of ``task`` at once (one INSERT): one message
    per argument list, dispatched in this order when the transaction commits."""
    messages = OutboxMessage.objects.bulk_create(
        [OutboxMessage(task=task, args=list(args)) for args in args_lists]
    )
    ids = [message.pk for message in messages]

    def dispatch_all() -> None:
        for message_id in ids:
            outbox_dispatch(message_id=message_id, task=task)

    if ids:
        transaction.on_commit(dispatch_all)
    return messages


def task_send(task: str, *args: Any, countdown: float | None = None) -> None:
    """Send Celery task ``task`` with ``args`` now, by name (eager: run it here).

    For work that keeps its own record and reconcile (background jobs); raises when
    the broker cannot be reached, so the caller can say the work waits for beat.
    ``countdown``: a worker runs it no sooner than that many seconds from now (eager
    mode runs it at once).
    """
    app = _app()
    if app.conf.task_always_eager:
        _task(app, task).apply(args=list(args), throw=True)
    else:
        app.send_task(
            task,
            args=list(args),
            countdown=countdown,
            retry=True,
            retry_policy={"max_retries": 1, "interval_start": 0, "interval_step": 0.5},
        )


@contextmanager
def outbox_deferred() -> Iterator[None]:
    """In eager mode, the messages this thread commits inside the block run at its end
    instead of at each commit, in commit order, as a worker draining its queue runs
    them; those their runs commit join the queue. A message whose task and arguments
    come again later in the queue is left to that later run and marked done (tasks run
    through the outbox are idempotent and work from the current state: one preparation
    of a stage after a batch of hand-offs covers them all). Consecutive messages of a
    task with a batch runner (``task_batch_register``) run in one call. Outside eager mode nothing
    changes (the broker gets each message at commit). If the block raises, the queued
    messages stay undone, for ``outbox_redispatch``. Nested blocks join the outer one.

    For a process that runs no worker and commits many changes in a row (the crowd
    simulator's approvals): per message, each hand-off published its HITs and each
    publication prepared the whole linking stage again.
    """
    if getattr(_deferred, "queue", None) is not None or not _app().conf.task_always_eager:
        yield
        return
    queue: list[int] = []
    _deferred.queue = queue
    try:
        yield
        while queue:
            batch = list(queue)
            queue.clear()
            _drain(batch)
    finally:
        _deferred.queue = None


def _drain(batch: list[int]) -> None:
    """Run the messages ``batch`` (ids, in order); repeats of a later message are done.

    The one read of the batch (task, arguments, whether done) serves the runs too: a
    message is run from it (``_run_read``) instead of being read again, and a batch
    runner gets its arguments from it. Only this thread runs the queue it drains (a
    message done meanwhile elsewhere, by beat's redispatch, runs once more: the tasks
    are idempotent)."""
    among, params = _ids_among(batch)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, task, args FROM {_TABLE} WHERE {among} AND done_at IS NULL",  # noqa: S608
            params,
        )
        # JSON columns come as text from the backends (as Django configures them).
        read = {
            pk: (task, json.loads(args) if isinstance(args, str | bytes) else args)
            for pk, task, args in cursor.fetchall()
        }
    keys = {pk: (task, json.dumps(args, sort_keys=True)) for pk, (task, args) in read.items()}
    last = {keys[pk]: pk for pk in batch if pk in keys}
    repeats = [pk for pk in batch if pk in keys and last[keys[pk]] != pk]
    if repeats:
        among, params = _ids_among(repeats)
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {_TABLE} SET done_at = %s, last_error = ''"  # noqa: S608
                f" WHERE {among} AND done_at IS NULL",
                [connection.ops.adapt_datetimefield_value(timezone.now()), *params],
            )
    runs = [pk for pk in batch if pk in keys and last[keys[pk]] == pk]
    start = 0
    while start < len(runs):
        task = keys[runs[start]][0]
        end = start + 1
        if task in _BATCH_RUNNERS:
            while end < len(runs) and keys[runs[end]][0] == task:
                end += 1
        if end - start > 1:
            _run_many(task=task, messages={pk: read[pk][1] for pk in runs[start:end]})
        else:
            _run_read(message_id=runs[start], task=task, args=read[runs[start]][1])
        start = end


_TABLE = OutboxMessage._meta.db_table


def _ids_among(ids: list[int]) -> tuple[str, list[Any]]:
    """``id IN (ids)`` for a statement on the outbox table, and its parameters: one array
    on PostgreSQL, a placeholder per id elsewhere. A round's queue holds hundreds to
    thousands of messages, and the ORM's ``pk__in`` prepared each id through the field
    (a third of the drain's own time)."""
    if connection.vendor == "postgresql":
        return "id = ANY(%s)", [list(ids)]
    return f"id IN ({', '.join(['%s'] * len(ids))})", list(ids)


def _run_many(*, task: str, messages: dict[int, list[Any]]) -> None:
    """Run the undone messages ``messages`` (id -> arguments, in queue order) of ``task``
    through its batch runner and mark them done; an error is recorded on each of them,
    which stay undone for ``outbox_redispatch`` (raised, as ``_dispatch`` does, when eager
    runs propagate)."""
    ids = list(messages)
    try:
        _BATCH_RUNNERS[task](list(messages.values()))
    except Exception as exc:
        OutboxMessage.objects.filter(pk__in=ids).update(last_error=repr(exc)[:2000])
        if settings.CELERY_TASK_EAGER_PROPAGATES:
            raise
        logger.warning("outbox messages %s not run (%s); beat will retry", ids, exc)
        return
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    among, params = _ids_among(ids)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {_TABLE} SET done_at = %s, dispatched_at = %s,"  # noqa: S608
            f" dispatches = dispatches + 1, last_error = '' WHERE {among}",
            [now, now, *params],
        )


def _run_read(*, message_id: int, task: str, args: list[Any]) -> None:
    """An undone message ``_drain`` read, run here (eager mode) as ``_dispatch`` runs it,
    and marked dispatched and done in one statement. An error is recorded on the row,
    which stays undone for ``outbox_redispatch``; raised when eager runs propagate."""
    try:
        _task(_app(), task).run(*args)
    except Exception as exc:
        OutboxMessage.objects.filter(pk=message_id).update(last_error=repr(exc)[:2000])
        if settings.CELERY_TASK_EAGER_PROPAGATES:
            raise
        logger.warning("outbox message %s not run (%s); beat will retry", message_id, exc)
        return
    now = timezone.now()
    OutboxMessage.objects.filter(pk=message_id).update(
        done_at=now, dispatched_at=now, dispatches=F("dispatches") + 1, last_error=""
    )


def outbox_dispatch(*, message_id: int, task: str = "") -> bool:
    """Send message ``message_id`` to a worker (or run it, in eager mode); True if sent.

    A broker that cannot be reached is logged and leaves the message for beat.
    Inside ``outbox_deferred()`` (eager mode) the message is queued for the block's end.
    """
    queue = getattr(_deferred, "queue", None)
    if queue is not None:
        queue.append(message_id)
        return True
    return _dispatch(message_id=message_id, task=task)


def _dispatch(*, message_id: int, task: str = "") -> bool:
    app = _app()
    try:
        if app.conf.task_always_eager:
            outbox_run(message_id=message_id)
        else:
            app.send_task(
                RUN_TASK,
                args=[message_id],
                queue=queue_for(task),
                retry=True,
                retry_policy={"max_retries": 1, "interval_start": 0, "interval_step": 0.5},
            )
    except Exception as exc:  # the broker, or (eager) the task itself
        if app.conf.task_always_eager and settings.CELERY_TASK_EAGER_PROPAGATES:
            raise
        logger.warning("outbox message %s not dispatched (%s); beat will retry", message_id, exc)
        return False
    OutboxMessage.objects.filter(pk=message_id).update(
        dispatched_at=timezone.now(), dispatches=F("dispatches") + 1
    )
    return True


def outbox_run(*, message_id: int) -> Any:
    """Run message ``message_id``'s task body here and mark it done; its result.

    Skips a message already done. An error is recorded on the row and raised: the
    message stays undone for ``outbox_redispatch``.
    """
    message = OutboxMessage.objects.filter(pk=message_id, done_at__isnull=True).first()
    if message is None:
        return None
    task = _task(_app(), message.task)
    try:
        result = task.run(*message.args)
    except Exception as exc:
        OutboxMessage.objects.filter(pk=message_id).update(last_error=repr(exc)[:2000])
        raise
    OutboxMessage.objects.filter(pk=message_id).update(done_at=timezone.now(), last_error="")
    return result


def _due(now: Any) -> Q:
    """Undone messages whose last dispatch is older than its back-off."""
    base = float(getattr(settings, "OUTBOX_REDISPATCH_SECONDS", 60))
    never_sent = Q(dispatched_at__isnull=True, created_at__lte=now - timedelta(seconds=10))
    waited = Q()
    for dispatches in range(1, 8):
        delay = timedelta(seconds=base * 2 ** (dispatches - 1))
        waited |= Q(dispatches=dispatches, dispatched_at__lte=now - delay)
    waited |= Q(dispatches__gte=8, dispatched_at__lte=now - timedelta(seconds=base * 2**7))
    return never_sent | waited


def outbox_redispatch(*, now: Any = None, limit: int = 1000) -> int:
    """Send again the messages that were not done in time (Celery beat); how many."""
    now = now or timezone.now()
    ids = list(
        OutboxMessage.objects.filter(done_at__isnull=True)
        .filter(_due(now))
        .order_by("created_at")
        .values_list("pk", "task")[:limit]
    )
    sent = 0
    for message_id, task in ids:
        try:
            sent += outbox_dispatch(message_id=message_id, task=task)
        except Exception:  # eager mode: the task failed; recorded on the row
            logger.exception("outbox message %s failed", message_id)
    if ids:
        logger.info("outbox: %d of %d waiting messages dispatched", sent, len(ids))
    return sent


def outbox_purge(*, older_than_days: int = 7) -> int:
    """Delete done messages older than ``older_than_days``; how many."""
    cutoff = timezone.now() - timedelta(days=older_than_days)
    deleted, _ = OutboxMessage.objects.filter(done_at__lte=cutoff).delete()
    return deleted


def outbox_waiting() -> int:
    """How many messages are not done yet (for /healthz and the admin)."""
    return OutboxMessage.objects.filter(done_at__isnull=True).count()


__all__ = [
    "outbox_dispatch",
    "outbox_purge",
    "outbox_redispatch",
    "outbox_run",
    "outbox_waiting",
    "task_after_commit",
    "task_send",
]
