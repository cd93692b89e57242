"""PostgreSQL restarted during a batch of approvals: every connection dropped (the web
process's and a real Celery worker's, mid-hand-off) and none accepted for a while, as a
restart looks to its clients. The client retries what failed; afterwards each assignment
is approved once and each hand-off happened once.

The restart is of this test's database only (``pg_terminate_backend`` of its sessions,
``ALLOW_CONNECTIONS false`` for ``OUTAGE_SECONDS``): the server is shared with other
test runs, which a real restart would disturb.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

import psycopg2
import pytest
from django.conf import settings as django_settings
from django.db import connection
from django.utils import timezone

from campaigns.models import Assignment, AssignmentStatus, Item, ItemSource
from qaportal.outbox import outbox_redispatch, outbox_waiting
from tests.helpers import local_pipeline, submitted_assignment
from tests.reliability import faults
from tests.reliability.test_worker_kill import _database_url, own_queue

pytestmark = [pytest.mark.slow(seconds=40), pytest.mark.django_db(transaction=True)]

UNITS = 24
RESTART_AFTER = 8  # approvals before the restart
OUTAGE_SECONDS = 3.0
logger = logging.getLogger(__name__)


def _admin() -> psycopg2.extensions.connection:
    """A session on the maintenance database, outside the one restarted."""
    db = connection.settings_dict
    admin = psycopg2.connect(
        dbname="postgres",
        user=db.get("USER") or "postgres",
        host=db.get("HOST") or "127.0.0.1",
        port=db.get("PORT") or 5432,
    )
    admin.autocommit = True
    return admin


def _restart(name: str, *, down: float) -> None:
    """Drop every session of database ``name`` and refuse new ones for ``down`` s."""
    admin = _admin()
    try:
        with admin.cursor() as cursor:
            cursor.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                [name],
            )
            time.sleep(down)
    finally:
        with admin.cursor() as cursor:
            cursor.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        admin.close()


def _approve_with_retries(client, assignment_id: int, tries: list[int]) -> None:
    """What a client does: send, and on a failure send the same request again."""
    url = f"/api/v1/assignments/{assignment_id}/approve/"
    for attempt in range(1, 60):
        try:
            response = client.post(
                url, {}, format="json", HTTP_IDEMPOTENCY_KEY=f"approve-{assignment_id}"
            )
        except Exception:  # the dropped connection, raised through the test client
            response = None
        if response is not None and response.status_code == 200:
            tries.append(attempt)
            return
        connection.close()  # a broken connection is not reused
        time.sleep(0.25)
    raise AssertionError(f"assignment {assignment_id} never approved")


def test_each_approved_once_each_hand_off_once_across_a_restart(
    requester, token_client, tmp_path: Path
):
    token_client.raise_request_exception = False
    _campaign, writing, linking = local_pipeline(
        requester, slug="pg-restart", topics=tuple(f"t{n}" for n in range(UNITS))
    )
    submitted = [submitted_assignment(writing, question=f"Which {n}?").pk for n in range(UNITS)]
    env = faults.worker_env(
        database_url=_database_url(),
        broker_url=django_settings.CELERY_BROKER_URL,
        mturk_url="http://127.0.0.1:9",
        stale_minutes=1,
        secret_key=django_settings.SECRET_KEY,
    )
    name = connection.settings_dict["NAME"]
    tries: list[int] = []
    with own_queue() as queue:
        worker = faults.Worker(env=env, queue=queue, log_path=tmp_path / "worker.log")
        worker.wait_ready()
        try:
            started = time.monotonic()
            for assignment_id in submitted[:RESTART_AFTER]:
                _approve_with_retries(token_client, assignment_id, tries)
            connection.close()
            restart = threading.Thread(
                target=_restart, args=(name,), kwargs={"down": OUTAGE_SECONDS}
            )
            restart.start()
            time.sleep(0.2)  # the sessions are dropped; the rest of the batch meets the outage
            for assignment_id in submitted[RESTART_AFTER:]:
                _approve_with_retries(token_client, assignment_id, tries)
            restart.join()
            approved_in = time.monotonic() - started
            # Beat: what failed with the restart is sent again until nothing waits.
            deadline = time.monotonic() + 90
            later = timedelta(minutes=1)
            while time.monotonic() < deadline:
                produced = Item.objects.filter(stage=linking).count()
                if outbox_waiting() == 0 and produced >= UNITS:
                    break
                outbox_redispatch(now=timezone.now() + later)
                later += timedelta(minutes=10)
                time.sleep(0.5)
            settled_in = time.monotonic() - started
        finally:
            worker.stop()

    statuses = Counter(Assignment.objects.filter(pk__in=submitted).values_list("status", flat=True))
    assert statuses == {AssignmentStatus.APPROVED: UNITS}
    handed = Counter(
        Item.objects.filter(stage=linking, source=ItemSource.PRODUCED).values_list(
            "source_assignment_id", flat=True
        )
    )
    assert set(handed) == set(submitted), "each approved assignment handed on"
    assert set(handed.values()) == {1}, "each hand-off once"
    assert outbox_waiting() == 0
    assert sum(t > 1 for t in tries) >= 1, "the restart must land mid-batch"
    logger.warning(
        "postgres restart: %d approvals (%d retried, at most %d tries), %d hand-offs once "
        "each; approved in %.1f s, settled in %.1f s (outage %.0f s)",
        len(tries),
        sum(t > 1 for t in tries),
        max(tries),
        len(handed),
        approved_in,
        settled_in,
        OUTAGE_SECONDS,
    )
