"""Kill -9 of the Celery worker mid-batch, and Redis restarts: every operation ends once.

    .venv/bin/python bench/fault_bench.py            # 20 kill runs + 4 Redis restarts
    .venv/bin/python bench/fault_bench.py --quick    # 4 kill runs + 1 Redis restart

Recreates the database ``bench_faults`` (PostgreSQL at 127.0.0.1:5432, user postgres),
migrates it, and starts a private ``redis-server`` on ``--redis-port`` (6390, nothing
saved to disk) as the broker: the shared Redis on 6379 is not touched. Each run has
fresh state (a new fake MTurk, an empty broker, its own campaign) and one kind of batch,
cycling ``publish`` (stages whose HITs are created), ``sync`` (submitted work that a
sync confirms and an ``auto_approve`` rule approves), ``approve`` and ``bonus``;
``--units`` HITs or assignments per batch (publish: one operation per two HITs).

A kill run: a real ``celery worker`` (prefork, concurrency 2) executes the batch with
the fake MTurk answering ``--latency`` late after each effect; when a share of the batch
drawn from a seeded RNG (uniform 10-90 %, plus up to 50 ms) is done, the worker's whole
process group gets SIGKILL. A fresh worker starts, and beat is played (the
``campaigns.reconcile_operations`` task every second, ``campaigns.platform_sync`` (MTurk) too for
a sync batch) with the stale period at ``--stale-seconds`` until nothing is pending or
running. A Redis run does the same but kills and restarts the redis-server instead
(everything queued is lost; the worker stays).

Checked per run (tests/reliability/faults.py, ``batch_check``), by the fake's own
record: no operation pending or running; each failed one has a reason; one MTurk HIT
per qaportal HIT (by RequesterAnnotation, none unknown to qaportal); one approval per
assignment; one bonus per assignment and per UniqueRequestToken; ledger rows two per
unit, all paid, none doubled. Prints one line per run and a summary; exits 1 if any
check failed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DB_NAME = "bench_faults"
DB_URL = f"postgres://postgres@127.0.0.1:5432/{DB_NAME}"
SECRET_KEY = "fault-bench-not-secret-0123456789abcdefghijklmnopqrstuvwxyz"


class RedisServer:
    """A private redis-server (no RDB, no AOF) in its own process group."""

    def __init__(self, port: int, log_path: Path) -> None:
        self.port, self.log_path = port, log_path
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1"]
        command += ["--save", "", "--appendonly", "no"]  # nothing survives a restart
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        import redis

        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(redis.ConnectionError):
                if redis.Redis(port=self.port).ping():
                    return
            time.sleep(0.05)
        raise RuntimeError(f"redis-server on {self.port} did not start: {self.log_path}")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def flush(self) -> None:
        import redis

        redis.Redis(port=self.port).flushall()


def prepare_environment(redis_port: int, stale_seconds: float) -> None:
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "qaportal.settings",
            "DATABASE_URL": DB_URL,
            "CELERY_BROKER_URL": f"redis://127.0.0.1:{redis_port}/0",
            "CELERY_TASK_ALWAYS_EAGER": "0",
            "SECRET_KEY": SECRET_KEY,
            "DEBUG": "0",
            "ALLOWED_HOSTS": "testserver",
            "LOG_LEVEL": "WARNING",
            "SITE_URL": "https://qaportal.example.org",
            "PROVIDER_OPERATION_STALE_MINUTES": str(stale_seconds / 60),
            "PROVIDER_OPERATION_BACKOFF_BASE": "0.5",
            "PROVIDER_OPERATION_BACKOFF_MAX": "2",
        }
    )
    os.environ.pop("REDIS_URL", None)  # the cache stays in memory: Redis is the broker only


def recreate_database() -> None:
    import psycopg2

    admin = psycopg2.connect(host="127.0.0.1", port=5432, user="postgres", dbname="postgres")
    admin.autocommit = True
    with admin.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
        cursor.execute(f'CREATE DATABASE "{DB_NAME}"')
    admin.close()


def point_at(fake: Any) -> None:
    from django.conf import settings

    from tests.campaigns.platforms.fake_mturk import FakeMTurk

    settings.MTURK_ACCESS_KEY_ID = FakeMTurk.ACCESS_KEY
    settings.MTURK_SECRET_ACCESS_KEY = FakeMTurk.SECRET_KEY
    settings.MTURK_ENDPOINT_URL = fake.url
    settings.MTURK_MAX_ATTEMPTS = 1
    settings.MTURK_RETRY_MODE = "standard"
    settings.MTURK_RETRIES = 8
    settings.MTURK_BACKOFF_BASE = 0.001
    settings.MTURK_TIMEOUT = 5


def one_run(
    n: int, kind: str, fault: str, args: argparse.Namespace, rng: random.Random, tmp: Path
) -> dict[str, Any]:
    """One batch, one fault (``kill``: the worker; ``redis``: the broker); its record."""
    from tests.campaigns.platforms.fake_mturk import FakeMTurk
    from tests.reliability import faults

    broker: RedisServer = args.broker
    with FakeMTurk(seed=n) as fake:
        point_at(fake)
        fake._ids = n * 1_000_000  # MTurk ids unique across runs (one database for all)
        broker.flush()
        batch = faults.batch_prepare(kind=kind, fake=fake, tag=f"{fault}{n}", units=args.units)
        broker.flush()  # the set-up's own messages (executed inline already)
        fake.latency = args.latency
        env = faults.worker_env(
            database_url=DB_URL,
            broker_url=os.environ["CELERY_BROKER_URL"],
            mturk_url=fake.url,
            stale_minutes=args.stale_seconds / 60,
            secret_key=SECRET_KEY,
        )
        log = tmp / f"run{n:02d}-{kind}-{fault}.log"
        workers = [faults.Worker(env=env, queue="celery", log_path=log)]
        try:
            workers[0].wait_ready()
            share, jitter = rng.uniform(0.1, 0.9), rng.uniform(0.0, 0.05)
            faults.batch_request(batch)
            faults.wait_for_share(batch, share)
            time.sleep(jitter)
            if fault == "kill":
                workers[0].kill()
            else:
                broker.kill()
                broker.start()
            hit_at = time.monotonic()
            done_at, total = faults.batch_progress(batch)
            open_at = faults.batch_open(batch)
            running_at = faults.batch_operations(batch).filter(state="running").count()
            unrecorded_at = faults.effects_unrecorded(batch, fake)
            if fault == "kill":
                workers.append(faults.Worker(env=env, queue="celery", log_path=log))
                workers[-1].wait_ready()
            settled = faults.batch_settle(
                batch, interval=1.0, timeout=180, beat=faults.beat_for(batch)
            )
            settle_s = time.monotonic() - hit_at
        finally:
            for worker in workers:
                worker.stop()
        fake.latency = 0.0
        outcome = faults.batch_check(batch, fake)
    record = {
        "run": n,
        "kind": kind,
        "fault": fault,
        "share": round(share, 2),
        "units": total,
        "units_done_at_fault": done_at,
        "ops_open_at_fault": open_at,
        "ops_running_at_fault": running_at,
        "effects_unrecorded_at_fault": unrecorded_at,
        "mid_batch": 0 < done_at < total,
        "settled": settled,
        "settle_s": round(settle_s, 2),
        "ops": outcome.ops,
        "done": outcome.done,
        "failed": outcome.failed,
        "open": outcome.open,
        "failed_without_reason": outcome.failed_without_reason,
        "duplicates": outcome.duplicates,
        "lost": outcome.lost,
        "ledger_problems": outcome.ledger_problems,
        "problems": outcome.problems[:5],
        "ok": outcome.ok and settled,
    }
    print(
        f"run {n:2d} {fault:5s} {kind:7s} ops {outcome.ops:3d} units {total:3d} | "
        f"fault at {done_at:3d}/{total} done, {running_at} running, {open_at} open, "
        f"{unrecorded_at} on MTurk only | "
        f"settled in {settle_s:5.1f} s | done {outcome.done} failed {outcome.failed} "
        f"open {outcome.open} | dup {outcome.duplicates} lost {outcome.lost} "
        f"ledger {'ok' if not outcome.ledger_problems else outcome.ledger_problems}"
        + ("" if record["ok"] else f"  FAILED {outcome.problems[:3]}"),
        flush=True,
    )
    return record


def summarize(label: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    times = [r["settle_s"] for r in records]
    summary = {
        "runs": len(records),
        "ops": sum(r["ops"] for r in records),
        "units": sum(r["units"] for r in records),
        "faults_mid_batch": sum(r["mid_batch"] for r in records),
        "ops_running_at_fault": sum(r["ops_running_at_fault"] for r in records),
        "ops_open_at_fault": sum(r["ops_open_at_fault"] for r in records),
        "effects_unrecorded_at_fault": sum(r["effects_unrecorded_at_fault"] for r in records),
        "settle_p50_s": round(statistics.median(times), 2) if times else None,
        "settle_max_s": max(times) if times else None,
        "done": sum(r["done"] for r in records),
        "failed": sum(r["failed"] for r in records),
        "failed_without_reason": sum(r["failed_without_reason"] for r in records),
        "left_open": sum(r["open"] for r in records),
        "duplicates": sum(r["duplicates"] for r in records),
        "lost": sum(r["lost"] for r in records),
        "ledger_problems": sum(r["ledger_problems"] for r in records),
        "all_ok": all(r["ok"] for r in records),
    }
    print(f"{label}: " + ", ".join(f"{k} {v}" for k, v in summary.items()), flush=True)
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="kill -9 runs")
    parser.add_argument("--redis-restarts", type=int, default=4, help="Redis restart runs")
    parser.add_argument("--units", type=int, default=100, help="HITs or assignments per batch")
    parser.add_argument("--latency", type=float, default=0.01, help="fake MTurk answer delay (s)")
    parser.add_argument("--stale-seconds", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--redis-port", type=int, default=6390)
    parser.add_argument("--quick", action="store_true", help="4 kill runs, 1 Redis restart")
    parser.add_argument("--keep-logs", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.redis_restarts = 4, 1
    if shutil.which("redis-server") is None:
        raise SystemExit("redis-server is not installed: the bench runs its own broker.")
    prepare_environment(args.redis_port, args.stale_seconds)
    tmp = Path(tempfile.mkdtemp(prefix="qaportal-faults-"))
    args.broker = RedisServer(args.redis_port, tmp / "redis.log")
    args.broker.start()
    rng = random.Random(args.seed)
    records: list[dict[str, Any]] = []
    try:
        recreate_database()
        import django

        django.setup()
        from django.core.management import call_command

        from tests.reliability.faults import KINDS

        call_command("migrate", verbosity=0)
        print(
            f"fault bench: {args.runs} kill runs + {args.redis_restarts} Redis restarts, "
            f"{args.units} units a batch, latency {args.latency * 1000:.0f} ms, "
            f"stale after {args.stale_seconds} s, seed {args.seed}; logs in {tmp}",
            flush=True,
        )
        plan = [(KINDS[n % len(KINDS)], "kill") for n in range(args.runs)]
        plan += [(KINDS[n % len(KINDS)], "redis") for n in range(args.redis_restarts)]
        for n, (kind, fault) in enumerate(plan, start=1):
            records.append(one_run(n, kind, fault, args, rng, tmp))
    finally:
        args.broker.kill()
    kills = summarize("kill -9 of the worker", [r for r in records if r["fault"] == "kill"])
    restarts = summarize("Redis restart", [r for r in records if r["fault"] == "redis"])
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "fault_bench.json").write_text(
        json.dumps({"kill": kills, "redis": restarts, "runs": records}, indent=2)
    )
    ok = all(r["ok"] for r in records) and len(records) == args.runs + args.redis_restarts
    if ok and not args.keep_logs:
        shutil.rmtree(tmp, ignore_errors=True)
    print("fault bench: " + ("all checks passed" if ok else f"CHECKS FAILED (logs in {tmp})"))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
