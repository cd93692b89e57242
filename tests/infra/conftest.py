"""Helpers for the infrastructure tests: subprocesses with a clean environment."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

# What a fresh shell has; nothing of the test run's own configuration
# (DATABASE_URL, DJANGO_SETTINGS_MODULE, MAKEFLAGS, ...) leaks into a subprocess.
_KEPT_VARIABLES = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "USER", "TZ")


def clean_env(**overrides: str) -> dict[str, str]:
    """A minimal environment plus ``overrides``: the app sees only what a test gives it."""
    env = {name: os.environ[name] for name in _KEPT_VARIABLES if name in os.environ}
    env.update(overrides)
    return env


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def run_in_repo(
    *args: str, env: Mapping[str, str], timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run ``python *args`` (``manage.py …``, ``-c code``) from the repository root with
    exactly ``env``; its output captured as text, its exit code left to the caller."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=REPO_ROOT,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def run_python(
    code: str, *, env: Mapping[str, str], timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run ``python -c code`` from the repository root with exactly ``env``."""
    return run_in_repo("-c", code, env=env, timeout=timeout)


def wait_for_log(
    log_path: Path,
    pattern: str,
    *,
    process: subprocess.Popen[bytes],
    timeout: float,
) -> re.Match[str]:
    """Wait until ``pattern`` appears in the file ``log_path``; fail early if ``process`` exits."""
    regex = re.compile(pattern)
    deadline = time.monotonic() + timeout
    while True:
        text = log_path.read_text(errors="replace") if log_path.exists() else ""
        match = regex.search(text)
        if match:
            return match
        if process.poll() is not None:
            raise AssertionError(
                f"process exited with {process.returncode} before printing {pattern!r}:\n{text}"
            )
        if time.monotonic() > deadline:
            raise AssertionError(f"no {pattern!r} within {timeout} s:\n{text}")
        time.sleep(0.2)


def wait_until(check: Callable[[], bool], *, timeout: float, interval: float = 0.3) -> bool:
    """Poll ``check`` until it returns True or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(interval)
    return False


def stop_process_group(process: subprocess.Popen[bytes], *, grace: float = 15) -> None:
    """SIGTERM the process group that ``process`` leads (started with start_new_session),
    then SIGKILL whatever is left after ``grace`` seconds."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=grace)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=grace)
