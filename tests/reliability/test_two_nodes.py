"""qaportal past one box: two gunicorn nodes and a Celery worker, each with a disk of
its own, sharing PostgreSQL, Redis and an S3 server (moto's server mode), then Caddy in
front of the nodes over HTTPS (deploy/Caddyfile, the compose proxy's file).

An item file uploaded through node 1 is stored by the worker; the export the worker
writes downloads through node 2, byte for byte what the bucket holds, with nothing on
any local disk. Through the proxy: login with CSRF, the login lockout keyed on the
client's own address (not the proxy's, and not one the client claims), the same
upload and download, both nodes serving, and no worker id in the proxy's log.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from rest_framework.authtoken.models import Token

from campaigns.models import Item
from tests.reliability.nodes import (
    PASSWORD,
    Session,
    add_assignments,
    bucket_keys,
    bucket_object,
    items_csv,
    owner_and_stage,
    path_of,
    proxy_client,
    running_stack,
    wait_done,
)
from tests.reliability.stack import Stack

pytestmark = [pytest.mark.slow(seconds=30), pytest.mark.django_db(transaction=True)]

UPLOAD_ROWS = 16_000  # some 300 KB: over ITEM_UPLOAD_INLINE_MAX_BYTES, so a job
EXPORT_ROWS = 400
LOGIN_FAILURE_LIMIT = 3


@pytest.fixture(scope="module")
def stack(
    django_db_setup: Any, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    with running_stack(
        django_db_blocker,
        tmp_path_factory.mktemp("two-nodes"),
        extra={"LOGIN_FAILURE_LIMIT": str(LOGIN_FAILURE_LIMIT)},
    ) as started:
        yield started


def worker_log_line(stack: Stack, prefix: str, timeout: float = 15) -> dict[str, Any]:
    """The worker's one JSON log line whose message starts with ``prefix`` (waited for
    up to ``timeout`` seconds; a missing or repeated line fails)."""
    deadline = time.monotonic() + timeout
    while True:
        lines = [json.loads(x) for x in stack.worker_log().splitlines() if x.startswith("{")]
        found = [line for line in lines if line["message"].startswith(prefix)]
        if found or time.monotonic() > deadline:
            assert len(found) == 1, (prefix, found)
            return found[0]
        time.sleep(0.2)


def test_upload_through_node_1_export_downloads_through_node_2(stack: Stack) -> None:
    owner, stage = owner_and_stage("direct")
    add_assignments(stage, EXPORT_ROWS)
    token = Token.objects.create(user=owner).key
    node1, node2 = (Session() for _ in range(2))
    for session in (node1, node2):
        # The nodes take X-Forwarded-Proto from the proxy; here the test is the proxy.
        session.headers.update({"Authorization": f"Token {token}", "X-Forwarded-Proto": "https"})
    one, two = stack.nodes

    upload = node1.post(
        f"{one}/api/v1/stages/{stage.pk}/items/upload/",
        data=items_csv(UPLOAD_ROWS),
        headers={"Content-Type": "text/csv", "X-Request-ID": "two-nodes-upload-0001"},
    )
    assert upload.status_code == 202, upload.text
    assert upload.headers["X-Request-ID"] == "two-nodes-upload-0001"
    job = wait_done(lambda path: node2.get(f"{two}{path}"), path_of(upload.headers["Location"]))
    assert job["status"] == "done", job
    assert job["row_count"] == UPLOAD_ROWS == Item.objects.filter(stage=stage).count()
    # The worker logged the job under the request's id, as a JSON line (written after the
    # status the nodes answer with, so it may lag the "done" seen above by a moment).
    done = worker_log_line(stack, f"job {job['id']} ")
    assert done["request_id"] == "two-nodes-upload-0001"

    started = node1.post(f"{one}/api/v1/campaigns/{stage.campaign.slug}/exports/mturk-csv/jobs/")
    assert started.status_code == 202, started.text
    job = wait_done(lambda path: node2.get(f"{two}{path}"), path_of(started.headers["Location"]))
    assert job["status"] == "done", job
    download = node2.get(f"{two}{path_of(job['download_url'])}")
    assert download.status_code == 200, download.text[:500]
    body = download.content
    assert body.count(b"\n") == EXPORT_ROWS + 1
    assert hashlib.sha256(body).hexdigest() == job["checksum_sha256"]
    assert download.headers["X-Checksum-SHA256"] == job["checksum_sha256"]
    assert body == bucket_object(stack, job["id"])
    # Nothing on any node's or the worker's own disk: the upload's input was deleted
    # from the bucket once stored, the export lives there alone.
    assert stack.local_files() == []
    assert bucket_keys(stack, f"jobs/{upload.json()['id']}/") == []


def _login(session: requests.Session, stack: Stack, username: str, password: str, **headers: str):
    page = session.get(f"{stack.proxy_url}/accounts/login/")
    assert page.status_code == 200, page.status_code
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token is not None
    return session.post(
        f"{stack.proxy_url}/accounts/login/",
        data={"username": username, "password": password, "csrfmiddlewaretoken": token[1]},
        headers=headers,
        allow_redirects=False,
    )


def test_through_the_proxy_over_https(stack: Stack) -> None:
    owner, stage = owner_and_stage("proxy")
    add_assignments(stage, EXPORT_ROWS)
    url = stack.proxy_url

    # The lockout counts the client's own address, which Caddy forwards: failures from
    # 127.0.0.2 lock that address, even when it claims another one ...
    attacker = proxy_client(stack, "127.0.0.2")
    for _ in range(LOGIN_FAILURE_LIMIT):
        assert _login(attacker, stack, owner.username, "wrong").status_code == 200
    assert _login(attacker, stack, owner.username, PASSWORD).status_code == 429
    spoofed = _login(attacker, stack, owner.username, PASSWORD, **{"X-Forwarded-For": "10.9.9.9"})
    assert spoofed.status_code == 429
    # ... and not the proxy's address, which every client shares: 127.0.0.3 logs in.
    requester = proxy_client(stack, "127.0.0.3")
    login = _login(requester, stack, owner.username, PASSWORD)
    assert login.status_code == 302, login.text[:500]
    assert requester.cookies.get("sessionid")
    assert "Secure" in login.headers["Set-Cookie"]  # the scheme came through: https

    # CSRF holds through the proxy: a write without the token is refused.
    csrf = requester.cookies["csrftoken"]
    upload_url = f"{url}/api/v1/stages/{stage.pk}/items/upload/"
    refused = requester.post(upload_url, data=b"id\n", headers={"Content-Type": "text/csv"})
    assert refused.status_code == 403, refused.text[:300]
    requester.headers["X-CSRFToken"] = csrf
    upload = requester.post(
        upload_url, data=items_csv(UPLOAD_ROWS), headers={"Content-Type": "text/csv"}
    )
    assert upload.status_code == 202, upload.text[:500]
    job = wait_done(lambda path: requester.get(f"{url}{path}"), path_of(upload.headers["Location"]))
    assert job["status"] == "done", job

    started = requester.post(f"{url}/api/v1/campaigns/{stage.campaign.slug}/exports/csv/jobs/")
    assert started.status_code == 202, started.text[:500]
    job = wait_done(
        lambda path: requester.get(f"{url}{path}"), path_of(started.headers["Location"])
    )
    assert job["status"] == "done", job
    download = requester.get(f"{url}{path_of(job['download_url'])}")
    assert download.status_code == 200
    assert download.content == bucket_object(stack, job["id"])
    assert hashlib.sha256(download.content).hexdigest() == job["checksum_sha256"]

    # Round robin: both nodes served this test's requests.
    for folder in stack.node_dirs:
        assert "/api/v1/jobs/" in (folder / "access.log").read_text()
    # The proxy's access log names no worker.
    requester.get(f"{url}/healthz?workerId=A1SECRETWORKER&assignmentId=ASSIGN42")
    time.sleep(0.3)
    assert stack.proxy_log is not None
    log = stack.proxy_log.read_text()
    assert "/healthz?" in log
    assert "A1SECRETWORKER" not in log
    assert "ASSIGN42" not in log
    assert stack.local_files() == []


def test_the_probes_answer_through_the_nodes(stack: Stack) -> None:
    for node in stack.nodes:
        assert requests.get(f"{node}/livez", timeout=5).json() == {"status": "alive"}
        ready = requests.get(f"{node}/readyz", timeout=5)
        assert ready.status_code == 200, ready.text
        assert ready.json()["checks"]["database"] == "ok"
