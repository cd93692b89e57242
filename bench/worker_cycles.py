"""Worker cycles: qaportal against Turkle 3.1.0, side by side, in one run.

    python3 bench/worker_cycles.py            # 10 and 50 workers x 30 s per app
    python3 bench/worker_cycles.py --quick    # 5 s per level (smoke run)

One run: makes a temporary folder; installs Turkle 3.1.0 from PyPI into a venv
there with a minimal site (bench/turkle_site) on its own PostgreSQL database;
sets qaportal up on its own database with qaportal's venv; starts both under
gunicorn (same worker count and class); drives both with the same closed-loop
load generator (bench/loadgen.py: K simulated workers doing accept -> page ->
submit for T seconds); verifies each acknowledged submission is stored exactly
once; counts database queries per worker request; prints a table and writes
bench/out/worker_cycles.json. Both servers are stopped at the end.

Only loopback traffic; every loop is bounded in time and count.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

import loadgen  # noqa: E402

HOST = "127.0.0.1"
PG = {"host": "127.0.0.1", "port": "5432", "user": "postgres"}
# Databases and Redis databases of the run (flushed!): BENCH_DB_SUFFIX and
# BENCH_REDIS_DBS (two numbers, cache and broker) keep runs side by side apart.
TURKLE_DB = "bench_turkle" + os.environ.get("BENCH_DB_SUFFIX", "")
QAPORTAL_DB = "bench_qaportal" + os.environ.get("BENCH_DB_SUFFIX", "")
REDIS_CACHE_DB, REDIS_BROKER_DB = (
    int(n) for n in os.environ.get("BENCH_REDIS_DBS", "9,10").split(",")
)


# Work for the run. Turkle's accept loads and locks every unfinished task of its batch,
# so its cost grows with the batch (~35 ms CPU/cycle at 700 tasks, ~58 at 3800): the
# batch is topped up to the same number of unfinished tasks before the warm-up and
# before every slice (untimed), so every level sees the same batch and none runs dry.
# 2,000 is about the mean the 10-worker level saw when one batch of 40/s x run time
# served the whole run (it started at 2,640 and ran dry at 50 workers); a slice uses
# at most a few hundred tasks (62 cycles/s at 50 workers on a quiet machine).
TURKLE_POOL = 2000
# qaportal's accept takes the first open HIT from a partial index, whose cost does
# not grow with the stage; its stage gets room for this many cycles/s over the whole
# run (it did 297/s at 50 workers on a quiet machine before running dry at 16,500).
QAPORTAL_RATE_CAP = 450


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def run(
    cmd: list[str],
    *,
    env: dict | None = None,
    cwd: Path | None = None,
    timeout: float = 600,
    capture: bool = True,
) -> str:
    p = subprocess.run(
        cmd,
        env=env,
        cwd=cwd,
        timeout=timeout,
        text=True,
        stdout=subprocess.PIPE if capture else None,
        stderr=subprocess.PIPE,
    )
    if p.returncode != 0:
        raise RuntimeError(
            f"{' '.join(map(str, cmd))} failed ({p.returncode}):\n{p.stderr[-4000:]}"
        )
    return p.stdout if capture else ""


def psql(sql: str, db: str = "postgres") -> str:
    return run(
        [
            "psql",
            "-h",
            PG["host"],
            "-p",
            PG["port"],
            "-U",
            PG["user"],
            "-d",
            db,
            "-v",
            "ON_ERROR_STOP=1",
            "-At",
            "-c",
            sql,
        ],
        timeout=120,
    )


def recreate_db(name: str) -> None:
    psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    psql(f'CREATE DATABASE "{name}"')


def redis_cmd(db: int, *args: str) -> bytes:
    """One Redis command on ``db`` (RESP over a loopback socket, no client library)."""

    def enc(parts: tuple[str, ...]) -> bytes:
        out = f"*{len(parts)}\r\n".encode()
        for p in parts:
            b = p.encode()
            out += f"${len(b)}\r\n".encode() + b + b"\r\n"
        return out

    with socket.create_connection((HOST, 6379), timeout=5) as s:
        s.sendall(enc(("SELECT", str(db))) + enc(args))
        data = b""
        while data.count(b"\r\n") < 2:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    return data


def free_port() -> int:
    """A free port: any, or one of ``BENCH_PORTS`` ("21000-21999") on a shared machine."""
    low, _, high = os.environ.get("BENCH_PORTS", "").partition("-")
    if not (low and high):
        with socket.socket() as s:
            s.bind((HOST, 0))
            return int(s.getsockname()[1])
    for candidate in range(int(low), int(high) + 1):
        with socket.socket() as s:
            try:
                s.bind((HOST, candidate))
            except OSError:
                continue
            port: int = s.getsockname()[1]
            if port not in _PORTS_GIVEN:
                _PORTS_GIVEN.add(port)
                return port
    raise SystemExit(f"no free port in BENCH_PORTS={os.environ.get('BENCH_PORTS')}")


_PORTS_GIVEN: set[int] = set()


class Server:
    """A gunicorn we started, in its own process group; stopped by that group's id."""

    def __init__(self, name: str, cmd: list[str], env: dict, cwd: Path, logfile: Path, port: int):
        self.name, self.port, self.logfile = name, port, logfile
        self.fh = open(logfile, "w")  # noqa: SIM115
        self.proc = subprocess.Popen(
            cmd, env=env, cwd=cwd, stdout=self.fh, stderr=subprocess.STDOUT, start_new_session=True
        )

    def wait_ready(self, path: str, timeout: float = 60) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"{self.name} exited: see {self.logfile}\n" + self.logfile.read_text()[-3000:]
                )
            try:
                with urllib.request.urlopen(f"http://{HOST}:{self.port}{path}", timeout=5) as r:
                    if r.status < 500:
                        return
            except urllib.error.HTTPError as e:
                if e.code < 500:
                    return
            except OSError:
                pass
            time.sleep(0.3)
        raise RuntimeError(f"{self.name} not ready after {timeout}s: see {self.logfile}")

    def worker_pids(self) -> list[int]:
        with contextlib.suppress(Exception):
            out = subprocess.run(
                ["pgrep", "-P", str(self.proc.pid)], capture_output=True, text=True
            )
            return [int(x) for x in out.stdout.split()]
        return []

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=5)
        self.fh.close()


