"""A broker outage (a real Redis, stopped) during approve, bonus and hand-off: the
requests succeed once their rows are committed, and when the broker is back every
effect happens exactly once (issue: nothing lost, nothing doubled).

Celery is pointed at a private ``redis-server`` on a free port for the test; work
that must follow a commit goes through the outbox, which cannot reach the stopped
broker and leaves its messages for beat. When Redis is back, beat's redispatch sends
them; they are then run here (eager), as a worker would run them.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import kombu.pools
import pytest
import redis
from django.utils import timezone

from campaigns.models import (
    Assignment,
    AssignmentStatus,
    Item,
    LedgerEntry,
    LedgerKind,
    LedgerStatus,
)
from qaportal.celery import app
from qaportal.models import OutboxMessage
from qaportal.outbox import outbox_redispatch, outbox_waiting
from tests.helpers import local_pipeline, submitted_assignment

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PrivateRedis:
    """A redis-server of the test's own, stopped and started at will."""

    def __init__(self, workdir: Path) -> None:
        self.port = _free_port()
        self.workdir = workdir
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(100):
            try:
                if redis.Redis.from_url(self.url, socket_timeout=0.2).ping():
                    return
            except redis.ConnectionError:
                time.sleep(0.05)
        raise RuntimeError("private redis-server did not start")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None

    def queued(self) -> int:
        """Messages waiting on the default queue (per test worker under xdist)."""
        queue = app.conf.task_default_queue or "celery"
        return int(redis.Redis.from_url(self.url).llen(queue))


@contextmanager
def celery_on(url: str) -> Iterator[None]:
    """Celery sends to ``url`` (a real broker, not eager) for the block."""
    keys = ("broker_url", "broker_write_url", "broker_read_url", "task_always_eager")
    before = {k: app.conf[k] for k in keys}

    def fresh_pools() -> None:
        kombu.pools.reset()
        app._pool = None
        app.amqp._producer_pool = None

    app.conf.update(broker_url=url, broker_write_url=url, broker_read_url=url)
    app.conf.task_always_eager = False
    fresh_pools()
    try:
        yield
    finally:
        app.conf.update(before)
        fresh_pools()


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[PrivateRedis]:
    server = PrivateRedis(tmp_path)
    server.start()
    try:
        with celery_on(server.url):
            yield server
    finally:
        server.stop()


def test_approve_bonus_and_hand_off_survive_a_broker_outage(broker, requester, token_client):
    campaign, writing, linking = local_pipeline(requester, slug="outage")
    assignment = submitted_assignment(writing)
    broker.stop()

    approved = token_client.post(f"/api/v1/assignments/{assignment.pk}/approve/", {}, format="json")
    assert approved.status_code == 200, approved.content
    bonus = token_client.post(
        f"/api/v1/assignments/{assignment.pk}/bonus/",
        {"amount": "0.50", "reason": "Clear question."},
        format="json",
        HTTP_IDEMPOTENCY_KEY="bonus-outage-1",
    )
    assert bonus.status_code == 201, bonus.content
    # Committed: the decision and the bonus are recorded; the hand-off and the
    # bonus operation wait in the outbox for the broker.
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.APPROVED
    assert Item.objects.filter(stage=linking).count() == 0
    tasks = set(OutboxMessage.objects.filter(done_at__isnull=True).values_list("task", flat=True))
    assert {"campaigns.handoff_run", "campaigns.execute_operation"} <= tasks
    waiting = outbox_waiting()

    # Beat while the broker is still down: nothing sent, nothing lost.
    assert outbox_redispatch(now=timezone.now() + timedelta(minutes=1)) == 0
    assert outbox_waiting() == waiting

    # The broker is back: beat sends every waiting message to it.
    broker.start()
    assert outbox_redispatch(now=timezone.now() + timedelta(minutes=1)) == waiting
    assert broker.queued() == waiting

    # A worker runs them (here, in-process), and a second delivery changes nothing.
    app.conf.task_always_eager = True
    for later in (timedelta(hours=1), timedelta(hours=3)):
        outbox_redispatch(now=timezone.now() + later)
        outbox_redispatch(now=timezone.now() + later)
    assert outbox_waiting() == 0
    assert Item.objects.filter(stage=linking).count() == 1
    bonuses = LedgerEntry.objects.filter(kind=LedgerKind.BONUS, campaign=campaign)
    assert [(b.amount, b.status) for b in bonuses] == [(Decimal("0.50"), LedgerStatus.PAID)]
    assert Assignment.objects.get(pk=assignment.pk).status == AssignmentStatus.APPROVED
