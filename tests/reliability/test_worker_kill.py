"""A real Celery worker killed with SIGKILL mid-batch, and a broker that forgot its queue:
after the reconcile every operation is done, each MTurk effect happened once.

The worker is a subprocess on the test database (``transaction=True``: it sees
committed rows only) and on a queue of its own on the test broker; the fake MTurk runs
in this process, so its record of effects outlives the worker. ``bench/fault_bench.py``
repeats the kill run many times (tests/reliability/faults.py holds what both share).
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import redis
from django.conf import settings as django_settings
from django.db import connection

from campaigns.models import OperationState
from campaigns.platforms.operations import operations_reconcile
from qaportal.celery import app
from tests.campaigns.platforms.fake_mturk import FakeMTurk
from tests.reliability import faults

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

STALE_MINUTES = 0.03  # 1.8 s: a killed worker's operations are recovered in seconds


def _database_url() -> str:
    db = connection.settings_dict
    user, host, port = db.get("USER") or "postgres", db.get("HOST") or "127.0.0.1", db.get("PORT")
    return f"postgres://{user}@{host}:{port or 5432}/{db['NAME']}"


@contextmanager
def own_queue() -> Iterator[str]:
    """Tasks go through the broker, to a queue no other worker on it consumes."""
    queue = f"qaportal-faults-{uuid.uuid4().hex[:10]}"
    eager, default = app.conf.task_always_eager, app.conf.task_default_queue
    app.conf.task_always_eager, app.conf.task_default_queue = False, queue
    try:
        yield queue
    finally:
        app.conf.task_always_eager, app.conf.task_default_queue = eager, default
        client = redis.Redis.from_url(django_settings.CELERY_BROKER_URL)
        client.delete(queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")
        client.close()


@pytest.fixture
def fake(settings) -> Iterator[FakeMTurk]:
    with FakeMTurk() as server:
        settings.MTURK_ACCESS_KEY_ID = FakeMTurk.ACCESS_KEY
        settings.MTURK_SECRET_ACCESS_KEY = FakeMTurk.SECRET_KEY
        settings.MTURK_ENDPOINT_URL = server.url
        settings.MTURK_SANDBOX = True
        settings.MTURK_MAX_ATTEMPTS = 1
        settings.MTURK_RETRY_MODE = "standard"
        settings.MTURK_BACKOFF_BASE = 0.001
        settings.MTURK_TIMEOUT = 5
        settings.SITE_URL = "https://qaportal.example.org"
        settings.PROVIDER_OPERATION_STALE_MINUTES = STALE_MINUTES
        yield server


@pytest.fixture
def start_worker(fake, tmp_path: Path) -> Iterator[Any]:
    started: list[faults.Worker] = []

    def start(queue: str) -> faults.Worker:
        env = faults.worker_env(
            database_url=_database_url(),
            broker_url=django_settings.CELERY_BROKER_URL,
            mturk_url=fake.url,
            stale_minutes=STALE_MINUTES,
            secret_key=django_settings.SECRET_KEY,
        )
        worker = faults.Worker(env=env, queue=queue, log_path=tmp_path / "worker.log")
        started.append(worker)
        worker.wait_ready()
        return worker

    yield start
    for worker in started:
        worker.stop()


def test_bonus_batch_survives_a_sigkill_of_the_worker_each_bonus_paid_once(fake, start_worker):
    batch = faults.batch_prepare(kind="bonus", fake=fake, tag="kill", units=30)
    fake.latency = 0.03  # each bonus's answer comes late: the kill lands between calls
    with own_queue() as queue:
        worker = start_worker(queue)
        faults.batch_request(batch)
        done_at_kill, total = faults.wait_for_share(batch, random.Random(12).uniform(0.2, 0.6))
        worker.kill()
        assert 0 < done_at_kill < total, "the kill must land mid-batch"
        assert faults.batch_open(batch) > 0
        start_worker(queue)
        assert faults.batch_settle(batch, interval=0.5, timeout=90, beat=faults.beat_for(batch))
    outcome = faults.batch_check(batch, fake)
    assert outcome.ok, outcome
    assert outcome.done == outcome.ops == 30
    assert len(fake.state.bonuses) == 30


def test_operations_lost_with_the_broker_are_rederived_from_their_rows(fake, start_worker):
    batch = faults.batch_prepare(kind="approve", fake=fake, tag="flush", units=12)
    with own_queue() as queue:
        faults.batch_request(batch)  # 12 approvals queued, no worker yet
        client = redis.Redis.from_url(django_settings.CELERY_BROKER_URL)
        assert client.llen(queue) == 12
        client.delete(queue)  # Redis restarted with nothing on disk
        client.close()
        worker = start_worker(queue)
        time.sleep(1)
        assert faults.batch_open(batch) == 12  # nothing ran: the messages are gone
        time.sleep(STALE_MINUTES * 60)  # pending rows untouched for the stale period
        assert operations_reconcile() == {"retry": 12, "recover": 0}
        assert faults.batch_settle(batch, interval=0.5, timeout=60, beat=faults.beat_for(batch))
        worker.stop()
    outcome = faults.batch_check(batch, fake)
    assert outcome.ok, outcome
    assert set(faults.batch_operations(batch).values_list("state", flat=True)) == {
        OperationState.DONE
    }
    assert sum(fake.state.approvals.values()) == len(fake.state.approvals) == 12