class ProxiedNodes:
    """qaportal as a deployment past one box runs it (``--proxy``): two gunicorn nodes
    behind Caddy with deploy/Caddyfile (the compose proxy's file) and the compose proxy's
    environment (access log, GOMAXPROCS, GOGC), on plain HTTP here (the load generator
    speaks HTTP; a browser's TLS connection, kept, would add the encryption and one
    handshake per connection). Looks like a
    ``Server`` to the rest of the bench: its port is the proxy's, its pids the nodes'
    workers and Caddy's; ``proxy_pids()`` Caddy's alone (its CPU share is reported)."""

    def __init__(self, name: str, nodes: list[Server], proxy: Server, port: int) -> None:
        self.name, self.nodes, self.proxy, self.port = name, nodes, proxy, port
        self.logfile, self.proc = proxy.logfile, proxy.proc

    def worker_pids(self) -> list[int]:
        return [pid for node in self.nodes for pid in node.worker_pids()] + self.proxy_pids()

    def proxy_pids(self) -> list[int]:
        return [self.proxy.proc.pid]

    def wait_ready(self, path: str, timeout: float = 60) -> None:
        Server.wait_ready(self, path, timeout)  # type: ignore[arg-type]

    def stop(self) -> None:
        self.proxy.stop()
        for node in self.nodes:
            node.stop()


# docker-compose.yml's proxy environment lines of the form ``NAME: ${VARIABLE:-default}``.
_COMPOSE_PROXY_SETTINGS = ("CADDY_ACCESS_LOG", "GOMAXPROCS", "GOGC")


def compose_proxy_settings() -> dict[str, str]:
    text = (ROOT / "docker-compose.yml").read_text()
    proxy = text[text.index("\n  proxy:\n") :]
    proxy = proxy[: proxy.index("\n  postgres:\n")]
    found = {}
    for name in _COMPOSE_PROXY_SETTINGS:
        m = re.search(rf"^\s+{name}: \$\{{(\w+):-([^}}]*)\}}$", proxy, re.M)
        if m is None:
            raise RuntimeError(f"docker-compose.yml's proxy service sets no {name}")
        found[name] = os.environ.get(m.group(1), m.group(2))
    return found


def caddy_env(folder: Path, port: int, upstreams: list[int]) -> dict[str, str]:
    """deploy/Caddyfile's variables for a plain-HTTP Caddy on ``port`` in front of
    ``upstreams``, its state under ``folder``; plus what docker-compose.yml's proxy service
    sets besides the addresses: the access log and Go's runtime (GOMAXPROCS, GOGC), with
    compose's defaults, or the values of the variables compose reads (CADDY_ACCESS_LOG,
    CADDY_GOMAXPROCS, CADDY_GOGC) if set."""
    return {
        **compose_proxy_settings(),
        "HOME": str(folder),
        "XDG_DATA_HOME": str(folder / "data"),
        "XDG_CONFIG_HOME": str(folder / "config"),
        "SITE_ADDRESS": f"http://{HOST}:{port}",
        "CADDY_GLOBAL_OPTIONS": "auto_https off",
        "UPSTREAMS": " ".join(f"{HOST}:{p}" for p in upstreams),
        "HEALTH_HOST": HOST,
    }


def caddy_up(tmp: Path, env: dict, port: int, upstreams: list[int]) -> Server:
    caddy = shutil.which("caddy")
    if caddy is None:
        raise RuntimeError("--proxy needs caddy (apt-get install caddy)")
    folder = tmp / "caddy"
    folder.mkdir(exist_ok=True)
    proxy_env = {k: v for k, v in env.items() if k in ("PATH", "LANG", "TZ")}
    proxy_env.update(caddy_env(folder, port, upstreams))
    cmd = [caddy, "run", "--config", str(ROOT / "deploy" / "Caddyfile"), "--adapter", "caddyfile"]
    log(
        "caddy: "
        + ", ".join(f"{k}={proxy_env[k]}" for k in _COMPOSE_PROXY_SETTINGS)
        + " (docker-compose.yml's proxy service)"
    )
    return Server("caddy", cmd, proxy_env, folder, tmp / "caddy.log", port)


def gunicorn_cmd(
    gunicorn: Path,
    app: str,
    port: int,
    workers: int,
    worker_class: str,
    threads: int,
    production: list[str] | None = None,
) -> list[str]:
    """The server's command; ``production``: the options of the deployed command
    (qaportal: ``compose_web_gunicorn_options()``), which come after the bench's own
    (bind, workers, class) and override its ``--timeout`` where they set one."""
    cmd = [
        str(gunicorn),
        app,
        "--bind",
        f"{HOST}:{port}",
        "--workers",
        str(workers),
        "--worker-class",
        worker_class,
        "--timeout",
        "60",
        "--graceful-timeout",
        "5",
        "--log-level",
        "warning",
    ]
    if worker_class == "gthread":
        cmd += ["--threads", str(threads)]
    return cmd + list(production or [])


# The options of docker-compose.yml's web command that the bench sets itself.
_BENCH_GUNICORN_OPTIONS = ("--bind", "--workers", "--worker-class", "--threads")


