"""Two web nodes behind Caddy; the node serving a request is SIGKILLed in the middle of
it: an item upload whose body is still arriving, an export's download half read.

The client gets a prompt error (a 502 from the proxy, or a broken connection), never a
hang; nothing of the cut upload is recorded, so sending it again through the proxy
(the surviving node) stores every row once; the download sent again is whole, byte for
byte the bucket's file, its SHA-256 the job's. The killed node is started again after
each case. The measured numbers are logged (``--log-cli-level=INFO`` shows them).

Caddy balances round robin (deploy/Caddyfile), so once two probes went to both nodes,
the next request goes to the one that did not serve the last (found in the nodes'
access logs).
"""

from __future__ import annotations

import hashlib
import logging
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from requests.adapters import HTTPAdapter
from rest_framework.authtoken.models import Token

from campaigns.models import Item, Job
from tests.reliability.nodes import (
    add_assignments,
    bucket_object,
    items_csv,
    owner_and_stage,
    path_of,
    running_stack,
    token_client,
    wait_done,
)
from tests.reliability.stack import Stack

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.slow(seconds=30), pytest.mark.django_db(transaction=True)]

UPLOAD_ROWS = 16_000  # some 300 KB: a job
EXPORT_ROWS = 1_000
ANSWER_SIZE = 10_000  # characters of each answer (two bytes each): a 20 MB export
ERROR_WITHIN = 15.0  # seconds from the kill to the client's error


