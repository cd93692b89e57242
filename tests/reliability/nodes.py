"""What the tests against a running stack (``stack.py``: web nodes, a worker, an S3
server, Caddy) share: the stack as a module fixture, a requester with a campaign, the
rows an export writes, HTTP clients with a bound on every request, waiting for a job.

Used by ``test_two_nodes.py``, ``test_node_kill.py`` and ``test_object_store_outage.py``.
"""

from __future__ import annotations

import contextlib
import re
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import requests
from django.conf import settings as django_settings
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.utils import timezone
from requests.adapters import HTTPAdapter

from campaigns.models import HIT, Assignment, Worker
from tests.factories import CampaignFactory, StageFactory, UserFactory
from tests.reliability.stack import Stack, stack_start
from tests.reliability.test_worker_kill import _database_url

PASSWORD = "a long pass phrase for two nodes"


@contextlib.contextmanager
def running_stack(
    django_db_blocker: Any, root: Path, *, proxy: bool = True, extra: dict[str, str] | None = None
) -> Iterator[Stack]:
    """A stack on the tests' PostgreSQL database and Redis, stopped afterwards."""
    with django_db_blocker.unblock():
        database_url = _database_url()
    started = stack_start(
        root=root,
        database_url=database_url,
        redis_url=django_settings.CELERY_BROKER_URL,
        proxy=proxy,
        extra={"SECRET_KEY": "two-nodes-secret-key", **(extra or {})},
    )
    try:
        yield started
    finally:
        started.stop()


def owner_and_stage(tag: str) -> tuple[Any, Any]:
    owner = UserFactory.create(username=f"two-{tag}")
    # The nodes keep Django's default hashers (the tests' own is MD5).
    owner.password = PBKDF2PasswordHasher().encode(PASSWORD, uuid.uuid4().hex, iterations=1000)
    owner.save(update_fields=["password"])
    campaign = CampaignFactory.create(owner=owner, slug=f"two-{tag}")
    return owner, StageFactory.create(campaign=campaign, position=0)


def add_assignments(stage: Any, rows: int, *, answer_size: int = 0) -> None:
    """``rows`` submitted assignments: what the mturk-csv export writes out (each answer
    padded to some ``answer_size`` characters, for a larger file)."""
    workers = Worker.objects.bulk_create(
        Worker(provider="local", external_id=f"w{n}-{stage.pk}", pseudonym=f"p{n}-{stage.pk}")
        for n in range(20)
    )
    hits = HIT.objects.bulk_create(
        HIT(stage=stage, provider="local", reward=Decimal("0.50")) for _ in range(rows // 20)
    )
    now = timezone.now()
    padding = "·" * answer_size
    Assignment.objects.bulk_create(
        Assignment(
            hit=hit,
            worker=worker,
            provider="local",
            status="submitted",
            answers={"question": f"Why is {hit.pk}-{worker.pk} — “quoted”?{padding}"},
            accepted_at=now,
            submitted_at=now + timedelta(seconds=30),
        )
        for hit in hits
        for worker in workers
    )


def items_csv(rows: int) -> bytes:
    lines = ["id,topic,complexity_type"] + [f"q{n},movies,count" for n in range(rows)]
    return ("\n".join(lines) + "\n").encode()


def path_of(url: str) -> str:
    return re.sub(r"^https?://[^/]+", "", url)


def wait_done(
    get: Callable[[str], requests.Response], job_path: str, timeout: float = 90
) -> dict[str, Any]:
    """The job once done or failed (or as it is after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while True:
        job: dict[str, Any] = get(job_path).json()
        if job["status"] in ("done", "failed") or time.monotonic() > deadline:
            return job
        time.sleep(0.3)


def bucket_keys(stack: Stack, prefix: str) -> list[str]:
    listed = stack.s3().list_objects_v2(Bucket=stack.bucket, Prefix=prefix)
    return [entry["Key"] for entry in listed.get("Contents", [])]


def bucket_object(stack: Stack, job_id: str) -> bytes:
    """The one file the bucket holds for the job."""
    keys = bucket_keys(stack, f"jobs/{job_id}/")
    assert len(keys) == 1, keys
    body: bytes = stack.s3().get_object(Bucket=stack.bucket, Key=keys[0])["Body"].read()
    return body


class Session(requests.Session):
    """A session whose requests give up after 30 s: a stuck node fails the test."""

    def __init__(self) -> None:
        super().__init__()
        self.trust_env = False  # REQUESTS_CA_BUNDLE would win over ``verify``

    def request(self, *args: Any, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("timeout", 30)
        return super().request(*args, **kwargs)


class FromAddress(HTTPAdapter):
    """Connections from ``address`` (any 127.x.y.z is this machine's loopback)."""

    def __init__(self, address: str) -> None:
        self.address = address
        super().__init__()

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        kwargs["source_address"] = (self.address, 0)
        super().init_poolmanager(*args, **kwargs)


def proxy_client(stack: Stack, address: str = "127.0.0.1") -> Session:
    """A client of the proxy (HTTPS, Caddy's CA), from ``address``."""
    session = Session()
    session.mount("https://", FromAddress(address))
    session.verify = str(stack.proxy_ca)
    session.headers["Referer"] = f"{stack.proxy_url}/accounts/login/"
    return session


def token_client(stack: Stack, token: str) -> Session:
    """A client of the proxy signed in with an API token."""
    session = proxy_client(stack)
    session.headers["Authorization"] = f"Token {token}"
    return session