def compose_web_gunicorn_options() -> list[str]:
    """docker-compose.yml's web command's gunicorn options (access log, its logger,
    timeout), but those the bench sets: qaportal's nodes run what compose runs."""
    text = (ROOT / "docker-compose.yml").read_text()
    web = text[text.index("\n  web:\n") :]
    m = re.search(r"exec gunicorn qaportal\.wsgi (.*?)\"\]", web)
    if m is None:
        raise RuntimeError("docker-compose.yml's web service runs no gunicorn qaportal.wsgi")
    words = m.group(1).split()
    options: list[str] = []
    while words:
        word = words.pop(0)
        value = words.pop(0) if words and not words[0].startswith("--") else None
        if word.split("=", 1)[0] in _BENCH_GUNICORN_OPTIONS:
            continue
        options += [word] if value is None else [word, value]
    return options


def compose_web_environment(folder: Path) -> dict[str, str]:
    """What docker-compose.yml's web service adds to the app's environment: the folder of
    the workers' request metrics (prometheus-client's multiprocess mode), here one per
    node under ``folder``, emptied as compose's command empties it."""
    text = (ROOT / "docker-compose.yml").read_text()
    web = text[text.index("\n  web:\n") :]
    web = web[: web.index("\n  worker:\n")]
    if "PROMETHEUS_MULTIPROC_DIR:" not in web:
        return {}
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return {"PROMETHEUS_MULTIPROC_DIR": str(folder)}


# --- Turkle ---------------------------------------------------------------------------


def turkle_up(tmp: Path, args: argparse.Namespace, max_workers: int) -> tuple[Server, dict, dict]:
    if args.turkle_venv:
        venv = Path(args.turkle_venv)
        log(f"turkle: reusing venv {venv}")
    else:
        venv = tmp / "turkle-venv"
        log("turkle: creating venv, pip install turkle==3.1.0 gunicorn psycopg2-binary")
        run([sys.executable, "-m", "venv", str(venv)], timeout=300)
        run(
            [
                str(venv / "bin" / "pip"),
                "install",
                "-q",
                "--disable-pip-version-check",
                "turkle==3.1.0",
                "gunicorn",
                "psycopg2-binary",
            ],
            timeout=900,
        )
    py = venv / "bin" / "python"
    version = run(
        [str(py), "-c", "import turkle, django; print(turkle.__version__, django.get_version())"]
    ).split()
    site = tmp / "turkle"
    shutil.copytree(
        BENCH / "turkle_site", site / "turkle_site", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(BENCH / "turkle_setup.py", site / "turkle_setup.py")
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "turkle_site.settings",
        "TURKLE_DB_NAME": TURKLE_DB,
        "PYTHONPATH": str(site),
    }
    recreate_db(TURKLE_DB)
    log("turkle: migrate")
    run([str(py), "-m", "django", "migrate", "--noinput", "-v", "0"], env=env, cwd=site)
    log(f"turkle: {args.turkle_tasks} tasks, {max_workers} workers with sessions")
    cfg = json.loads(
        run(
            [
                str(py),
                "turkle_setup.py",
                "--workers",
                str(max_workers),
                "--tasks",
                str(args.turkle_tasks),
            ],
            env=env,
            cwd=site,
        )
    )
    port = free_port()
    server = Server(
        "turkle",
        gunicorn_cmd(
            venv / "bin" / "gunicorn",
            "turkle_site.wsgi:application",
            port,
            args.gunicorn_workers,
            args.worker_class,
            args.threads,
        ),
        env,
        site,
        tmp / "turkle-gunicorn.log",
        port,
    )
    server.wait_ready("/login/")
    log(f"turkle {version[0]} (Django {version[1]}) up on :{port}")
    meta = {
        "venv": str(venv),
        "py": str(py),
        "env": env,
        "site": site,
        "version": version[0],
        "django": version[1],
    }
    return server, cfg, meta


def turkle_verify(acked: list[int]) -> dict[str, Any]:
    rows = psql(
        "SELECT ta.id, ta.task_id, ta.assigned_to_id FROM turkle_taskassignment ta "
        "JOIN auth_user u ON u.id = ta.assigned_to_id "
        "WHERE ta.completed AND u.username LIKE 'worker%'",
        TURKLE_DB,
    ).split()
    stored = [tuple(map(int, r.split("|"))) for r in rows]
    per_task: dict[int, int] = {}
    for _, task, _ in stored:
        per_task[task] = per_task.get(task, 0) + 1
    dup_tasks = sum(1 for n in per_task.values() if n > 1)  # assignments_per_task = 1
    return _compare(acked, [s[0] for s in stored], dup_tasks, "completed TaskAssignment rows")


def turkle_top_up(batch_id: int, target: int) -> int:
    """Adds tasks (copies of the batch's first task's input) until ``batch_id`` holds
    ``target`` unfinished tasks; returns how many it added."""
    b, n = int(batch_id), int(target)
    out = psql(
        f"WITH missing AS (SELECT GREATEST(0, {n} - count(*)) AS n FROM turkle_task "
        f"WHERE batch_id = {b} AND NOT completed), added AS ("
        "INSERT INTO turkle_task (batch_id, completed, input_csv_fields) "
        f"SELECT {b}, false, (SELECT input_csv_fields FROM turkle_task WHERE batch_id = {b} "
        "ORDER BY id LIMIT 1) FROM missing, generate_series(1, missing.n) RETURNING 1) "
        "SELECT count(*) FROM added",
        TURKLE_DB,
    )
    return int(out.strip() or 0)


def work_left(app: str, cfg: dict) -> int:
    """Unfinished Turkle tasks / open qaportal HITs (places left) of the bench's batch or stage."""
    if app == "turkle":
        sql = (
            "SELECT count(*) FROM turkle_task "
            f"WHERE batch_id = {int(cfg['batch_id'])} AND NOT completed"
        )
        return int(psql(sql, TURKLE_DB).strip() or 0)
    sql = (
        "SELECT coalesce(sum(places_left), 0) FROM campaigns_hit "
        f"WHERE stage_id = {int(cfg['stage_id'])} AND status = 'published'"
    )
    return int(psql(sql, QAPORTAL_DB).strip() or 0)


