"""The object store killed (SIGKILL to moto's S3 server) during an export and during an
upload job, then started again on the same port with what it held: each job waits for
it and finishes once, with every row and nothing doubled; the requests that need the
store meanwhile answer 503 with ``Retry-After`` within seconds, and those that do not
(the job's status) answer as always.

moto keeps its objects in memory, so ``Stack.s3_kill`` saves them first and
``Stack.s3_restart`` starts the server with them: a real store's data outlives its
processes. The measured numbers are logged (``--log-cli-level=INFO`` shows them).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest
from rest_framework.authtoken.models import Token

from campaigns.models import Item, Job
from tests.reliability.nodes import (
    Session,
    add_assignments,
    bucket_keys,
    bucket_object,
    items_csv,
    owner_and_stage,
    path_of,
    running_stack,
    wait_done,
)
from tests.reliability.stack import Stack

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.slow(seconds=30), pytest.mark.django_db(transaction=True)]

EXPORT_ROWS = 4_000
UPLOAD_ROWS = 16_000  # over ITEM_UPLOAD_INLINE_MAX_BYTES: a job
OUTAGE_SECONDS = 4.0
REFUSED_WITHIN = 10.0  # seconds: a request that needs the store answers within this


@pytest.fixture(scope="module")
def stack(
    django_db_setup: Any, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    with running_stack(
        django_db_blocker, tmp_path_factory.mktemp("store-outage"), proxy=False
    ) as started:
        yield started


def _clients(stack: Stack, owner: Any) -> tuple[Session, Session]:
    token = Token.objects.create(user=owner).key
    sessions = (Session(), Session())
    for session in sessions:
        session.headers.update({"Authorization": f"Token {token}", "X-Forwarded-Proto": "https"})
    return sessions


def _timed(call: Any) -> tuple[Any, float]:
    began = time.monotonic()
    result = call()
    return result, time.monotonic() - began


def test_export_waits_for_the_store_and_requests_do_not_hang(stack: Stack) -> None:
    owner, stage = owner_and_stage("store-export")
    add_assignments(stage, EXPORT_ROWS)
    node1, node2 = _clients(stack, owner)
    one, two = stack.nodes
    exports = f"{one}/api/v1/campaigns/{stage.campaign.slug}/exports/mturk-csv/jobs/"
    # An export finished before the outage, to download during it.
    earlier = node1.post(exports)
    assert earlier.status_code == 202, earlier.text
    earlier_job = wait_done(lambda p: node2.get(f"{two}{p}"), path_of(earlier.headers["Location"]))
    assert earlier_job["status"] == "done", earlier_job

    saved = stack.s3_kill()
    killed_at = time.monotonic()
    # An export asked for while the store is down: recorded (it needs no file yet) ...
    started = node1.post(exports)
    assert started.status_code == 202, started.text
    job_path = path_of(started.headers["Location"])
    # ... and its worker waits for the store, saying so.
    deadline = time.monotonic() + 20
    while (phase := node2.get(f"{two}{job_path}").json()["phase"]) != "waiting for storage":
        assert time.monotonic() < deadline, phase
        time.sleep(0.2)

    # While the store is down: status answers; what needs the store answers 503 quickly.
    status, status_seconds = _timed(lambda: node2.get(f"{two}{job_path}"))
    assert status.status_code == 200, status.text
    download, download_seconds = _timed(
        lambda: node2.get(f"{two}{path_of(earlier_job['download_url'])}")
    )
    assert download.status_code == 503, download.text[:300]
    assert download.json()["code"] == "storage_unavailable"
    assert int(download.headers["Retry-After"]) > 0
    upload_url = f"{one}/api/v1/stages/{stage.pk}/items/upload/"
    upload, upload_seconds = _timed(
        lambda: node1.post(
            upload_url, data=items_csv(UPLOAD_ROWS), headers={"Content-Type": "text/csv"}
        )
    )
    assert upload.status_code == 503, upload.text[:300]
    assert max(download_seconds, upload_seconds, status_seconds) < REFUSED_WITHIN
    assert Item.objects.filter(stage=stage).count() == 0  # nothing recorded by the 503
    assert not Job.objects.filter(stage=stage).exists()

    time.sleep(max(0.0, OUTAGE_SECONDS - (time.monotonic() - killed_at)))
    stack.s3_restart(saved)
    restarted_at = time.monotonic()
    job = wait_done(lambda p: node2.get(f"{two}{p}"), job_path, timeout=60)
    finished_after = time.monotonic() - restarted_at
    assert job["status"] == "done", job
    assert job["attempt"] == 1  # waited in place, not restarted
    got = node2.get(f"{two}{path_of(job['download_url'])}")
    assert got.status_code == 200, got.text[:300]
    body = got.content
    assert body.count(b"\n") == EXPORT_ROWS + 1 == job["row_count"] + 1
    assert hashlib.sha256(body).hexdigest() == job["checksum_sha256"]
    assert body == bucket_object(stack, job["id"])  # one file for the job, no leftovers
    assert "storage unavailable" in stack.worker_log()
    waited = time.monotonic() - killed_at

    # The client sends the refused upload again: stored once.
    again = node1.post(
        upload_url, data=items_csv(UPLOAD_ROWS), headers={"Content-Type": "text/csv"}
    )
    assert again.status_code == 202, again.text[:300]
    stored = wait_done(lambda p: node2.get(f"{two}{p}"), path_of(again.headers["Location"]))
    assert stored["status"] == "done", stored
    assert Item.objects.filter(stage=stage).count() == UPLOAD_ROWS
    logger.info(
        "store outage during an export: status %.2f s (200), download %.2f s (503), upload "
        "%.2f s (503); the job done %.1f s after the store came back (%.1f s after the kill); "
        "%d bytes, %d rows, sha-256 equal",
        status_seconds,
        download_seconds,
        upload_seconds,
        finished_after,
        waited,
        len(body),
        job["row_count"],
    )


def test_upload_job_waits_for_the_store_and_stores_once(stack: Stack) -> None:
    owner, stage = owner_and_stage("store-upload")
    node1, node2 = _clients(stack, owner)
    one, two = stack.nodes
    # The worker held still until the store is down: it then reads the input from a dead
    # store, and waits.
    worker = stack.worker_proc()
    worker.pause()
    upload = node1.post(
        f"{one}/api/v1/stages/{stage.pk}/items/upload/",
        data=items_csv(UPLOAD_ROWS),
        headers={"Content-Type": "text/csv"},
    )
    assert upload.status_code == 202, upload.text[:300]
    job_path = path_of(upload.headers["Location"])
    try:
        saved = stack.s3_kill()
    finally:
        worker.pause(False)
    status, status_seconds = _timed(lambda: node2.get(f"{two}{job_path}"))
    assert status.status_code == 200
    time.sleep(OUTAGE_SECONDS)
    assert node2.get(f"{two}{job_path}").json()["status"] in ("queued", "running")
    stack.s3_restart(saved)
    restarted_at = time.monotonic()
    job = wait_done(lambda p: node2.get(f"{two}{p}"), job_path, timeout=60)
    finished_after = time.monotonic() - restarted_at
    assert job["status"] == "done", job
    assert job["row_count"] == UPLOAD_ROWS == Item.objects.filter(stage=stage).count()
    assert Item.objects.filter(stage=stage).values("external_id").distinct().count() == UPLOAD_ROWS
    left = bucket_keys(stack, f"jobs/{job['id']}/")
    assert left == []  # the input deleted once stored
    logger.info(
        "store outage during an upload job: status %.2f s (200); the job done %.1f s after "
        "the store came back, attempt %d, %d rows stored once",
        status_seconds,
        finished_after,
        job["attempt"],
        job["row_count"],
    )
