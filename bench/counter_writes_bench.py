"""What the assignment counters' triggers cost the worker's accept and submit, and what
they do under concurrent workers (issue 39, item 2; docs/scaling.md).

    . env (as worker_pages_cpu.py: DATABASE_URL, REDIS_URL, ...)
    .venv/bin/python bench/counter_writes_bench.py --config CONFIG_JSON \
        [--cycles 1200] [--threads 6] [--concurrent-cycles 150] [--return-share 0.2] \
        [--places 3]

``CONFIG_JSON`` is what ``qaportal_setup.py`` prints (a stage with many open HITs).
Calls the services as the worker pages do (``assignment_accept`` with a worker id,
``assignment_submit_for_workers``), no HTTP, so that the database's share is not lost
in the app's.

1. Serial: one worker's accept + submit, ``--cycles`` times, in blocks that alternate
   the counters' triggers on and off (``ALTER TABLE … DISABLE TRIGGER``), so that load
   drifting on a shared machine falls on both alike. Reports the PostgreSQL backend's
   CPU (``/proc``: 10 ms ticks, hence many cycles) per accept and per submit, with and
   without the triggers: the difference is what the counters cost a worker (after
   migration 0022, one trigger per write holds every assignment summary: all toggled).
2. Concurrent: ``--threads`` threads (one connection each, a new worker every
   ``--per-worker`` cycles) accept and then submit, or return (``--return-share``),
   ``--concurrent-cycles`` times each, with no retry of a deadlock's victim
   (``qaportal.deadlock.TRIES = 1``), on HITs given ``--places`` places each first (as in
   a stage with 3 assignments per HIT: workers meet on the same HITs): deadlocks counted,
   cycles per second, backend CPU per cycle.

The counters' trigger functions are timed by PostgreSQL (``track_functions = pl``, set
on the database): calls and mean time per call, each part apart; where the compaction
exists, the one after the serial part is timed too. Then the counters are rebuilt (the
serial part's blocks without triggers left them short) and checked against a full count.
Runs on any commit that has the services (the compaction is used when it exists), so
that before and after can be compared on databases set up alike.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "qaportal.settings")

import django

django.setup()

from django.db import OperationalError, connection  # noqa: E402

from campaigns.models import Stage  # noqa: E402
from campaigns.work import counts  # noqa: E402
from campaigns.work.allocation import assignment_accept  # noqa: E402
from campaigns.work.invites import invite_create, invite_redeem, invite_token  # noqa: E402
from campaigns.work.lifecycle import assignment_return  # noqa: E402
from campaigns.work.selectors.access import RequestWorkers  # noqa: E402
from campaigns.work.selectors.counts import (  # noqa: E402
    stage_assignment_counts,
    stage_assignment_counts_full,
)
from campaigns.work.submission import assignment_submit_for_workers  # noqa: E402
from qaportal import deadlock  # noqa: E402

# The assignment counters' triggers: ``campaigns_assignment_counts_<op>`` up to migration
# 0021, ``campaigns_assignment_summaries_<op>`` (every assignment summary in one) after.
TRIGGER_PREFIXES = ("campaigns_assignment_counts_", "campaigns_assignment_summaries_")


def trigger_names() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tgname FROM pg_trigger WHERE tgrelid = 'campaigns_assignment'::regclass "
            "AND NOT tgisinternal ORDER BY tgname"
        )
        return [name for (name,) in cursor.fetchall() if name.startswith(TRIGGER_PREFIXES)]


def trigger_stats() -> dict[str, Any]:
    """The counters' trigger functions since the last reset (``track_functions = pl``):
    calls and mean time per call in microseconds (wall time inside the function,
    statements it runs included). Read on a fresh connection after the others closed
    (a backend hands in its statistics when it goes idle or exits)."""
    connection.close()
    time.sleep(1.5)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT funcname, calls, total_time FROM pg_stat_user_functions "
            "WHERE funcname LIKE 'campaigns_assignment_counts_%' "
            "OR funcname LIKE 'campaigns_assignment_summaries_%' ORDER BY funcname"
        )
        rows = cursor.fetchall()
    return {
        name.removeprefix("campaigns_assignment_"): {
            "calls": calls,
            "us_per_call": round(1000 * total / max(1, calls), 1),
        }
        for name, calls, total in rows
    }


def stats_reset() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_reset()")


def backend_cpu() -> float:
    """CPU seconds of this thread's connection's PostgreSQL backend (same machine)."""
    connection.ensure_connection()
    pid = connection.connection.get_backend_pid()
    with open(f"/proc/{pid}/stat") as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")


def triggers(on: bool) -> None:
    verb = "ENABLE" if on else "DISABLE"
    with connection.cursor() as cursor:
        for name in trigger_names():
            cursor.execute(f"ALTER TABLE campaigns_assignment {verb} TRIGGER {name}")


def workers(stage: Stage, n: int) -> list[int]:
    link = invite_create(
        campaign=stage.campaign, created_by=stage.campaign.owner, expires_in=timedelta(days=1)
    )
    return [invite_redeem(token=invite_token(invite=link))[1].pk for _ in range(n)]


class Cycle:
    """One worker's accept and submit (or return), as the worker pages call them."""

    def __init__(self, stage: Stage, answer: dict[str, str], worker_id: int) -> None:
        self.stage, self.answer, self.worker_id = stage, answer, worker_id
        self.workers = RequestWorkers(worker_ids=(worker_id,))

    def accept(self) -> int:
        return assignment_accept(stage=self.stage, worker=self.worker_id).pk

    def submit(self, assignment_id: int) -> None:
        form = {k: v.format(id=assignment_id) for k, v in self.answer.items()}
        result = assignment_submit_for_workers(
            assignment_id=assignment_id,
            workers=self.workers,
            form=form,
            telemetry={"keystrokes": 40, "page_ms": 9000, "pastes": []},
        )
        assert result.stored, result.errors

    def give_back(self, assignment_id: int) -> None:
        from campaigns.models import Worker

        assignment_return(assignment_id=assignment_id, worker=Worker(pk=self.worker_id))


