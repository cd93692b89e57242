"""qaportal past one box, as real processes on this machine: an S3 server (moto's server
mode), web nodes (gunicorn) and Celery workers, each with a disk of its own (its own
``MEDIA_ROOT``, ``TMPDIR`` and working folder), and Caddy in front over HTTPS with
``deploy/Caddyfile``, the file docker-compose.yml's proxy runs.

Shared by ``tests/reliability/test_two_nodes.py`` and ``bench/proxy_cycles.py``. The
caller owns PostgreSQL and Redis (it passes their URLs); everything started here runs
in a process group of its own and is stopped by that group's id.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

REPO_ROOT = Path(__file__).resolve().parents[2]
CADDYFILE = REPO_ROOT / "deploy" / "Caddyfile"
S3_KEY = "qaportal-test-key"
S3_SECRET = "qaportal-test-secret"  # moto accepts any credentials; S3 signs with them
_KEPT = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "USER", "TZ")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_port(port: int, *, process: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    """Until something accepts on 127.0.0.1:``port``; fails early if ``process`` exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        if process.poll() is not None:
            raise RuntimeError(f"exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        time.sleep(0.1)
    raise RuntimeError(f"nothing listens on {port} after {timeout} s:\n{log.read_text()[-3000:]}")


@dataclass
class Proc:
    """A process in a group of its own, its output in ``log``."""

    name: str
    log: Path
    process: subprocess.Popen[bytes]
    command: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path = REPO_ROOT

    @classmethod
    def start(cls, name: str, command: list[str], *, env: dict[str, str], cwd: Path) -> Proc:
        log = cwd / f"{name}.log"
        with log.open("ab") as out:
            process = subprocess.Popen(
                command,
                cwd=cwd,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return cls(name, log, process, list(command), dict(env), cwd)

    def kill(self) -> None:
        """SIGKILL to the whole group (a gunicorn master and its workers), reaped."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, 9)
        self.process.wait(timeout=10)

    def pause(self, paused: bool = True) -> None:
        """SIGSTOP (or SIGCONT) to the group: orders events, e.g. an outage before a step."""
        os.killpg(self.process.pid, 19 if paused else 18)

    def restart(self, command: list[str] | None = None) -> None:
        """The same command (or ``command``) again, in the same folder and environment."""
        if self.process.poll() is None:
            self.kill()
        self.command = command or self.command
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                self.command,
                cwd=self.cwd,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def stop(self, grace: float = 10) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, 15)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=grace)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, 9)
        self.process.wait(timeout=grace)


@dataclass
class Stack:
    """What :func:`stack_start` started; ``stop()`` ends all of it."""

    root: Path
    s3_url: str
    s3_port: int
    bucket: str
    queue: str
    nodes: list[str] = field(default_factory=list)  # http://127.0.0.1:port
    node_dirs: list[Path] = field(default_factory=list)
    worker_dirs: list[Path] = field(default_factory=list)
    procs: list[Proc] = field(default_factory=list)
    proxy_url: str = ""
    proxy_ca: Path | None = None
    proxy_log: Path | None = None

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.stop()

    def s3(self) -> Any:  # a boto3 client
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.s3_url,
            aws_access_key_id=S3_KEY,
            aws_secret_access_key=S3_SECRET,
            region_name="us-east-1",
        )

    def s3_proc(self) -> Proc:
        return next(proc for proc in self.procs if proc.name == "s3")

    def s3_kill(self) -> Path:
        """Save the bucket's objects to a folder, then SIGKILL the S3 server; the folder
        (what a real store would still hold) for :meth:`s3_restart`."""
        from urllib.parse import quote

        folder = self.root / f"s3-saved-{uuid.uuid4().hex[:6]}"
        folder.mkdir()
        client = self.s3()
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket):
            for entry in page.get("Contents", []):
                body = client.get_object(Bucket=self.bucket, Key=entry["Key"])["Body"].read()
                (folder / quote(entry["Key"], safe="")).write_bytes(body)
        self.s3_proc().kill()
        return folder

    def s3_restart(self, saved: Path) -> None:
        """The S3 server again on the same port, holding the bucket as it was saved."""
        proc = self.s3_proc()
        module = [sys.executable, "-m", "tests.reliability.s3_server"]
        proc.restart([*module, str(self.s3_port), self.bucket, str(saved)])
        wait_port(self.s3_port, process=proc.process, log=proc.log, timeout=30)

    def node_proc(self, index: int) -> Proc:
        return next(proc for proc in self.procs if proc.name == f"node{index + 1}")

    def node_restart(self, index: int) -> None:
        proc = self.node_proc(index)
        proc.restart()
        port = int(self.nodes[index].rsplit(":", 1)[1])
        wait_port(port, process=proc.process, log=proc.log, timeout=60)

    def worker_proc(self) -> Proc:
        return next(proc for proc in self.procs if proc.name == "worker")

    def worker_log(self) -> str:
        return (self.worker_dirs[0] / "worker.log").read_text(errors="replace")

    def local_files(self) -> list[Path]:
        """Files under the nodes' and workers' MEDIA_ROOTs (none: all is in the bucket)."""
        found: list[Path] = []
        for folder in [*self.node_dirs, *self.worker_dirs]:
            found += [p for p in (folder / "media").rglob("*") if p.is_file()]
        return found


def _app_env(
    *, stack: Stack, folder: Path, database_url: str, redis_url: str, extra: dict[str, str]
) -> dict[str, str]:
    env = {k: os.environ[k] for k in _KEPT if k in os.environ}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "qaportal.settings",
            "PYTHONPATH": str(REPO_ROOT),
            "PYTHONUNBUFFERED": "1",
            "DEBUG": "0",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "CELERY_BROKER_URL": redis_url,
            "CELERY_TASK_ALWAYS_EAGER": "0",
            "CACHE_KEY_PREFIX": stack.queue,
            "CELERY_TASK_DEFAULT_QUEUE": stack.queue,
            "QUEUE_PAYMENTS": f"{stack.queue}-payments",
            "QUEUE_HEAVY": f"{stack.queue}-heavy",
            "AWS_STORAGE_BUCKET_NAME": stack.bucket,
            "AWS_S3_ENDPOINT_URL": stack.s3_url,
            "AWS_S3_REGION_NAME": "us-east-1",
            "AWS_S3_ACCESS_KEY_ID": S3_KEY,
            "AWS_S3_SECRET_ACCESS_KEY": S3_SECRET,
            # A disk of its own: media, temporary files, the var folder, the cwd.
            "MEDIA_ROOT": str(folder / "media"),
            "TMPDIR": str(folder / "tmp"),
            "QAPORTAL_VAR_DIR": str(folder / "var"),
            "STATIC_ROOT": str(stack.root / "static"),
            "LOG_LEVEL": "INFO",
            "TRUSTED_PROXIES": "127.0.0.1/32",
        }
    )
    env.update(extra)
    for sub in ("media", "tmp", "var"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    return env


def stack_start(
    *,
    root: Path,
    database_url: str,
    redis_url: str,
    nodes: int = 2,
    web_workers: int = 2,
    worker_concurrency: int = 1,
    proxy: bool = True,
    extra: dict[str, str] | None = None,
) -> Stack:
    """Start an S3 server, ``nodes`` gunicorn nodes, one Celery worker (all three
    queues) and, with ``proxy``, Caddy over HTTPS in front of the nodes."""
    tag = uuid.uuid4().hex[:10]
    s3_port = free_port()
    stack = Stack(
        root=root,
        s3_url=f"http://127.0.0.1:{s3_port}",
        s3_port=s3_port,
        bucket=f"qaportal-{tag}",
        queue=f"qaportal-stack-{tag}",
    )
    extra = extra or {}
    try:
        (root / "s3").mkdir(parents=True)
        env = {k: os.environ[k] for k in _KEPT if k in os.environ}
        moto = Proc.start(
            "s3",
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(s3_port)],
            env={**env, "PYTHONPATH": str(REPO_ROOT)},  # for s3_restart's module
            cwd=root / "s3",
        )
        stack.procs.append(moto)
        # Static files as the image has them (collected once; code, not data).
        collect_env = _app_env(
            stack=stack,
            folder=root / "collect",
            database_url="",
            redis_url="",
            extra={"SECRET_KEY": "collectstatic-only"},
        )
        collect = subprocess.Popen(
            [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"],
            cwd=REPO_ROOT,
            env=collect_env,
        )
        ports = [free_port() for _ in range(nodes)]
        wait_port(s3_port, process=moto.process, log=moto.log, timeout=30)
        if collect.wait(timeout=120) != 0:
            raise RuntimeError("collectstatic failed")
        # The bucket, as docker-compose.yml's storage-init service makes it.
        init = subprocess.run(
            [sys.executable, "manage.py", "storage_init"],
            cwd=REPO_ROOT,
            env=collect_env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if init.returncode != 0 or "created" not in init.stdout:
            raise RuntimeError(f"storage_init failed: {init.stdout}{init.stderr}")
        for n, port in enumerate(ports, start=1):
            folder = root / f"node{n}"
            env = _app_env(
                stack=stack,
                folder=folder,
                database_url=database_url,
                redis_url=redis_url,
                extra=extra,
            )
            command = [sys.executable, "-m", "gunicorn", "qaportal.wsgi"]
            command += ["--bind", f"127.0.0.1:{port}", "--workers", str(web_workers)]
            command += ["--timeout", "60", "--access-logfile", str(folder / "access.log")]
            command += ["--logger-class", "qaportal.gunicorn_logging.RedactingLogger"]
            stack.procs.append(Proc.start(f"node{n}", command, env=env, cwd=folder))
            stack.nodes.append(f"http://127.0.0.1:{port}")
            stack.node_dirs.append(folder)
        folder = root / "worker"
        env = _app_env(
            stack=stack, folder=folder, database_url=database_url, redis_url=redis_url, extra=extra
        )
        queues = ",".join([stack.queue, f"{stack.queue}-payments", f"{stack.queue}-heavy"])
        command = [sys.executable, "-m", "celery", "-A", "qaportal", "worker", "--pool", "prefork"]
        command += ["--concurrency", str(worker_concurrency), "-Q", queues]
        command += ["--hostname", f"{stack.queue}@%h", "--without-gossip", "--without-mingle"]
        command += ["--without-heartbeat", "--loglevel", "INFO"]
        worker = Proc.start("worker", command, env=env, cwd=folder)
        stack.procs.append(worker)
        stack.worker_dirs.append(folder)
        for proc, port in zip(stack.procs[1 : 1 + nodes], ports, strict=True):
            wait_port(port, process=proc.process, log=proc.log, timeout=60)
            # gunicorn binds its port before a worker has loaded the app: a slow machine
            # answered Caddy's first active check (5 s) late, and every node was left
            # out for its 10 s interval ("no upstreams available", 503).
            _wait_live(f"http://127.0.0.1:{port}", proc=proc, timeout=60)
        if proxy:  # once the nodes answer: its first health checks find them up
            _proxy_start(stack, ports)
        _wait_log(worker, b" ready.", timeout=60)
    except BaseException:
        stack.stop()
        raise
    return stack


def _wait_live(url: str, *, proc: Proc, timeout: float, verify: Path | bool = True) -> None:
    """Until ``url``'s ``/livez`` answers 200 (``proc`` serves it, directly or by proxy)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            checked = verify if isinstance(verify, bool) else str(verify)
            answer = requests.get(f"{url}/livez", timeout=5, verify=checked)
            if answer.status_code == 200:
                return
        except OSError:  # requests' errors, and a CA file Caddy has not written yet
            pass
        if proc.process.poll() is not None:
            raise RuntimeError(f"{proc.name} exited:\n{proc.log.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{proc.name}: {url}/livez not 200 after {timeout} s")
        time.sleep(0.2)


def _wait_log(proc: Proc, mark: bytes, *, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if mark in proc.log.read_bytes():
            return
        if proc.process.poll() is not None:
            raise RuntimeError(f"{proc.name} exited:\n{proc.log.read_text()[-3000:]}")
        time.sleep(0.1)
    raise RuntimeError(f"{proc.name}: no {mark!r} after {timeout} s")


def _proxy_start(stack: Stack, ports: list[int]) -> None:
    """Debian's caddy with deploy/Caddyfile: Caddy's internal CA for 127.0.0.1, on
    ports of our own, its data (the CA) under the stack's folder."""
    caddy = shutil.which("caddy")
    if caddy is None:
        raise RuntimeError("caddy is not installed: apt-get install caddy (.ci/run does)")
    folder = stack.root / "proxy"
    (folder / "data").mkdir(parents=True)
    https_port, http_port = free_port(), free_port()
    env = {k: os.environ[k] for k in _KEPT if k in os.environ}
    env.update(
        {
            "HOME": str(folder),
            "XDG_DATA_HOME": str(folder / "data"),
            "XDG_CONFIG_HOME": str(folder / "config"),
            "SITE_ADDRESS": f"https://127.0.0.1:{https_port}",
            "CADDY_TLS": "tls internal",
            "CADDY_GLOBAL_OPTIONS": f"http_port {http_port}\nhttps_port {https_port}\n"
            "skip_install_trust",
            "UPSTREAMS": " ".join(f"127.0.0.1:{port}" for port in ports),
            "HEALTH_HOST": "127.0.0.1",
        }
    )
    proc = Proc.start(
        "proxy",
        [caddy, "run", "--config", str(CADDYFILE), "--adapter", "caddyfile"],
        env=env,
        cwd=folder,
    )
    stack.procs.append(proc)
    wait_port(https_port, process=proc.process, log=proc.log, timeout=30)
    stack.proxy_url = f"https://127.0.0.1:{https_port}"
    ca = folder / "data" / "caddy" / "pki" / "authorities" / "local" / "root.crt"
    stack.proxy_ca = ca
    stack.proxy_log = proc.log
    _wait_live(stack.proxy_url, proc=proc, timeout=30, verify=ca)  # its first checks passed