def _compare(acked: list[int], stored_ids: list[int], dup_units: int, what: str) -> dict[str, Any]:
    acked_set, stored_set = set(acked), set(stored_ids)
    return {
        "stored_what": what,
        "acknowledged": len(acked),
        "acknowledged_distinct": len(acked_set),
        "stored": len(stored_ids),
        "lost": len(acked_set - stored_set),  # acknowledged but not stored
        "unacknowledged_stored": len(stored_set - acked_set),  # e.g. response lost in a timeout
        "duplicate_acks": len(acked) - len(acked_set),
        "duplicate_stored": dup_units,
        "ok": acked_set == stored_set and len(acked) == len(acked_set) and dup_units == 0,
    }


# --- qaportal -------------------------------------------------------------------------


def qaportal_env(tmp: Path, args: argparse.Namespace, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "CELERY_"))}
    env.update(
        {
            "DATABASE_URL": f"postgres://{PG['user']}@{PG['host']}:{PG['port']}/{QAPORTAL_DB}",
            "REDIS_URL": f"redis://{HOST}:6379/{REDIS_CACHE_DB}",
            "CELERY_BROKER_URL": f"redis://{HOST}:6379/{REDIS_BROKER_DB}",
            "CELERY_TASK_ALWAYS_EAGER": "1" if args.celery_eager else "0",
            "SECRET_KEY": "bench-qaportal-not-secret-0123456789abcdefghijklmnopqrstuvwxyz",
            "ALLOWED_HOSTS": "127.0.0.1,localhost,testserver",
            "DEBUG": "0",
            # plain HTTP on loopback: cookies must not be Secure-only
            "SESSION_COOKIE_SECURE": "0",
            "CSRF_COOKIE_SECURE": "0",
            "SECURE_SSL_REDIRECT": "0",
            "STATIC_ROOT": str(tmp / "qaportal-static"),
            "QAPORTAL_VAR_DIR": str(tmp / "qaportal-var"),
            "SITE_URL": f"http://{HOST}:{port}",
            "PORT": str(port),
            "LOG_LEVEL": args.qaportal_log_level,
            # qaportal.settings plus the worker pages' URLs if not mounted yet (see the module)
            "DJANGO_SETTINGS_MODULE": "qaportal_bench_settings",
            "PYTHONPATH": f"{ROOT}:{BENCH}",
        }
    )
    return env


def qaportal_up(
    tmp: Path, args: argparse.Namespace, max_workers: int
) -> tuple[Server | ProxiedNodes, dict, dict]:
    venv = Path(args.qaportal_venv)
    py = venv / "bin" / "python"
    port = free_port()
    env = qaportal_env(tmp, args, port)
    recreate_db(QAPORTAL_DB)
    for db in (REDIS_CACHE_DB, REDIS_BROKER_DB):
        redis_cmd(db, "FLUSHDB")
    log("qaportal: migrate, collectstatic")
    run([str(py), "manage.py", "migrate", "--noinput", "-v", "0"], env=env, cwd=ROOT)
    run([str(py), "manage.py", "collectstatic", "--noinput", "-v", "0"], env=env, cwd=ROOT)
    log(f"qaportal: campaign with {args.qaportal_items} items, {max_workers} invited workers")
    cfg = json.loads(
        run(
            [
                str(py),
                str(BENCH / "qaportal_setup.py"),
                "--workers",
                str(max_workers),
                "--items",
                str(args.qaportal_items),
            ],
            env=env,
            cwd=ROOT,
        )
        .strip()
        .splitlines()[-1]
    )
    server: Server | ProxiedNodes
    # What docker-compose.yml's web service runs: its gunicorn options (the access log
    # with its redacting logger) and the metrics' folder (multiprocess mode).
    # --bare-gunicorn: neither, as the bench ran before 29 Nov 2026 (figures comparable).
    production = [] if args.bare_gunicorn else compose_web_gunicorn_options()
    log(f"qaportal: gunicorn {' '.join(production) or '(the bench options only)'}")

    def web_env(folder: Path) -> dict[str, str]:
        return {} if args.bare_gunicorn else compose_web_environment(folder)

    if args.proxy:
        # The same gunicorn workers in all, split over two nodes.
        ports = [free_port(), free_port()]
        per_node = [(args.gunicorn_workers + 1) // 2, args.gunicorn_workers // 2 or 1]
        nodes = [
            Server(
                f"qaportal-node{n}",
                gunicorn_cmd(
                    venv / "bin" / "gunicorn",
                    "qaportal.wsgi:application",
                    node_port,
                    workers,
                    args.worker_class,
                    args.threads,
                    production,
                ),
                {**env, **web_env(tmp / f"qaportal-metrics-{n}")},
                ROOT,
                tmp / f"qaportal-node{n}.log",
                node_port,
            )
            for n, (node_port, workers) in enumerate(zip(ports, per_node, strict=True), start=1)
        ]
        proxy: Server | None = None
        try:
            for node in nodes:
                node.wait_ready("/healthz")
            proxy = caddy_up(tmp, env, port, ports)
            server = ProxiedNodes("qaportal", nodes, proxy, port)
            server.wait_ready("/healthz")
        except BaseException:  # nothing of ours is left running
            for started in [*nodes, *([proxy] if proxy else [])]:
                started.stop()
            raise
    else:
        server = Server(
            "qaportal",
            gunicorn_cmd(
                venv / "bin" / "gunicorn",
                "qaportal.wsgi:application",
                port,
                args.gunicorn_workers,
                args.worker_class,
                args.threads,
                production,
            ),
            {**env, **web_env(tmp / "qaportal-metrics")},
            ROOT,
            tmp / "qaportal-gunicorn.log",
            port,
        )
    server.wait_ready("/healthz")
    cfg["worker_urls_shim"] = json.loads(
        run(
            [
                str(py),
                "-c",
                "import django, json; django.setup(); import qaportal_bench_urls as u; "
                "print(json.dumps(u.WORKER_SHIM))",
            ],
            env=env,
            cwd=ROOT,
        )
        .strip()
        .splitlines()[-1]
    )
    log(
        f"qaportal up on :{port}"
        + (" (worker URLs mounted by the bench shim)" if cfg["worker_urls_shim"] else "")
    )
    return server, cfg, {"py": str(py), "env": env}


def qaportal_verify(meta: dict, cfg: dict, acked: list[int]) -> dict[str, Any]:
    rows = psql(
        "SELECT a.id, a.hit_id, a.worker_id FROM campaigns_assignment a "
        "JOIN campaigns_hit h ON h.id = a.hit_id "
        f"WHERE h.stage_id = {int(cfg['stage_id'])} "
        "AND a.status IN ('submitted', 'approved', 'rejected')",
        QAPORTAL_DB,
    ).split()
    stored = [tuple(map(int, r.split("|"))) for r in rows]
    excluded = set(cfg.get("probe_worker_ids", []))
    stored = [s for s in stored if s[2] not in excluded]
    pairs: dict[tuple[int, int], int] = {}
    per_hit: dict[int, int] = {}
    for _, hit, worker in stored:
        pairs[(hit, worker)] = pairs.get((hit, worker), 0) + 1
        per_hit[hit] = per_hit.get(hit, 0) + 1
    max_per_hit = int(cfg.get("assignments_per_hit", 1))
    dups = sum(1 for n in pairs.values() if n > 1) + sum(
        1 for n in per_hit.values() if n > max_per_hit
    )
    return _compare(acked, [s[0] for s in stored], dups, "Assignment rows submitted")


# --- orchestration --------------------------------------------------------------------

CLK_TCK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) a process has used; 0 if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK
    except (OSError, IndexError, ValueError):
        return 0.0


