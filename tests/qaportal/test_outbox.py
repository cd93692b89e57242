"""The transactional outbox: written with the change, run once after commit, sent
again by beat when the broker or the worker failed, never when rolled back."""

from __future__ import annotations

from datetime import timedelta

import pytest
from celery import shared_task
from django.db import transaction
from django.utils import timezone
from kombu.exceptions import OperationalError

from qaportal import outbox
from qaportal.celery import app
from qaportal.events import Event
from qaportal.models import OutboxMessage

RUNS: list[tuple[object, ...]] = []


@shared_task(name="tests.outbox_probe")
def outbox_probe(*args: object) -> int:
    RUNS.append(args)
    return len(RUNS)


@shared_task(name="tests.outbox_fails")
def outbox_fails(*args: object) -> None:
    raise RuntimeError("the task failed")


@pytest.fixture(autouse=True)
def _clean_runs():
    RUNS.clear()
    yield
    RUNS.clear()


@pytest.fixture
def eager():
    """Set Celery's eager mode for a test (``eager(False)``), restored afterwards."""
    before = app.conf.task_always_eager

    def set_eager(value: bool) -> None:
        app.conf.task_always_eager = value

    yield set_eager
    app.conf.task_always_eager = before


@pytest.fixture
def broker_down(monkeypatch, eager):
    """Celery with a broker (not eager) that cannot be reached: every send fails."""
    eager(False)

    def refuse(*args, **kwargs):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6399. Connection refused.")

    monkeypatch.setattr(app, "send_task", refuse)


@pytest.mark.django_db(transaction=True)
def test_a_message_runs_once_after_commit():
    with transaction.atomic():
        message = outbox.task_after_commit("tests.outbox_probe", 7, "x")
        assert RUNS == []  # not before the commit
    assert RUNS == [(7, "x")]
    message.refresh_from_db()
    assert message.done_at is not None
    assert message.dispatches == 1
    assert outbox.outbox_redispatch(now=timezone.now() + timedelta(days=1)) == 0
    assert RUNS == [(7, "x")]


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_change_sends_nothing():
    def change_then_fail() -> None:
        with transaction.atomic():
            outbox.task_after_commit("tests.outbox_probe", 1)
            raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):
        change_then_fail()
    assert RUNS == []
    assert not OutboxMessage.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_broker_outage_delays_the_work_and_beat_sends_it_once(broker_down, eager):
    with transaction.atomic():
        message = outbox.task_after_commit("tests.outbox_probe", 42)
    # The commit succeeded although the broker is down; nothing ran yet.
    message.refresh_from_db()
    assert RUNS == []
    assert message.done_at is None
    assert message.dispatched_at is None
    assert outbox.outbox_waiting() == 1
    # Beat while the broker is still down: nothing sent, nothing lost.
    assert outbox.outbox_redispatch(now=timezone.now() + timedelta(minutes=1)) == 0
    # The broker is back (eager here, so the message runs in this process).
    eager(True)
    assert outbox.outbox_redispatch(now=timezone.now() + timedelta(minutes=1)) == 1
    assert RUNS == [(42,)]
    assert outbox.outbox_redispatch(now=timezone.now() + timedelta(days=1)) == 0
    assert RUNS == [(42,)]
    assert outbox.outbox_waiting() == 0


@pytest.mark.django_db(transaction=True)
def test_a_failing_task_stays_waiting_with_its_error(monkeypatch):
    monkeypatch.setattr("django.conf.settings.CELERY_TASK_EAGER_PROPAGATES", False)
    with transaction.atomic():
        message = outbox.task_after_commit("tests.outbox_fails")
    message.refresh_from_db()
    assert message.done_at is None
    assert "the task failed" in message.last_error


@pytest.mark.django_db(transaction=True)
def test_redispatch_waits_longer_after_each_try():
    message = OutboxMessage.objects.create(task="tests.outbox_probe", args=[1])
    now = timezone.now()
    OutboxMessage.objects.filter(pk=message.pk).update(dispatched_at=now, dispatches=3)
    # 60 s base: the third dispatch waits 240 s before the next.
    assert outbox.outbox_redispatch(now=now + timedelta(seconds=200)) == 0
    assert outbox.outbox_redispatch(now=now + timedelta(seconds=241)) == 1
    assert RUNS == [(1,)]


@pytest.mark.django_db(transaction=True)
def test_an_event_calls_handlers_in_the_transaction_and_tasks_after_commit():
    event = Event("probe_happened")
    seen: list[int] = []
    event.subscribe(lambda *, n, **_: seen.append(n))
    event.subscribe_task("tests.outbox_probe", args=lambda *, n, **_: [n] if n > 1 else None)
    with transaction.atomic():
        event.announce(n=1)
        event.announce(n=2)
        assert seen == [1, 2]
        assert RUNS == []
    assert RUNS == [(2,)]