@pytest.fixture(scope="module")
def stack(
    django_db_setup: Any, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    with running_stack(django_db_blocker, tmp_path_factory.mktemp("node-kill")) as started:
        yield started


@pytest.fixture(autouse=True)
def _both_nodes(stack: Stack) -> Iterator[None]:
    """Each case starts with both nodes up, whatever the one before killed."""
    yield
    for index in range(len(stack.nodes)):
        if stack.node_proc(index).process.poll() is not None:
            stack.node_restart(index)


def _served_by(stack: Stack, client: requests.Session) -> int:
    """The index of the node that served a probe through the proxy."""
    probe = uuid.uuid4().hex
    assert client.get(f"{stack.proxy_url}/livez?probe={probe}").status_code == 200
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        for n, folder in enumerate(stack.node_dirs):
            if probe in (folder / "access.log").read_text(errors="replace"):
                return n
        time.sleep(0.05)
    raise AssertionError("no node logged the probe")


def _next_node(stack: Stack, client: requests.Session) -> int:
    """The index of the node Caddy sends the next request to, once both take requests
    again (a node started again stays out of rotation until Caddy's checks see it)."""
    deadline = time.monotonic() + 45
    last = _served_by(stack, client)
    while (served := _served_by(stack, client)) == last:
        assert time.monotonic() < deadline, "one node stays out of the proxy's rotation"
        time.sleep(0.5)
        last = served
    return 1 - served


class _SlowBody:
    """A request body sent in small pieces with pauses; ``started`` is set once some
    ``share`` of it has been read."""

    def __init__(self, content: bytes, *, pieces: int = 40, pause: float = 0.1) -> None:
        self.content, self.offset = content, 0
        self.piece = len(content) // pieces + 1
        self.pause = pause
        self.started = threading.Event()

    def __len__(self) -> int:
        return len(self.content)

    def read(self, size: int = -1) -> bytes:
        if self.offset >= len(self.content):
            return b""
        time.sleep(self.pause)
        piece = self.content[self.offset : self.offset + self.piece]
        self.offset += len(piece)
        if self.offset > len(self.content) // 4:
            self.started.set()
        return piece


def test_node_killed_during_an_upload(stack: Stack) -> None:
    owner, stage = owner_and_stage("kill-upload")
    client = token_client(stack, Token.objects.create(user=owner).key)
    url = f"{stack.proxy_url}/api/v1/stages/{stage.pk}/items/upload/"
    content = items_csv(UPLOAD_ROWS)
    target = _next_node(stack, client)
    body = _SlowBody(content)
    outcome: dict[str, Any] = {}

    def send() -> None:
        try:
            response = client.post(url, data=body, headers={"Content-Type": "text/csv"})
            outcome["answer"] = f"{response.status_code} {response.text[:80]!r}"
            outcome["status"] = response.status_code
        except requests.RequestException as exc:
            outcome["answer"] = type(exc).__name__
        outcome["at"] = time.monotonic()

    sender = threading.Thread(target=send)
    sender.start()
    assert body.started.wait(30)
    stack.node_proc(target).kill()
    killed_at, sent_at_kill = time.monotonic(), body.offset
    sender.join(60)
    assert not sender.is_alive()
    error_seconds = outcome["at"] - killed_at
    assert error_seconds < ERROR_WITHIN
    # A proxy error or a cut connection, never an acceptance of the cut body.
    assert outcome.get("status") in (None, 502, 503, 504), outcome
    assert not Job.objects.filter(stage=stage).exists()
    assert Item.objects.filter(stage=stage).count() == 0

    # The client sends it again: the surviving node takes it; stored once.
    began = time.monotonic()
    again = client.post(url, data=content, headers={"Content-Type": "text/csv"})
    assert again.status_code == 202, again.text[:300]
    job = wait_done(
        lambda p: client.get(f"{stack.proxy_url}{p}"), path_of(again.headers["Location"])
    )
    retried_in = time.monotonic() - began
    assert job["status"] == "done", job
    assert job["row_count"] == UPLOAD_ROWS == Item.objects.filter(stage=stage).count()
    assert Job.objects.filter(stage=stage).count() == 1
    logger.info(
        "node %d killed at %d of %d bytes of an upload: the client got %s %.2f s after the "
        "kill; sent again, 202 and done in %.1f s, %d rows stored once",
        target + 1,
        sent_at_kill,
        len(content),
        outcome["answer"],
        error_seconds,
        retried_in,
        job["row_count"],
    )


class _SmallWindow(HTTPAdapter):
    """Connections with a small receive buffer: the download stays in flight."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        kwargs["socket_options"] = [(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 * 1024)]
        super().init_poolmanager(*args, **kwargs)


def test_node_killed_during_an_export_download(stack: Stack) -> None:
    owner, stage = owner_and_stage("kill-download")
    add_assignments(stage, EXPORT_ROWS, answer_size=ANSWER_SIZE)
    client = token_client(stack, Token.objects.create(user=owner).key)
    client.mount("https://", _SmallWindow())
    client.verify = str(stack.proxy_ca)
    url = stack.proxy_url
    started = client.post(f"{url}/api/v1/campaigns/{stage.campaign.slug}/exports/mturk-csv/jobs/")
    assert started.status_code == 202, started.text[:300]
    job = wait_done(lambda p: client.get(f"{url}{p}"), path_of(started.headers["Location"]))
    assert job["status"] == "done", job
    download_url = f"{url}{path_of(job['download_url'])}"

    target = _next_node(stack, client)
    received = 0
    answer = "complete"
    with client.get(download_url, stream=True) as cut:
        assert cut.status_code == 200
        assert "Content-Encoding" not in cut.headers  # its length kept (deploy/Caddyfile)
        assert int(cut.headers["Content-Length"]) == job["byte_count"]
        chunks = cut.iter_content(64 * 1024)
        received += len(next(chunks))
        stack.node_proc(target).kill()
        killed_at = time.monotonic()
        try:
            for chunk in chunks:
                received += len(chunk)
        except requests.RequestException as exc:
            answer = type(exc).__name__
    error_seconds = time.monotonic() - killed_at
    assert answer != "complete", f"{received} of {job['byte_count']} bytes"
    assert received < job["byte_count"]
    assert error_seconds < ERROR_WITHIN

    began = time.monotonic()
    whole = client.get(download_url)
    retried_in = time.monotonic() - began
    assert whole.status_code == 200
    assert len(whole.content) == job["byte_count"]
    assert hashlib.sha256(whole.content).hexdigest() == job["checksum_sha256"]
    assert whole.content == bucket_object(stack, job["id"])
    assert whole.content.count(b"\n") >= EXPORT_ROWS + 1
    logger.info(
        "node %d killed during a %d-byte download, %d bytes received: the client got %s "
        "%.2f s after the kill; sent again, 200 in %.1f s, %d bytes, sha-256 equal",
        target + 1,
        job["byte_count"],
        received,
        answer,
        error_seconds,
        retried_in,
        len(whole.content),
    )