def machine_busy() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot."""
    vals = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = vals[3] + vals[4]
    return (sum(vals) - idle) / CLK_TCK, sum(vals) / CLK_TCK


class CpuMeter:
    """CPU used during a slice by one app: its gunicorn workers and its PostgreSQL
    backends (connections to its own database), the load generator, and the machine."""

    def __init__(self, server: Any, db: str) -> None:
        self.server, self.db = server, db
        self.proxy_pids: list[int] = server.proxy_pids() if hasattr(server, "proxy_pids") else []

    def _pids(self) -> tuple[list[int], list[int]]:
        backends = []
        with contextlib.suppress(Exception):
            backends = [
                int(x)
                for x in psql(
                    f"SELECT pid FROM pg_stat_activity WHERE datname = '{self.db}'"
                ).split()
            ]
        return self.server.worker_pids(), backends

    def start(self) -> None:
        self.w0, self.b0 = self._pids()
        self.cpu0 = {pid: proc_cpu(pid) for pid in self.w0 + self.b0}
        self.gen0 = time.process_time()
        self.m0 = machine_busy()
        self.t0 = time.perf_counter()

    def stop(self) -> dict[str, float]:
        w1, b1 = self._pids()
        proxy = sum(proc_cpu(p) - self.cpu0.get(p, 0.0) for p in self.proxy_pids)
        app = sum(proc_cpu(p) - self.cpu0.get(p, 0.0) for p in w1) - proxy
        db = sum(proc_cpu(p) - self.cpu0.get(p, 0.0) for p in b1)
        m1 = machine_busy()
        wall = time.perf_counter() - self.t0
        gen = time.process_time() - self.gen0
        busy = m1[0] - self.m0[0]
        return {
            "wall_s": wall,
            "app_cpu_s": app,
            "proxy_cpu_s": proxy,
            "db_cpu_s": db,
            "loadgen_cpu_s": gen,
            "machine_busy_s": busy,
            "machine_capacity_s": (m1[1] - self.m0[1]),
            "other_cpu_s": max(0.0, busy - app - proxy - db - gen),
        }


def add_cpu(acc: dict[str, float], part: dict[str, float]) -> None:
    for k, v in part.items():
        acc[k] = acc.get(k, 0.0) + v


async def drive(
    driver: loadgen.Driver, clients: list[loadgen.Client], duration: float, max_errors: int
) -> loadgen.LevelResult:
    try:
        return await loadgen.run_level(driver, clients, duration, max_errors=max_errors)
    finally:  # a kept connection belongs to this event loop
        await close_clients(clients)


async def close_clients(clients: list[loadgen.Client]) -> None:
    await asyncio.gather(*(c.close() for c in clients))


async def prepare(driver: loadgen.Driver, clients: list[loadgen.Client]) -> None:
    try:
        await loadgen.prepare_clients(driver, clients)
    finally:
        await close_clients(clients)


def cpu_report(cpu: dict[str, float], cycles: int) -> dict[str, Any]:
    per = lambda v: round(v * 1000.0 / cycles, 2) if cycles else None  # noqa: E731
    cap = cpu.get("machine_capacity_s", 0.0) or 1.0
    return {
        "app_cpu_ms_per_cycle": per(cpu.get("app_cpu_s", 0.0)),
        "db_cpu_ms_per_cycle": per(cpu.get("db_cpu_s", 0.0)),
        "proxy_cpu_ms_per_cycle": per(cpu.get("proxy_cpu_s", 0.0)),
        # The proxy's share of what serving used: proxy / (proxy + app + database).
        "proxy_cpu_share_pct": round(
            100.0
            * cpu.get("proxy_cpu_s", 0.0)
            / (
                (cpu.get("proxy_cpu_s", 0.0) + cpu.get("app_cpu_s", 0.0) + cpu.get("db_cpu_s", 0.0))
                or 1.0
            ),
            1,
        ),
        "loadgen_cpu_ms_per_cycle": per(cpu.get("loadgen_cpu_s", 0.0)),
        "machine_busy_pct": round(100.0 * cpu.get("machine_busy_s", 0.0) / cap, 1),
        "other_processes_cpu_pct": round(100.0 * cpu.get("other_cpu_s", 0.0) / cap, 1),
    }


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="5 s per level (smoke run)")
    p.add_argument("--duration", type=float, default=30.0, help="seconds per level (default 30)")
    p.add_argument("--levels", default="10,50", help="concurrent workers per level (default 10,50)")
    p.add_argument(
        "--warmup", type=float, default=3.0, help="untimed seconds per app before level 1"
    )
    p.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="split each level into this many alternating slices per app (default 3)",
    )
    p.add_argument("--gunicorn-workers", type=int, default=4)
    p.add_argument(
        "--proxy",
        action="store_true",
        help="qaportal as two gunicorn nodes (the workers split between them) behind Caddy "
        "(deploy/Caddyfile); reports the proxy's CPU",
    )
    p.add_argument(
        "--connection",
        default="keep-alive",
        choices=["keep-alive", "close"],
        help="the load generator's connections: kept as a browser keeps them, for as long "
        "as the server keeps them (default; gunicorn's sync workers close every one, Caddy "
        "keeps them), or 'close': a new connection per request (the bench before 29 Nov 2026)",
    )
    p.add_argument("--worker-class", default="sync", choices=["sync", "gthread"])
    p.add_argument("--threads", type=int, default=4, help="threads per worker with gthread")
    p.add_argument("--timeout", type=float, default=30.0, help="per-request timeout, seconds")
    p.add_argument("--max-errors", type=int, default=300, help="failed cycles before a level stops")
    p.add_argument("--apps", default="turkle,qaportal")
    p.add_argument(
        "--turkle-tasks",
        type=int,
        default=TURKLE_POOL,
        help="unfinished tasks in Turkle's batch at the start of the warm-up and of every "
        f"slice: topped up between slices, untimed (default {TURKLE_POOL})",
    )
    p.add_argument(
        "--qaportal-items",
        type=int,
        default=0,
        help=f"items in the qaportal stage (default: room for {QAPORTAL_RATE_CAP} cycles/s "
        "over the whole run)",
    )
    p.add_argument(
        "--bare-gunicorn",
        action="store_true",
        help="qaportal's gunicorn with the bench's options only: no access log, no metrics "
        "folder (the bench before 29 Nov 2026); default: docker-compose.yml's web command",
    )
    p.add_argument("--turkle-venv", default="", help="reuse this Turkle venv (development only)")
    p.add_argument("--qaportal-venv", default=str(ROOT / ".venv"))
    p.add_argument("--qaportal-log-level", default="WARNING")
    p.add_argument(
        "--celery-eager",
        action="store_true",
        help="CELERY_TASK_ALWAYS_EAGER=1 (needed only if the hot path enqueues tasks)",
    )
    p.add_argument("--keep", action="store_true", help="keep the temporary folder and databases")
    p.add_argument("--out", default=str(BENCH / "out" / "worker_cycles.json"))
    args = p.parse_args()
    if args.quick:
        args.duration = 5.0
        args.warmup = 2.0
        args.rounds = 1
    levels = [int(x) for x in args.levels.split(",") if x]
    apps = [a for a in args.apps.split(",") if a]
    max_workers = max(levels)
    # Every level has its own warm-up; budget for all of it.
    total_s = (args.duration + args.warmup) * len(levels)
    # Enough work that neither app runs out (see TURKLE_POOL and QAPORTAL_RATE_CAP).
    args.qaportal_items = args.qaportal_items or int(max(2000, QAPORTAL_RATE_CAP * total_s))

    tmp = Path(tempfile.mkdtemp(prefix="qaportal-bench-"))
    log(f"temporary folder {tmp}")
    servers: list[Server | ProxiedNodes] = []
    report: dict[str, Any] = {
        "benchmark": "worker_cycles",
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
        "settings": {
            "duration_s": args.duration,
            "levels": levels,
            "warmup_s": args.warmup,
            "rounds": args.rounds,
            "gunicorn_workers": args.gunicorn_workers,
            "qaportal_behind_proxy": args.proxy,
            "client_connection": args.connection,
            "proxy_settings": compose_proxy_settings() if args.proxy else None,
            "worker_class": args.worker_class,
            "qaportal_gunicorn_options": []
            if args.bare_gunicorn
            else compose_web_gunicorn_options(),
            "threads": args.threads if args.worker_class == "gthread" else 1,
            "turkle_tasks": args.turkle_tasks,
            "qaportal_items": args.qaportal_items,
            "celery_eager": args.celery_eager,
            "qaportal_log_level": args.qaportal_log_level,
            "cycle": {
                "turkle": "GET accept_next_task (302) -> GET assignment page -> GET its iframe "
                "(the task form) -> POST the form (302)",
                "qaportal": "POST accept on the stage page (302) -> GET assignment page -> "
                "POST the task form (302)",
            },
        },
        "levels": [],
        "verification": {},
        "queries_per_request": {},
    }
    drivers: dict[str, loadgen.Driver] = {}
    metas: dict[str, dict] = {}
    cfgs: dict[str, dict] = {}
    acked: dict[str, list[int]] = {a: [] for a in apps}
    rc = 0
    keep_alive = args.connection == "keep-alive"
    try:
        if "turkle" in apps:
            srv, cfg, meta = turkle_up(tmp, args, max_workers)
            servers.append(srv)
            cfgs["turkle"], metas["turkle"] = cfg, meta
            drivers["turkle"] = loadgen.TurkleDriver(HOST, srv.port, cfg, keep_alive)
            report["settings"]["turkle_version"] = meta["version"]
            report["settings"]["turkle_django"] = meta["django"]
        if "qaportal" in apps:
            qaportal_srv, cfg, meta = qaportal_up(tmp, args, max_workers)
            servers.append(qaportal_srv)
            cfgs["qaportal"], metas["qaportal"] = cfg, meta
            drivers["qaportal"] = loadgen.QaportalDriver(HOST, qaportal_srv.port, cfg, keep_alive)
            report["settings"]["qaportal_task_type"] = cfg["task_type"]
            report["settings"]["qaportal_setup_seconds"] = cfg["setup_seconds"]
            report["settings"]["qaportal_worker_urls_shim"] = cfg["worker_urls_shim"]

        clients: dict[str, list[loadgen.Client]] = {}
        for app, drv in drivers.items():
            clients[app] = [drv.client(i, args.timeout) for i in range(max_workers)]
            asyncio.run(prepare(drv, clients[app]))
        meters = {
            app: CpuMeter(
                next(s for s in servers if s.name == app),
                TURKLE_DB if app == "turkle" else QAPORTAL_DB,
            )
            for app in drivers
        }

        def top_up(app: str) -> None:
            if app == "turkle":
                turkle_top_up(int(cfgs["turkle"]["batch_id"]), args.turkle_tasks)

        if args.warmup > 0:
            for app, drv in drivers.items():
                top_up(app)
                log(f"{app}: warm-up {args.warmup:.0f}s at 4 workers")
                res = asyncio.run(drive(drv, clients[app][:4], args.warmup, args.max_errors))
                acked[app] += res.acked
                if res.failed_cycles:
                    log(f"  warm-up failures: {res.failed_cycles}; first: {res.error_samples[:2]}")

        slice_s = args.duration / args.rounds
        for level in levels:
            merged = {app: loadgen.LevelResult(app, level) for app in drivers}
            cpu: dict[str, dict[str, float]] = {app: {} for app in drivers}
            opened = dict.fromkeys(drivers, 0)
            order = list(drivers)
            log(
                f"level {level} workers: {args.rounds} rounds x {slice_s:.0f}s per app, alternating"
            )
            least_left = dict.fromkeys(drivers, -1)
            for rnd in range(args.rounds):
                for app in order if rnd % 2 == 0 else order[::-1]:
                    top_up(app)
                    meters[app].start()
                    conns0 = sum(c.connections for c in clients[app])
                    res = asyncio.run(
                        drive(drivers[app], clients[app][:level], slice_s, args.max_errors)
                    )
                    add_cpu(cpu[app], meters[app].stop())
                    opened[app] += sum(c.connections for c in clients[app]) - conns0
                    merged[app].merge(res)
                    acked[app] += res.acked
                    left = work_left(app, cfgs[app])
                    least_left[app] = left if least_left[app] < 0 else min(left, least_left[app])
            for app in drivers:
                rep = merged[app].report()
                rep["cpu"] = cpu_report(cpu[app], rep["cycles"])
                # Unfinished Turkle tasks / open qaportal places after the level's slices:
                # 0 means the app ran out of work and the level is not valid.
                rep["work_left_min"] = least_left[app]
                n_requests = sum(len(v) for v in merged[app].request_latencies.values())
                rep["client_connections"] = opened[app]
                rep["requests_per_connection"] = (
                    round(n_requests / opened[app], 2) if opened[app] else None
                )
                report["levels"].append(rep)
                log(
                    f"  {app}: {rep['cycles_per_s']} cycles/s, "
                    f"cycle p50 {rep['cycle']['p50_ms']} ms "
                    f"p99 {rep['cycle']['p99_ms']} ms, failed {rep['failed_cycles']}, "
                    f"app CPU {rep['cpu']['app_cpu_ms_per_cycle']} ms/cycle, "
                    f"db CPU {rep['cpu']['db_cpu_ms_per_cycle']} ms/cycle, "
                    + (
                        f"proxy CPU {rep['cpu']['proxy_cpu_ms_per_cycle']} ms/cycle "
                        f"({rep['cpu']['proxy_cpu_share_pct']}% of serving), "
                        if args.proxy and app == "qaportal"
                        else ""
                    )
                    + f"other processes {rep['cpu']['other_processes_cpu_pct']}%, "
                    + f"{rep['requests_per_connection']} requests per client connection, "
                    + f"work left {least_left[app]}"
                    + (" (RAN OUT OF WORK: level invalid)" if least_left[app] == 0 else "")
                    + (f" first error: {rep['error_samples'][0]}" if rep["error_samples"] else "")
                )

        log("verifying stored submissions")
        if "turkle" in drivers:
            report["verification"]["turkle"] = turkle_verify(acked["turkle"])
        if "qaportal" in drivers:
            report["verification"]["qaportal"] = qaportal_verify(
                metas["qaportal"], cfgs["qaportal"], acked["qaportal"]
            )

        log("queries per request (Django test client + CaptureQueriesContext)")
        if "qaportal" in drivers:
            m = metas["qaportal"]
            out = run(
                [
                    m["py"],
                    str(BENCH / "qaportal_setup.py"),
                    "--queries",
                    json.dumps(cfgs["qaportal"]),
                ],
                env=m["env"],
                cwd=ROOT,
            )
            report["queries_per_request"]["qaportal"] = json.loads(out.strip().splitlines()[-1])
        if "turkle" in drivers:
            m = metas["turkle"]
            out = run(
                [m["py"], "turkle_setup.py", "--queries", str(cfgs["turkle"]["batch_id"])],
                env=m["env"],
                cwd=m["site"],
            )
            report["queries_per_request"]["turkle"] = json.loads(out)
    except Exception as exc:  # report what we have, then fail
        rc = 1
        report["error"] = f"{type(exc).__name__}: {exc}"
        log(f"ERROR {report['error']}")
    finally:
        for s in servers:
            s.stop()
        log("servers stopped")
        if not args.keep:
            for db_name in (TURKLE_DB, QAPORTAL_DB):
                with contextlib.suppress(Exception):
                    psql(f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)')
            for db_number in (REDIS_CACHE_DB, REDIS_BROKER_DB):
                with contextlib.suppress(Exception):
                    redis_cmd(db_number, "FLUSHDB")
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            log(f"kept {tmp} and databases {TURKLE_DB}, {QAPORTAL_DB}")

    summarize(report)
    out_path = Path(args.out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(report, indent=2) + "\n")
    log(f"wrote {out_path}")
    return rc


def summarize(report: dict[str, Any]) -> None:
    by = {(lv["app"], lv["concurrency"]): lv for lv in report["levels"]}
    ratios = {}
    for (app, conc), lv in by.items():
        if app == "qaportal" and ("turkle", conc) in by and by[("turkle", conc)]["cycles_per_s"]:
            ratios[conc] = round(lv["cycles_per_s"] / by[("turkle", conc)]["cycles_per_s"], 2)
    report["ratio_qaportal_over_turkle"] = {str(k): v for k, v in ratios.items()}
    report["levels_out_of_work"] = [
        f"{lv['app']} K={lv['concurrency']}"
        for lv in report["levels"]
        if lv.get("work_left_min") == 0
    ]
    goal = {}
    if by.get(("qaportal", 10)):
        q10 = by[("qaportal", 10)]
        worst_req_p99 = (
            max((r["p99_ms"] or 0) for r in q10["requests"].values()) if q10["requests"] else None
        )
        goal = {
            "ratio_at_least_3x": all(v >= 3 for v in ratios.values()) if ratios else None,
            "p99_request_under_200ms_at_10": worst_req_p99 is not None and worst_req_p99 < 200,
            "worst_request_p99_ms_at_10": worst_req_p99,
            "cycle_p99_ms_at_10": q10["cycle"]["p99_ms"],
            "no_lost_or_duplicate": report["verification"].get("qaportal", {}).get("ok"),
        }
    report["goal"] = goal

    print()
    hdr = (
        f"{'app':9} {'K':>3} {'cycles/s':>9} {'ratio':>6} {'cycle p50':>10} {'cycle p99':>10} "
        f"{'req p50':>8} {'req p99':>8} {'errors':>7} {'failed':>7} "
        f"{'app CPU':>8} {'db CPU':>7} {'other':>6}"
    )
    print(hdr)
    print("-" * len(hdr))
    for lv in report["levels"]:
        reqs = [v for vs in [lv["requests"]] for v in vs.values()]
        p50 = max((r["p50_ms"] or 0) for r in reqs) if reqs else 0
        p99 = max((r["p99_ms"] or 0) for r in reqs) if reqs else 0
        ratio = ratios.get(lv["concurrency"]) if lv["app"] == "qaportal" else None
        print(
            f"{lv['app']:9} {lv['concurrency']:>3} {lv['cycles_per_s']:>9.1f} "
            f"{(f'{ratio:.2f}x' if ratio else ''):>6} {lv['cycle']['p50_ms'] or 0:>8.0f}ms "
            f"{lv['cycle']['p99_ms'] or 0:>8.0f}ms {p50:>6.0f}ms {p99:>6.0f}ms "
            f"{sum(lv['request_errors'].values()):>7} {lv['failed_cycles']:>7} "
            f"{lv['cpu']['app_cpu_ms_per_cycle'] or 0:>6.1f}ms "
            f"{lv['cpu']['db_cpu_ms_per_cycle'] or 0:>5.1f}ms "
            f"{lv['cpu']['other_processes_cpu_pct']:>5.0f}%"
        )
    print(
        "  (req p50/p99: the slowest request kind's percentile; app/db CPU: CPU ms per cycle\n"
        "   of the app's gunicorn workers / its PostgreSQL backends; other: CPU share of\n"
        "   processes outside the run)"
    )
    for lv in report["levels"]:
        parts = ", ".join(f"{k} {v['p50_ms']}/{v['p99_ms']}" for k, v in lv["requests"].items())
        print(f"  {lv['app']:9} K={lv['concurrency']:<3} per request p50/p99 ms: {parts}")
    for app, v in report["verification"].items():
        print(
            f"  {app:9} acknowledged {v['acknowledged']}, stored {v['stored']}, lost {v['lost']}, "
            f"duplicates {v['duplicate_acks'] + v['duplicate_stored']}, "
            f"stored-unacknowledged {v['unacknowledged_stored']} -> "
            f"{'OK' if v['ok'] else 'MISMATCH'}"
        )
    for app, q in report["queries_per_request"].items():
        print(f"  {app:9} queries/request: " + ", ".join(f"{k} {n}" for k, n in q.items()))
    if goal:
        print(
            f"  goal: >=3x {goal['ratio_at_least_3x']}, "
            f"p99<200ms@10 {goal['p99_request_under_200ms_at_10']} "
            f"(worst request p99 {goal['worst_request_p99_ms_at_10']} ms, cycle p99 "
            f"{goal['cycle_p99_ms_at_10']} ms), no lost/dup {goal['no_lost_or_duplicate']}"
        )
    if report["levels_out_of_work"]:
        print(f"  RAN OUT OF WORK (invalid): {', '.join(report['levels_out_of_work'])}")
    if "error" in report:
        print(f"  run error: {report['error']}")


if __name__ == "__main__":
    sys.exit(main())
