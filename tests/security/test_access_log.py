"""The access log the Dockerfile enables: a real gunicorn serving worker URLs logs no
workerId, assignmentId or PROLIFIC_PID value (the request line and the Referer)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from datetime import timedelta
from pathlib import Path

import pytest
from gunicorn.config import Config
from gunicorn.glogging import Logger, SafeAtoms

from qaportal.gunicorn_logging import RedactingLogger, redact
from tests.infra.conftest import REPO_ROOT, clean_env

DOCKERFILE = (REPO_ROOT / "Dockerfile").read_text()
COMPOSE = (REPO_ROOT / "docker-compose.yml").read_text()
LOGGER = "--logger-class qaportal.gunicorn_logging.RedactingLogger"


def test_the_image_and_compose_run_gunicorn_with_the_redacting_logger() -> None:
    assert LOGGER in DOCKERFILE
    assert LOGGER in COMPOSE


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "GET /w/mturk/?assignmentId=3XYZ&hitId=H1&workerId=A1B2C3&turkSubmitTo=x HTTP/1.1",
            "GET /w/mturk/?assignmentId=[redacted]&hitId=H1&workerId=[redacted]&turkSubmitTo=x"
            " HTTP/1.1",
        ),
        (
            "PROLIFIC_PID=5f1e2d3c4b5a69788796a5b4&STUDY_ID=s&SESSION_ID=x",
            "PROLIFIC_PID=[redacted]&STUDY_ID=s&SESSION_ID=x",
        ),
        ("https://x/?WORKERID=abc", "https://x/?WORKERID=[redacted]"),
        ("next=%2Fw%2F%3FworkerId%3DA1B2", "next=%2Fw%2F%3FworkerId%3D[redacted]"),
        ("GET /campaigns/?page=2 HTTP/1.1", "GET /campaigns/?page=2 HTTP/1.1"),
    ],
)
def test_redact(line: str, expected: str) -> None:
    assert redact(line) == expected


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_a_real_gunicorn_access_log_holds_no_worker_ids(tmp_path: Path) -> None:
    port = _free_port()
    env = clean_env(
        DJANGO_SETTINGS_MODULE="qaportal.settings",
        DEBUG="0",
        SECRET_KEY="tests-only-secret-key",
        ALLOWED_HOSTS="127.0.0.1",
        SECURE_SSL_REDIRECT="0",
        QAPORTAL_VAR_DIR=str(tmp_path / "var"),
    )
    log_path = tmp_path / "access.log"
    command = [sys.executable, "-m", "gunicorn", "qaportal.wsgi", "--bind", f"127.0.0.1:{port}"]
    command += ["--workers", "1", "--access-logfile", str(log_path), *LOGGER.split()]
    process = subprocess.Popen(
        command, cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        url = f"http://127.0.0.1:{port}/healthz?workerId=A1SECRETWORKER&assignmentId=ASSIGN42"
        referer = "https://worker.example/?PROLIFIC_PID=5f1e2d3c4b5a69788796a5b4"
        deadline = time.monotonic() + 30
        while True:
            try:
                request = urllib.request.Request(url, headers={"Referer": referer})
                urllib.request.urlopen(request, timeout=5).read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
        time.sleep(0.5)
    finally:
        process.terminate()
        process.wait(timeout=15)
    log = log_path.read_text()
    assert "/healthz?workerId=[redacted]&assignmentId=[redacted]" in log
    for secret in ("A1SECRETWORKER", "ASSIGN42", "5f1e2d3c4b5a69788796a5b4"):
        assert secret not in log


class _Request:
    headers = [
        ("HOST", "qa.example.org"),
        ("USER-AGENT", 'Mozilla/5.0 "quoted"'),
        ("REFERER", "https://worker.example/?workerId=A1SECRET&x=1"),
        ("X-FORWARDED-FOR", "203.0.113.7"),
    ]


class _Response:
    status = "302 Found"
    sent = 0
    headers = [("Content-Type", "text/html; charset=utf-8"), ("Location", "/work/a/7/done/")]


_ENVIRON = {
    "REQUEST_METHOD": "POST",
    "RAW_URI": "/w/mturk/?assignmentId=3XYZ&workerId=A1SECRET",
    "PATH_INFO": "/w/mturk/",
    "QUERY_STRING": "assignmentId=3XYZ&workerId=A1SECRET",
    "SERVER_PROTOCOL": "HTTP/1.1",
    "REMOTE_ADDR": "10.0.0.2",
    "HTTP_REFERER": "https://worker.example/?workerId=A1SECRET&x=1",
    "HTTP_USER_AGENT": 'Mozilla/5.0 "quoted"',
    "HTTP_AUTHORIZATION": "Basic dXNlcjpwYXNz",
    "wsgi.url_scheme": "https",
}


@pytest.mark.parametrize(
    "log_format",
    [
        None,  # gunicorn's default
        "%(h)s %(l)s %(u)s %(t)s %(r)s %(s)s %(m)s %(U)s %(q)s %(H)s %(b)s %(B)s %(f)s %(a)s"
        " %(T)s %(D)s %(M)s %(L)s %(p)s",
        "%({Referer}i)s %({x-forwarded-for}i)s %({location}o)s %({wsgi.url_scheme}e)s %({nope}i)s"
        " %(missing)s",
    ],
)
def test_the_lines_are_gunicorns_own_with_identities_redacted(log_format: str | None) -> None:
    """The logger works out only the atoms its format prints; each line is what gunicorn's
    own logger writes, the identities' values redacted."""
    cfg = Config()
    if log_format is not None:
        cfg.set("access_log_format", log_format)
    fmt = cfg.access_log_format
    took = timedelta(seconds=1, microseconds=2345)
    ours = RedactingLogger(cfg)
    theirs = Logger(cfg)
    theirs.now = ours.now = lambda: "[29/Nov/2026:10:00:00 +0000]"
    expected_atoms = {
        key: redact(value) if key in ("r", "q", "f", "{referer}i") else value
        for key, value in theirs.atoms(_Response, _Request, _ENVIRON, took).items()
    }
    line = fmt % SafeAtoms(ours.atoms(_Response, _Request, _ENVIRON, took))
    assert line == fmt % SafeAtoms(expected_atoms)
    assert "A1SECRET" not in line
    assert "3XYZ" not in line
