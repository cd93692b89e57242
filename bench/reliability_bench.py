"""Load held and nothing lost: simulated workers against gunicorn + PostgreSQL + Redis +
a Celery worker, with double submits, abandoned assignments and (optionally) a
PostgreSQL restart in the middle.

    .venv/bin/python bench/reliability_bench.py                 # 200 workers, 60 s
    .venv/bin/python bench/reliability_bench.py --quick         # 20 workers, 10 s
    .venv/bin/python bench/reliability_bench.py --restart-postgres-at 20

Sets qaportal up as ``worker_cycles.py`` does (its own database ``bench_qaportal``,
Redis dbs 9 and 10, gunicorn with 4 sync workers, DEBUG off) plus a Celery worker with
the broker on, then runs the closed loop of ``loadgen.py``: each simulated worker
accepts, opens the task page and submits, again and again. In 10 % of the cycles the
worker sends its submission twice (a double click, a resent form); 5 % of the cycles
are abandoned: a worker with its own fresh invite accepts a task and never comes back.
With ``--restart-postgres-at S`` the PostgreSQL cluster is restarted S seconds into
the run (``pg_ctlcluster``; affects everything on this machine that uses it) and the
time until ``/healthz`` answers 200 again is measured.

Checked at the end from the database: every acknowledged submission is stored, none
is stored twice (one assignment per worker and HIT, never more than the HIT's places),
no answer was a 5xx; throughput and latency percentiles are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import loadgen  # noqa: E402 - the bench folder is on the path now
import worker_cycles as wc  # noqa: E402


class ChaosDriver(loadgen.QaportalDriver):
    """The qaportal driver, plus double submits and abandoned assignments, and a count
    of every 5xx answer (the plain driver counts them only as failed steps)."""

    def __init__(self, *args: Any, double_share: float, abandon_share: float, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.rng = random.Random(7)
        self.double_share, self.abandon_share = double_share, abandon_share
        self.server_errors = 0
        self.doubles = 0
        self.double_refused = 0
        self.abandoned = 0
        self.spare_invites: list[str] = []

    async def cycle(self, client: loadgen.Client, step: Any) -> int:
        async def counted(
            name: str,
            method: str,
            path: str,
            form: Any = None,
            expect: Any = (200,),
            headers: Any = None,
        ) -> loadgen.Response:
            try:
                return await step(name, method, path, form, expect, headers)
            except loadgen.CycleError as exc:
                if " -> 5" in str(exc):
                    self.server_errors += 1
                raise

        if self.spare_invites and self.rng.random() < self.abandon_share:
            await self._abandon(self.spare_invites.pop())
        if self.rng.random() >= self.double_share:
            return await super().cycle(client, counted)
        # Submit twice: the second POST must not store a second answer nor fail.
        sent: list[tuple[str, Any]] = []

        async def twice(
            name: str,
            method: str,
            path: str,
            form: Any = None,
            expect: Any = (200,),
            headers: Any = None,
        ) -> loadgen.Response:
            r = await counted(name, method, path, form, expect, headers)
            if name == "submit":
                sent.append((path, form))
            return r

        ack = await super().cycle(client, twice)
        path, form = sent[-1]
        again = await client.request("POST", path, form)
        self.doubles += 1
        if again.status >= 500:
            self.server_errors += 1
        elif again.status >= 400:
            self.double_refused += 1
        return ack

    async def _abandon(self, invite: str) -> None:
        """A one-off worker: joins through its own invite, accepts, leaves."""
        ghost = self.client(0, 30.0)
        ghost.state["invite"] = invite
        try:
            await self.prepare(ghost)
            af = ghost.state["accept_form"]
            data = [(n, v) for kind, n, v in af.fields if kind in ("hidden", "submit") and n]
            r = await ghost.request("POST", af.action, self._csrf(ghost, data))
            if r.status >= 500:
                self.server_errors += 1
            self.abandoned += 1
        except (loadgen.CycleError, OSError, TimeoutError):
            pass


def healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://{wc.HOST}:{port}/healthz", timeout=2) as r:
            return bool(r.status == 200)
    except Exception:  # any failure means "not yet"
        return False


def restart_postgres(port: int, result: dict[str, Any]) -> None:
    cluster = subprocess.run(["ls", "/etc/postgresql"], capture_output=True, text=True)
    version = cluster.stdout.split()[0]
    started = time.perf_counter()
    subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart"], check=True
    )
    while not healthy(port):
        time.sleep(0.2)
    result["postgres_recovery_s"] = round(time.perf_counter() - started, 2)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workers", type=int, default=200)
    p.add_argument("--duration", type=float, default=60.0)
    p.add_argument("--quick", action="store_true", help="20 workers, 10 s")
    p.add_argument("--double-share", type=float, default=0.10)
    p.add_argument("--abandon-share", type=float, default=0.05)
    p.add_argument("--restart-postgres-at", type=float, default=0.0)
    p.add_argument("--gunicorn-workers", type=int, default=4)
    args = p.parse_args()
    if args.quick:
        args.workers, args.duration = 20, 10.0
    # What worker_cycles' qaportal set-up reads from its own arguments.
    setup = argparse.Namespace(
        qaportal_venv=str(wc.ROOT / ".venv"),
        qaportal_items=int(max(2000, 60 * args.duration * 2)),
        gunicorn_workers=args.gunicorn_workers,
        worker_class="sync",
        threads=1,
        celery_eager=False,
        qaportal_log_level="WARNING",
    )
    spare = int(args.abandon_share * 60 * args.duration) + 10
    tmp = Path(tempfile.mkdtemp(prefix="qaportal-reliability-"))
    server, cfg, meta = wc.qaportal_up(tmp, setup, args.workers + spare)
    celery = wc.Server(
        "celery",
        [
            str(Path(setup.qaportal_venv) / "bin" / "celery"),
            "-A",
            "qaportal",
            "worker",
            "--concurrency",
            "1",
            "--loglevel",
            "WARNING",
        ],
        meta["env"],
        wc.ROOT,
        tmp / "celery.log",
        0,
    )
    report: dict[str, Any] = {"workers": args.workers, "duration_s": args.duration}
    try:
        driver = ChaosDriver(
            wc.HOST,
            server.port,
            cfg,
            double_share=args.double_share,
            abandon_share=args.abandon_share,
        )
        clients = [driver.client(i, 60.0) for i in range(args.workers)]
        # Each one-off worker opens the campaign's invite in a fresh browser: a new worker.
        driver.spare_invites = [cfg["invites"][0]] * spare

        async def run() -> loadgen.LevelResult:
            await loadgen.prepare_clients(driver, clients)
            return await loadgen.run_level(driver, clients, args.duration, max_errors=10_000)

        restarter = None
        if args.restart_postgres_at:
            restarter = threading.Timer(
                args.restart_postgres_at, restart_postgres, (server.port, report)
            )
            restarter.start()
        result = asyncio.run(run())
        if restarter is not None:
            restarter.join()
        verified = wc.qaportal_verify(meta, cfg, result.acked)
        level = result.report()
        report.update(
            {
                "cycles": result.cycles,
                "cycles_per_s": level["cycles_per_s"],
                "failed_cycles": result.failed_cycles,
                "cycle_latency": level["cycle"],
                "submit_latency": level["requests"].get("submit"),
                "double_submits": driver.doubles,
                "double_submits_refused_4xx": driver.double_refused,
                "abandoned": driver.abandoned,
                "server_errors_5xx": driver.server_errors,
                "verify": verified,
                "error_samples": result.error_samples[:5],
            }
        )
    finally:
        celery.stop()
        server.stop()
    print(json.dumps(report, indent=2, default=str))
    ok = report.get("server_errors_5xx", 1) == 0 and report.get("verify", {}).get("ok", False)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
