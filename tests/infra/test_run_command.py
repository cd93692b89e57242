"""The README's run command, ``make run``: migrate, load the demo, serve, on the embedded default.

The test drives the real Makefile target on a free port with a temporary
``QAPORTAL_VAR_DIR`` and an environment that holds none of the test run's own
configuration, exactly as a person would type it. Only the install step is
skipped (``make -o <stamp>``): a test never reinstalls the virtualenv it runs in;
``make test`` has just built that environment with the same pyproject.toml.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.infra.conftest import (
    REPO_ROOT,
    clean_env,
    free_port,
    stop_process_group,
    wait_for_log,
    wait_until,
)

STARTUP_TIMEOUT = 180


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_opener = urllib.request.build_opener(_NoRedirect)


def http_get(url: str) -> tuple[int, dict[str, str], bytes]:
    """GET without following redirects: (status, headers, body), also for 3xx/4xx/5xx."""
    try:
        with _opener.open(url, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def answers(url: str) -> bool:
    try:
        http_get(url)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False
    return True


def start_make_run(port: int, var_dir: Path, log_path: Path) -> subprocess.Popen[bytes]:
    make = shutil.which("make")
    assert make, "make is not installed (Debian package make)"
    venv = Path(sys.prefix)
    command = [make, "--no-print-directory", "-C", str(REPO_ROOT)]
    command += ["-o", f"{venv}/.installed-runtime", "run", f"PORT={port}", f"VENV={venv}"]
    with log_path.open("ab") as log:
        return subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            env=clean_env(QAPORTAL_VAR_DIR=str(var_dir)),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def wait_until_serving(base: str, process: subprocess.Popen[bytes], log_path: Path) -> None:
    def up() -> bool:
        if process.poll() is not None:
            raise AssertionError(
                f"make run exited with {process.returncode}:\n{log_path.read_text()}"
            )
        return answers(base + "/healthz")

    assert wait_until(up, timeout=STARTUP_TIMEOUT), (
        f"make run did not answer within {STARTUP_TIMEOUT} s:\n{log_path.read_text()}"
    )


@pytest.mark.slow
def test_make_run_serves_the_app_with_demo_data_on_the_embedded_default(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    var_dir = tmp_path / "var"
    log_path = tmp_path / "make-run.log"

    process = start_make_run(port, var_dir, log_path)
    try:
        wait_until_serving(base, process, log_path)

        status, _, body = http_get(base + "/healthz")
        assert status == 200, body
        health = json.loads(body)
        assert health["checks"] == {
            "database": "ok",
            "broker": "eager",
            "cache": "ok",
            "worker": "eager",
            "beat": "eager",
        }

        status, headers, _ = http_get(base + "/")
        assert status in {200, 302}
        if status == 302:
            status, _, _ = http_get(urllib.parse.urljoin(base + "/", headers["Location"]))
            assert status == 200
        status, _, _ = http_get(base + "/accounts/login/")
        assert status == 200

        # DEBUG=1 by default, and static files are served all the same.
        status, headers, _ = http_get(base + "/static/admin/css/base.css")
        assert status == 200
        assert headers["Content-Type"].startswith("text/css")
    finally:
        stop_process_group(process)

    output = log_path.read_text()
    lines = output.lower().splitlines()
    assert any("login" in line or "username" in line for line in lines), output
    assert any("password" in line for line in lines), output
    assert any("token" in line for line in lines), output
    # The embedded default: SQLite under QAPORTAL_VAR_DIR.
    assert (var_dir / "qaportal.sqlite3").is_file()

    # Running the command again (next morning) reuses the database and the demo.
    log_path_again = tmp_path / "make-run-again.log"
    process = start_make_run(port, var_dir, log_path_again)
    try:
        wait_until_serving(base, process, log_path_again)
        wait_for_log(log_path_again, r"(?i)token", process=process, timeout=10)
    finally:
        stop_process_group(process)
    assert _token_line(output) == _token_line(log_path_again.read_text())


def _token_line(output: str) -> str:
    return next(line for line in output.splitlines() if "token" in line.lower())