@shared_task(name="tests.outbox_chains")
def outbox_chains(*args: object) -> None:
    """Commits a message of its own, as a hand-off commits a stage's preparation."""
    RUNS.append(("chains", *args))
    with transaction.atomic():
        outbox.task_after_commit("tests.outbox_probe", "prepare")


@pytest.mark.django_db(transaction=True)
def test_deferred_messages_run_at_the_end_in_order_and_a_repeat_runs_once(eager):
    eager(True)
    with outbox.outbox_deferred():
        for args in [(1,), ("prepare",), (2,), ("prepare",)]:
            with transaction.atomic():
                outbox.task_after_commit("tests.outbox_probe", *args)
        with transaction.atomic():
            outbox.task_after_commit("tests.outbox_chains", 3)
            outbox.task_after_commit("tests.outbox_chains", 4)
        assert RUNS == []  # not at each commit
    # In commit order; the first "prepare" was left to the second; the chained messages
    # (two the same) queued after the batch and ran once.
    assert RUNS == [(1,), (2,), ("prepare",), ("chains", 3), ("chains", 4), ("prepare",)]
    assert not OutboxMessage.objects.filter(done_at__isnull=True).exists()
    assert OutboxMessage.objects.count() == 8
    # Outside the block, each message runs at its commit again.
    with transaction.atomic():
        outbox.task_after_commit("tests.outbox_probe", 5)
    assert RUNS[-1] == (5,)


@pytest.mark.django_db(transaction=True)
def test_deferred_messages_stay_undone_when_the_block_raises(eager):
    eager(True)

    def commit_then_fail() -> None:
        with outbox.outbox_deferred():
            with transaction.atomic():
                outbox.task_after_commit("tests.outbox_probe", 1)
            raise RuntimeError("the caller failed")

    with pytest.raises(RuntimeError):
        commit_then_fail()
    assert RUNS == []
    assert OutboxMessage.objects.filter(done_at__isnull=True).count() == 1
    with transaction.atomic():
        outbox.task_after_commit("tests.outbox_probe", 2)
    assert RUNS == [(2,)]  # the block's queue is gone


@pytest.mark.django_db(transaction=True)
def test_deferral_changes_nothing_with_a_broker(eager, monkeypatch):
    eager(False)
    sent: list[tuple[object, ...]] = []
    monkeypatch.setattr(app, "send_task", lambda name, args, **kw: sent.append((name, *args)))
    with outbox.outbox_deferred(), transaction.atomic():
        message = outbox.task_after_commit("tests.outbox_probe", 1)
    assert sent == [(outbox.RUN_TASK, message.pk)]


@pytest.mark.django_db(transaction=True)
def test_a_batch_runner_takes_consecutive_messages_of_its_task_in_one_call(eager):
    eager(True)
    calls: list[list[list[object]]] = []
    outbox.task_batch_register("tests.outbox_probe", lambda args_lists: calls.append(args_lists))
    try:
        with outbox.outbox_deferred():
            for args in [(1,), (2,), (1,), (3,)]:
                with transaction.atomic():
                    outbox.task_after_commit("tests.outbox_probe", *args)
            with transaction.atomic():
                outbox.task_after_commit("tests.outbox_chains", 9)
            with transaction.atomic():
                outbox.task_after_commit("tests.outbox_probe", 4)
    finally:
        del outbox._BATCH_RUNNERS["tests.outbox_probe"]
    # The first (1,) left to the later one; the run of four made one call; the message
    # after another task's stands alone (its own body: the runner is for runs of two or
    # more); what the chained task queued ("prepare") came after the batch.
    assert calls == [[[2], [1], [3]]]
    assert RUNS == [("chains", 9), (4,), ("prepare",)]
    assert not OutboxMessage.objects.filter(done_at__isnull=True).exists()
    # Outside the block a message runs on its own, through its task.
    with transaction.atomic():
        outbox.task_after_commit("tests.outbox_probe", 5)
    assert RUNS[-1] == (5,)
    assert len(calls) == 1


@pytest.mark.django_db(transaction=True)
def test_a_failing_batch_leaves_its_messages_undone_with_the_error(eager, settings):
    eager(True)
    settings.CELERY_TASK_EAGER_PROPAGATES = False

    def fail(args_lists: list[list[object]]) -> None:
        raise RuntimeError("the batch failed")

    outbox.task_batch_register("tests.outbox_probe", fail)
    try:
        with outbox.outbox_deferred():
            for args in [(1,), (2,)]:
                with transaction.atomic():
                    outbox.task_after_commit("tests.outbox_probe", *args)
    finally:
        del outbox._BATCH_RUNNERS["tests.outbox_probe"]
    waiting = OutboxMessage.objects.filter(done_at__isnull=True)
    assert waiting.count() == 2
    assert all("the batch failed" in m.last_error for m in waiting)
