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
import uuid
from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
import requests
from django.conf import settings as django_settings
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.utils import timezone
from requests.adapters import HTTPAdapter
from rest_framework.authtoken.models import Token

from campaigns.models import HIT, Assignment, Item, Worker
from tests.factories import CampaignFactory, StageFactory, UserFactory
from tests.reliability.stack import Stack, stack_start
from tests.reliability.test_worker_kill import _database_url

pytestmark = [pytest.mark.slow(seconds=30), pytest.mark.django_db(transaction=True)]

PASSWORD = "a long pass phrase for two nodes"
UPLOAD_ROWS = 16_000  # some 300 KB: over ITEM_UPLOAD_INLINE_MAX_BYTES, so a job
EXPORT_ROWS = 400
LOGIN_FAILURE_LIMIT = 3


@pytest.fixture(scope="module")
def stack(
    django_db_setup: Any, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    with django_db_blocker.unblock():
        database_url = _database_url()
    started = stack_start(
        root=tmp_path_factory.mktemp("two-nodes"),
        database_url=database_url,
        redis_url=django_settings.CELERY_BROKER_URL,
        extra={
            "SECRET_KEY": "two-nodes-secret-key",
            "LOGIN_FAILURE_LIMIT": str(LOGIN_FAILURE_LIMIT),
        },
    )
    try:
        yield started
    finally:
        started.stop()


def _owner_and_stage(tag: str) -> tuple[Any, Any]:
    owner = UserFactory.create(username=f"two-{tag}")
    # The nodes keep Django's default hashers (the tests' own is MD5).
    owner.password = PBKDF2PasswordHasher().encode(PASSWORD, uuid.uuid4().hex, iterations=1000)
    owner.save(update_fields=["password"])
    campaign = CampaignFactory.create(owner=owner, slug=f"two-{tag}")
    return owner, StageFactory.create(campaign=campaign, position=0)


def _assignments(stage: Any, rows: int) -> None:
    """``rows`` submitted assignments: what the mturk-csv export writes out."""
    workers = Worker.objects.bulk_create(
        Worker(provider="local", external_id=f"w{n}-{stage.pk}", pseudonym=f"p{n}-{stage.pk}")
        for n in range(20)
    )
    hits = HIT.objects.bulk_create(
        HIT(stage=stage, provider="local", reward=Decimal("0.50")) for _ in range(rows // 20)
    )
    now = timezone.now()
    Assignment.objects.bulk_create(
        Assignment(
            hit=hit,
            worker=worker,
            provider="local",
            status="submitted",
            answers={"question": f"Why is {hit.pk}-{worker.pk} — “quoted”?"},
            accepted_at=now,
            submitted_at=now + timedelta(seconds=30),
        )
        for hit in hits
        for worker in workers
    )


def _csv(rows: int) -> bytes:
    lines = ["id,topic,complexity_type"] + [f"q{n},movies,count" for n in range(rows)]
    return ("\n".join(lines) + "\n").encode()


def _path(url: str) -> str:
    return re.sub(r"^https?://[^/]+", "", url)


def _wait_done(get: Any, job_path: str, timeout: float = 90) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        job: dict[str, Any] = get(job_path).json()
        if job["status"] in ("done", "failed") or time.monotonic() > deadline:
            return job
        time.sleep(0.3)


def _bucket_object(stack: Stack, job_id: str) -> bytes:
    listed = stack.s3().list_objects_v2(Bucket=stack.bucket, Prefix=f"jobs/{job_id}/")
    keys = [entry["Key"] for entry in listed.get("Contents", [])]
    assert len(keys) == 1, keys
    body: bytes = stack.s3().get_object(Bucket=stack.bucket, Key=keys[0])["Body"].read()
    return body


def test_upload_through_node_1_export_downloads_through_node_2(stack: Stack) -> None:
    owner, stage = _owner_and_stage("direct")
    _assignments(stage, EXPORT_ROWS)
    token = Token.objects.create(user=owner).key
    node1, node2 = (_Session() for _ in range(2))
    for session in (node1, node2):
        # The nodes take X-Forwarded-Proto from the proxy; here the test is the proxy.
        session.headers.update({"Authorization": f"Token {token}", "X-Forwarded-Proto": "https"})
    one, two = stack.nodes

    upload = node1.post(
        f"{one}/api/v1/stages/{stage.pk}/items/upload/",
        data=_csv(UPLOAD_ROWS),
        headers={"Content-Type": "text/csv", "X-Request-ID": "two-nodes-upload-0001"},
    )
    assert upload.status_code == 202, upload.text
    assert upload.headers["X-Request-ID"] == "two-nodes-upload-0001"
    job = _wait_done(lambda path: node2.get(f"{two}{path}"), _path(upload.headers["Location"]))
    assert job["status"] == "done", job
    assert job["row_count"] == UPLOAD_ROWS == Item.objects.filter(stage=stage).count()
    # The worker logged the job under the request's id, as a JSON line.
    lines = [json.loads(line) for line in stack.worker_log().splitlines() if line.startswith("{")]
    (done,) = [line for line in lines if line["message"].startswith(f"job {job['id']} ")]
    assert done["request_id"] == "two-nodes-upload-0001"

    started = node1.post(f"{one}/api/v1/campaigns/{stage.campaign.slug}/exports/mturk-csv/jobs/")
    assert started.status_code == 202, started.text
    job = _wait_done(lambda path: node2.get(f"{two}{path}"), _path(started.headers["Location"]))
    assert job["status"] == "done", job
    download = node2.get(f"{two}{_path(job['download_url'])}")
    assert download.status_code == 200, download.text[:500]
    body = download.content
    assert body.count(b"\n") == EXPORT_ROWS + 1
    assert hashlib.sha256(body).hexdigest() == job["checksum_sha256"]
    assert download.headers["X-Checksum-SHA256"] == job["checksum_sha256"]
    assert body == _bucket_object(stack, job["id"])
    # Nothing on any node's or the worker's own disk: the upload's input was deleted
    # from the bucket once stored, the export lives there alone.
    assert stack.local_files() == []
    assert _bucket_keys(stack, f"jobs/{upload.json()['id']}/") == []


def _bucket_keys(stack: Stack, prefix: str) -> list[str]:
    listed = stack.s3().list_objects_v2(Bucket=stack.bucket, Prefix=prefix)
    return [entry["Key"] for entry in listed.get("Contents", [])]


class _Session(requests.Session):
    """A session whose requests give up after 30 s: a stuck node fails the test."""

    def __init__(self) -> None:
        super().__init__()
        self.trust_env = False  # REQUESTS_CA_BUNDLE would win over ``verify``

    def request(self, *args: Any, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("timeout", 30)
        return super().request(*args, **kwargs)


class _FromAddress(HTTPAdapter):
    """Connections from ``address`` (any 127.x.y.z is this machine's loopback)."""

    def __init__(self, address: str) -> None:
        self.address = address
        super().__init__()

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        kwargs["source_address"] = (self.address, 0)
        super().init_poolmanager(*args, **kwargs)


def _client(stack: Stack, address: str) -> requests.Session:
    session = _Session()
    session.mount("https://", _FromAddress(address))
    session.verify = str(stack.proxy_ca)
    session.headers["Referer"] = f"{stack.proxy_url}/accounts/login/"
    return session


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
    owner, stage = _owner_and_stage("proxy")
    _assignments(stage, EXPORT_ROWS)
    url = stack.proxy_url

    # The lockout counts the client's own address, which Caddy forwards: failures from
    # 127.0.0.2 lock that address, even when it claims another one ...
    attacker = _client(stack, "127.0.0.2")
    for _ in range(LOGIN_FAILURE_LIMIT):
        assert _login(attacker, stack, owner.username, "wrong").status_code == 200
    assert _login(attacker, stack, owner.username, PASSWORD).status_code == 429
    spoofed = _login(attacker, stack, owner.username, PASSWORD, **{"X-Forwarded-For": "10.9.9.9"})
    assert spoofed.status_code == 429
    # ... and not the proxy's address, which every client shares: 127.0.0.3 logs in.
    requester = _client(stack, "127.0.0.3")
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
        upload_url, data=_csv(UPLOAD_ROWS), headers={"Content-Type": "text/csv"}
    )
    assert upload.status_code == 202, upload.text[:500]
    job = _wait_done(lambda path: requester.get(f"{url}{path}"), _path(upload.headers["Location"]))
    assert job["status"] == "done", job

    started = requester.post(f"{url}/api/v1/campaigns/{stage.campaign.slug}/exports/csv/jobs/")
    assert started.status_code == 202, started.text[:500]
    job = _wait_done(lambda path: requester.get(f"{url}{path}"), _path(started.headers["Location"]))
    assert job["status"] == "done", job
    download = requester.get(f"{url}{_path(job['download_url'])}")
    assert download.status_code == 200
    assert download.content == _bucket_object(stack, job["id"])
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
