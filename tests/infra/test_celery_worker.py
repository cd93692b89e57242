"""A real Celery worker, started as in docker-compose.yml, runs ``qaportal.ping`` from Redis."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis
from django.conf import settings

from campaigns.tasks import ping
from qaportal.celery import app
from tests.infra.conftest import REPO_ROOT, clean_env, stop_process_group, wait_for_log


@contextmanager
def tasks_sent_to_the_broker() -> Iterator[None]:
    """The suite runs tasks eagerly; here they must really go through the broker."""
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = False
    try:
        yield
    finally:
        app.conf.task_always_eager = previous


def test_ping_runs_eagerly_in_process() -> None:
    assert ping.name == "qaportal.ping"
    # .result, not .get(): get() refuses when an earlier test left Celery's in-worker flag set.
    result = ping.apply()
    assert result.successful()
    assert result.result == "pong"


@pytest.mark.slow
def test_worker_executes_ping_from_the_real_broker(tmp_path: Path) -> None:
    broker_url = settings.CELERY_BROKER_URL
    assert broker_url.startswith("redis://")
    # A queue of its own: no other worker on this broker can take the message.
    queue = f"qaportal-test-{uuid.uuid4().hex[:12]}"
    env = clean_env(
        DJANGO_SETTINGS_MODULE="qaportal.settings",
        DEBUG="0",
        SECRET_KEY="tests-only-secret-key",
        ALLOWED_HOSTS="testserver",
        QAPORTAL_VAR_DIR=str(tmp_path / "var"),
        CELERY_BROKER_URL=broker_url,
    )
    # As the compose file runs it, with a solo pool: one process, easy to stop.
    worker_command = [sys.executable, "-m", "celery", "-A", "qaportal", "worker"]
    worker_command += ["--pool", "solo", "--queues", queue, "--hostname", f"{queue}@%h"]
    worker_command += ["--without-gossip", "--without-mingle", "--without-heartbeat"]
    worker_command += ["--loglevel", "INFO"]
    log_path = tmp_path / "worker.log"
    with log_path.open("wb") as log:
        worker = subprocess.Popen(
            worker_command,
            cwd=REPO_ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_for_log(log_path, r"\bready\.", process=worker, timeout=60)
        assert "qaportal.ping" in log_path.read_text(), "the worker must have discovered the task"

        with tasks_sent_to_the_broker():
            sent = ping.apply_async(queue=queue)

        wait_for_log(
            log_path,
            rf"Task qaportal\.ping\[{sent.id}\] succeeded in \S+: 'pong'",
            process=worker,
            timeout=30,
        )
    finally:
        stop_process_group(worker)
        # The queue was ours alone; leave nothing behind on the shared broker.
        client = redis.Redis.from_url(broker_url)
        client.delete(queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")
        client.close()