def serial(stage: Stage, answer: dict[str, str], cycles: int, blocks: int) -> dict[str, Any]:
    cycle = Cycle(stage, answer, workers(stage, 1)[0])
    db: dict[tuple[bool, str], float] = {}
    done: dict[bool, int] = {True: 0, False: 0}
    per_block = max(1, cycles // blocks)
    for block in range(blocks):
        on = block % 2 == 0
        triggers(on)
        for n in range(per_block + 20):  # the first 20 of a block warm up
            d0 = backend_cpu()
            aid = cycle.accept()
            d1 = backend_cpu()
            cycle.submit(aid)
            d2 = backend_cpu()
            if n >= 20:
                db[on, "accept"] = db.get((on, "accept"), 0.0) + d1 - d0
                db[on, "submit"] = db.get((on, "submit"), 0.0) + d2 - d1
                done[on] += 1
    triggers(True)
    return {
        f"{'on' if on else 'off'} {kind}": round(1000 * total / done[on], 3)
        for (on, kind), total in sorted(db.items())
    }


def concurrent(
    stage: Stage,
    answer: dict[str, str],
    threads: int,
    cycles: int,
    return_share: float,
    per_worker: int,
) -> dict[str, Any]:
    # A crowd: each thread is a new worker every ``per_worker`` cycles (one worker doing
    # hundreds of HITs would make every accept walk past the HITs they already hold).
    ids = workers(stage, threads * -(-cycles // per_worker))
    deadlock.TRIES = 1  # a deadlock's victim fails instead of running again
    results: list[dict[str, float]] = []
    lock = threading.Lock()
    start = threading.Barrier(threads)

    def run(seed: int) -> None:
        mine = ids[seed::threads]
        out = {"cycles": 0, "deadlocks": 0, "db": 0.0}
        try:
            start.wait()
            for n in range(cycles):
                cycle = Cycle(stage, answer, mine[n // per_worker])
                d0 = backend_cpu()
                try:
                    aid = cycle.accept()
                    if (n * 7919 + seed * 104729) % 1000 < return_share * 1000:
                        cycle.give_back(aid)
                    else:
                        cycle.submit(aid)
                    out["cycles"] += 1
                except OperationalError as exc:
                    if not deadlock.is_deadlock(exc):
                        raise
                    out["deadlocks"] += 1
                out["db"] += backend_cpu() - d0
        finally:
            connection.close()
        with lock:
            results.append(out)

    pool = [threading.Thread(target=run, args=(n,)) for n in range(threads)]
    started = time.monotonic()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    seconds = time.monotonic() - started
    deadlock.TRIES = 4
    total = sum(r["cycles"] for r in results)
    return {
        "threads": threads,
        "cycles": total,
        "deadlocks": sum(r["deadlocks"] for r in results),
        "cycles_per_s": round(total / seconds, 1),
        "db_ms_per_cycle": round(1000 * sum(r["db"] for r in results) / max(1, total), 3),
    }


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--config", required=True, help="qaportal_setup.py's JSON line")
    p.add_argument("--cycles", type=int, default=1200)
    p.add_argument("--blocks", type=int, default=6, help="alternating on/off blocks")
    p.add_argument("--threads", type=int, default=6)
    p.add_argument("--concurrent-cycles", type=int, default=150)
    p.add_argument("--return-share", type=float, default=0.2)
    p.add_argument(
        "--places", type=int, default=3, help="places per open HIT, concurrent part (0: as set up)"
    )
    p.add_argument("--per-worker", type=int, default=10, help="cycles per worker, concurrent part")
    a = p.parse_args()
    cfg = json.loads(a.config)
    stage = Stage.objects.select_related("campaign").get(pk=cfg["stage_id"])
    with connection.cursor() as cursor:
        name = connection.settings_dict["NAME"]
        cursor.execute(f'ALTER DATABASE "{name}" SET track_functions = pl')
    connection.close()  # new connections track the functions
    compact = getattr(counts, "stage_assignment_counts_compact", None)
    if compact is not None:
        compact()
    load = os.getloadavg()[0]
    out: dict[str, Any] = {"load_before": round(load, 2)}
    if a.cycles:
        stats_reset()
        out["serial_db_ms"] = serial(stage, cfg["answer"], a.cycles, a.blocks)
        out["serial_triggers"] = trigger_stats()
        if compact is not None:
            d0, t0 = backend_cpu(), time.monotonic()
            folded = compact() or 0
            out["compaction"] = {
                "deltas": folded,
                "db_ms": round(1000 * (backend_cpu() - d0), 1),
                "wall_ms": round(1000 * (time.monotonic() - t0), 1),
            }
    if a.threads:
        if a.places:  # as a stage with that many assignments per HIT
            with connection.cursor() as cursor:
                cursor.execute(
                    "UPDATE campaigns_hit SET max_assignments = %s, places_left = %s "
                    "WHERE stage_id = %s AND places_left > 0 AND status = 'published'",
                    [a.places, a.places, stage.pk],
                )
        stats_reset()
        out["concurrent"] = concurrent(
            stage,
            cfg["answer"],
            a.threads,
            a.concurrent_cycles,
            a.return_share,
            a.per_worker,
        )
        out["concurrent_triggers"] = trigger_stats()
    out["load_after"] = round(os.getloadavg()[0], 2)
    counts.stage_assignment_counts_rebuild(stage_ids=[stage.pk])
    rebuild = getattr(counts, "stage_counters_rebuild", None)
    if rebuild is not None:  # the other summaries, toggled with them since 0022
        rebuild(stage_ids=[stage.pk])
    kept = stage_assignment_counts(stage_ids=[stage.pk])
    assert kept == stage_assignment_counts_full(stage_ids=[stage.pk]), kept
    out["counts"] = kept.get(stage.pk, {})
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
