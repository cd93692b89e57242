"""JSON log lines with the request id: taken from X-Request-ID when sane, answered
back, carried in the headers of the Celery tasks a request sends; worker ids redacted.
(tests/reliability/test_two_nodes.py follows one id from a web node into a worker.)"""

from __future__ import annotations

import base64
import gzip
import http.server
import io
import json
import logging
import threading
import uuid
from collections.abc import Iterator
from typing import ClassVar

import pytest
import redis
from django.conf import settings as django_settings
from django.test import Client

from qaportal.celery import app
from qaportal.logs import TASK_HEADER, JsonFormatter, RequestIdFilter, request_id
from tests.infra.conftest import clean_env, run_python


@pytest.fixture
def lines() -> Iterator[io.StringIO]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RequestIdFilter())
    logger = logging.getLogger("qaportal.tests.logs")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield out
    logger.removeHandler(handler)


def test_a_sane_request_id_is_kept_and_answered(client: Client) -> None:
    response = client.get("/livez", HTTP_X_REQUEST_ID="req-1234abcd")
    assert response["X-Request-ID"] == "req-1234abcd"


@pytest.mark.parametrize("sent", [None, "short", "x" * 65, "bad id with spaces", "a\nb-12345678"])
def test_otherwise_a_new_one_is_made(client: Client, sent: str | None) -> None:
    headers = {} if sent is None else {"X-Request-ID": sent}
    answered = client.get("/livez", headers=headers)["X-Request-ID"]
    assert answered != sent
    assert len(answered) == 32
    assert answered != client.get("/livez", headers=headers)["X-Request-ID"]


def test_a_line_is_json_with_the_request_id_and_no_worker_id(lines: io.StringIO) -> None:
    token = request_id.set("req-abcdef12")
    try:
        logging.getLogger("qaportal.tests.logs").info(
            "opened /w/mturk/?workerId=%s&assignmentId=%s", "A1SECRETWORKER", "ASSIGN42"
        )
    finally:
        request_id.reset(token)
    entry = json.loads(lines.getvalue())
    assert entry["request_id"] == "req-abcdef12"
    assert entry["level"] == "INFO"
    assert entry["logger"] == "qaportal.tests.logs"
    assert entry["message"] == "opened /w/mturk/?workerId=[redacted]&assignmentId=[redacted]"


def test_an_exception_is_in_the_line(lines: io.StringIO) -> None:
    try:
        raise ValueError("boom?PROLIFIC_PID=5f1e2d3c")
    except ValueError:
        logging.getLogger("qaportal.tests.logs").exception("failed")
    entry = json.loads(lines.getvalue())
    assert "ValueError" in entry["exception"]
    assert "5f1e2d3c" not in entry["exception"]


def test_a_task_sent_during_a_request_carries_its_id() -> None:
    queue = f"qaportal-logs-{uuid.uuid4().hex[:8]}"
    broker = redis.Redis.from_url(django_settings.CELERY_BROKER_URL)
    token = request_id.set("req-into-task-01")
    eager, app.conf.task_always_eager = app.conf.task_always_eager, False
    try:
        app.send_task("qaportal.ping", queue=queue)
        raw = broker.lpop(queue)
    finally:
        app.conf.task_always_eager = eager
        request_id.reset(token)
        broker.delete(queue)
        broker.close()
    assert isinstance(raw, bytes)
    message = json.loads(raw)
    assert message["headers"][TASK_HEADER] == "req-into-task-01"
    assert json.loads(base64.b64decode(message["body"]))[0] == []  # the task's own args


class _FakeSentry(http.server.BaseHTTPRequestHandler):
    """Sentry's envelope endpoint, keeping what it receives (a service outside the
    machine: its protocol, not its product)."""

    received: ClassVar[list[bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        elif self.headers.get("Content-Encoding") == "br":
            raise AssertionError("brotli is not expected")
        self.received.append(body)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


_REPORTS_AN_ERROR = """
import logging
import django
django.setup()
import sentry_sdk
from qaportal.logs import request_id
request_id.set("req-to-sentry-01")
logging.getLogger("qaportal.tests").error("export failed for /w/mturk/?workerId=A1SECRETWORKER")
sentry_sdk.flush(timeout=10)
"""


def test_errors_go_to_sentry_tagged_and_without_worker_ids(tmp_path) -> None:
    _FakeSentry.received.clear()
    server = http.server.HTTPServer(("127.0.0.1", 0), _FakeSentry)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        env = clean_env(
            DJANGO_SETTINGS_MODULE="qaportal.settings",
            DEBUG="0",
            SECRET_KEY="tests-only-secret-key",
            ALLOWED_HOSTS="testserver",
            QAPORTAL_VAR_DIR=str(tmp_path),
            SENTRY_DSN=f"http://publickey@127.0.0.1:{server.server_port}/1",
        )
        result = run_python(_REPORTS_AN_ERROR, env=env)
    finally:
        server.shutdown()
        server.server_close()
    assert result.returncode == 0, result.stderr
    envelope = b"".join(_FakeSentry.received).decode()
    assert "export failed for /w/mturk/?workerId=[redacted]" in envelope
    assert "A1SECRETWORKER" not in envelope
    assert '"request_id": "req-to-sentry-01"' in envelope.replace('":"', '": "')
