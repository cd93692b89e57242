"""The crowd simulator's dry run of a Mintaka pilot: requests per second, end to end.

    .venv/bin/python bench/simulate_bench.py                       # PostgreSQL and SQLite
    .venv/bin/python bench/simulate_bench.py --db sqlite --per-cell 2
    .venv/bin/python bench/simulate_bench.py --db postgres --profile   # + pyinstrument

A requester's dry run of a pilot: ``load_recipe mintaka`` with its sample (8 topics x 9
complexity types = 72 cells), a few places per cell (``--per-cell``, the pilot size),
``campaign_start(pilot)``, then ``simulate_crowd`` with ``--workers`` workers
(``--approve-all``, the default profile mix) through the in-process server until no
stage has work left: questions written, answers linked, question spans proposed and
linked. Celery is eager (the dry run's machine runs no worker), as on the embedded
default.

PostgreSQL: recreates the database ``--pg-url`` (its name must contain "bench").
SQLite: a fresh file in a temporary folder (the embedded default's settings).
Each back end runs in a process of its own (settings are read at start-up).

Prints wall time, CPU time of the process (server threads included), requests,
requests/s, and a fingerprint of the outcome (statuses, items, answers per stage):
two runs with the same seed and sizes must print the same fingerprint.
The JSON line adds ``seen_rule``: Mintaka §4.3's seen questions that got more than one
annotator, and how many of them without disagreement (``seen_rule_tally``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PG = "postgres://postgres@127.0.0.1:5432/qaportal_simulate_bench"


def recreate_database(url: str) -> None:
    import psycopg2

    name = urlparse(url).path.lstrip("/")
    if "bench" not in name:
        raise SystemExit(f"refusing to recreate {name!r}: its name must contain 'bench'")
    admin = urlparse(url)._replace(path="/postgres").geturl()
    conn = psycopg2.connect(admin)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        cur.execute(f'CREATE DATABASE "{name}"')
    conn.close()


def fingerprint(campaign) -> tuple[dict, str]:
    from campaigns.models import Assignment, Item

    digest = hashlib.sha256()
    counts: dict[str, dict[str, int]] = {}
    for stage in campaign.stages.order_by("position", "id"):
        items = Item.objects.filter(stage=stage).order_by("external_id", "id")
        for external_id, data in items.values_list("external_id", "data"):
            digest.update(json.dumps([stage.name, external_id, data], sort_keys=True).encode())
        rows = Assignment.objects.filter(hit__stage=stage).order_by("id")
        tally: dict[str, int] = {"items": items.count()}
        for status, answers, source in rows.values_list("status", "answers", "decision_source"):
            tally[status] = tally.get(status, 0) + 1
            digest.update(json.dumps([status, answers, source], sort_keys=True).encode())
        counts[stage.name] = tally
    return counts, digest.hexdigest()[:16]


def seen_rule_tally(campaign) -> dict[str, int]:
    """Mintaka §4.3's seen rule on the question-linking stage (issue 35, point 6): the
    seen questions, those that got a second or third annotator, and of these the ones
    whose first annotator disagreed with none of the pre-filled links (kept every one,
    added no entity; an id typed on a value span is no entity): these should be none."""
    from campaigns.models import Assignment, AssignmentStatus, HITItem
    from campaigns.tasktypes.base import answer_for_item
    from linking.agreement import entity_links, link_set
    from linking.selectors import value_spans

    tally = {"seen": 0, "seen_more_annotators": 0, "without_disagreement": 0}
    stage = campaign.stages.filter(task_type="question_entity_linking").first()
    if stage is None:
        return tally
    answers: dict[int, list] = {}
    for hit_id, answer in (
        Assignment.objects.filter(
            hit__stage=stage,
            status__in=(AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED),
        )
        .order_by("submitted_at", "id")
        .values_list("hit_id", "answers")
    ):
        answers.setdefault(hit_id, []).append(answer)
    rows = HITItem.objects.filter(hit__stage=stage, item__data__seen=True)
    for hit_id, external_id, data in rows.values_list("hit_id", "item__external_id", "item__data"):
        values = value_spans(data.get("proposed_spans") or [])
        sets = [
            entity_links(link_set(entry.get("links", [])), values=values)
            for answer in answers.get(hit_id, [])
            if (entry := answer_for_item(answer, {"external_id": external_id})) is not None
        ]
        tally["seen"] += 1
        if len(sets) >= 2:
            tally["seen_more_annotators"] += 1
            tally["without_disagreement"] += sets[0] == link_set(data.get("prefilled_links", []))
    return tally


def _profiler():
    """Start a profiler of this thread (the simulated browsers call the app in process,
    so the whole run is here); the function that stops it and prints the report.
    pyinstrument when installed (a dev tool), else cProfile on CPU time."""
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    try:
        from pyinstrument import Profiler
    except ImportError:
        import cProfile
        import pstats

        profile = cProfile.Profile(time.process_time)
        profile.enable()

        def stop(db: str) -> None:
            profile.disable()
            profile.dump_stats(out / f"simulate_{db}.prof")
            pstats.Stats(profile).sort_stats("cumulative").print_stats(60)

        return stop
    profiler = Profiler(async_mode="disabled")
    profiler.start()

    def stop_pyinstrument(db: str) -> None:
        profiler.stop()
        (out / f"simulate_{db}.html").write_text(profiler.output_html())
        print(profiler.output_text(unicode=False, color=False, show_all=False)[:12000])

    return stop_pyinstrument


def _statement_timer():
    """Time every statement of the run on its connection (``SIMBENCH_STATEMENT_TIMES=1``):
    the wall time from sending it to its answer, summed per statement text (numbers and
    literals folded) and per calling site in the project; the function that prints the
    30 costliest. On PostgreSQL that is mostly the server's time (a local socket), so it
    stands in for ``pg_stat_statements`` where the extension is not preloaded."""
    import re

    from django.db import connection

    literal = re.compile(r"'[^']*'|\b\d+\b")
    costs: dict[tuple[str, str], list[float]] = {}
    site = _site_finder()

    def timed(execute, sql, params, many, context):
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            spent = time.perf_counter() - start
            key = (literal.sub("?", " ".join(sql.split()))[:160], site())
            cost = costs.setdefault(key, [0, 0.0])
            cost[0] += 1
            cost[1] += spent

    connection.execute_wrappers.append(timed)

    def report() -> None:
        total = sum(c[1] for c in costs.values())
        calls = sum(c[0] for c in costs.values())
        print(f"statements: {calls} in {total:.1f} s (wall, from send to answer)")
        for (sql, where), (n, spent) in sorted(costs.items(), key=lambda kv: -kv[1][1])[:30]:
            print(f"{spent:6.2f} s {n:6d} x {spent / n * 1000:5.2f} ms  {where}\n      {sql}")

    return report


def _statement_plans(every: int = 100):
    """Sample the run's statements through ``EXPLAIN (ANALYZE, BUFFERS)`` on PostgreSQL
    (``SIMBENCH_STATEMENT_PLANS=1``): the first two of each statement text (numbers and
    literals folded) and calling site, then one in ``every``, run again right after the
    real one inside a savepoint (or a transaction) that is rolled back. Buffers touched
    do not depend on the machine's load, so a statement whose buffers per call grow from
    the run's first third to its last reads more as the tables grow. The function that
    prints the 30 statements with the most buffers in all (estimated: sampled mean x
    calls), with the first and last thirds' means and the sampled execution time."""
    import json as json_
    import re

    from django.db import connection

    literal = re.compile(r"'[^']*'|\b\d+\b")
    kinds = ("SELECT", "INSERT", "UPDATE", "DELETE", "EXECUTE", "WITH")
    shapes: dict[str, list] = {}  # text -> [calls, [(call, buffers, ms)], {sites}]
    where = _site_finder()

    def explain(sql, params) -> tuple[int, float] | None:
        raw = connection.connection.cursor()
        savepoint = connection.in_atomic_block
        try:
            raw.execute("SAVEPOINT simbench_plan" if savepoint else "BEGIN")
            try:
                raw.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql, params)
                plan = raw.fetchone()[0]
            finally:
                raw.execute("ROLLBACK TO SAVEPOINT simbench_plan" if savepoint else "ROLLBACK")
        except Exception:
            return None
        finally:
            raw.close()
        plan = plan if isinstance(plan, list) else json_.loads(plan)
        top = plan[0]["Plan"]
        buffers = sum(top.get(f"Shared {k} Blocks", 0) for k in ("Hit", "Read", "Dirtied"))
        ms = plan[0].get("Execution Time", 0.0) + sum(
            t.get("Time", 0.0) for t in plan[0].get("Triggers", [])
        )
        return buffers, ms

    def sampled(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if many or not sql.lstrip()[:7].upper().startswith(kinds):
            return result
        # Keyed by the text alone: naming the caller walks the stack, only when sampled.
        shape = shapes.setdefault(literal.sub("?", " ".join(sql.split()))[:160], [0, [], set()])
        shape[0] += 1
        if shape[0] <= 2 or shape[0] % every == 0:
            found = explain(sql, params)
            if found is not None:
                shape[1].append((shape[0], *found))
                shape[2].add(where())
        return result

    connection.execute_wrappers.append(sampled)

    def report() -> None:
        rows = []
        for sql, (calls, samples, sites) in shapes.items():
            if not samples:
                continue
            third = max(1, len(samples) // 3)
            first = sum(s[1] for s in samples[:third]) / third
            last = sum(s[1] for s in samples[-third:]) / third
            mean = sum(s[1] for s in samples) / len(samples)
            ms = sum(s[2] for s in samples) / len(samples)
            rows.append((mean * calls, calls, first, last, ms, ", ".join(sorted(sites)), sql))
        print(
            "statements by buffers (sampled EXPLAIN ANALYZE): total, calls, buffers/call "
            "first third -> last third, server ms/call"
        )
        for total, calls, first, last, ms, site, sql in sorted(rows, reverse=True)[:30]:
            print(
                f"{total:10.0f} {calls:6d} x {first:7.1f} -> {last:7.1f} buf {ms:6.2f} ms  "
                f"{site}\n      {sql}"
            )

    return report


def _site_finder():
    """The function that names the project's innermost caller of a statement."""
    import traceback

    def site() -> str:
        for frame in reversed(traceback.extract_stack(limit=40)[:-3]):
            name = frame.filename
            if str(ROOT) in name and not any(
                p in name for p in ("/.venv/", "/bench/", "prepared.py")
            ):
                return f"{Path(name).relative_to(ROOT)}:{frame.lineno} {frame.name}"
        return "?"

    return site


def _server_cpu() -> float:
    """CPU seconds of the local PostgreSQL server so far: its processes' own, and the
    exited backends' (counted on the postmaster, their parent). The run's connection
    may be closed and opened again (``CONN_MAX_AGE``), so one backend is not enough;
    anything else using the server meanwhile counts too (run it on a quiet machine)."""
    ticks = os.sysconf("SC_CLK_TCK")
    stats = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        name, _, rest = text.partition(" (")[2].rpartition(") ")
        if name == "postgres" or name.startswith("postgres"):
            stats[int(stat.parent.name)] = rest.split()
    total = 0
    for fields in stats.values():
        total += int(fields[11]) + int(fields[12])  # utime, stime
        if int(fields[1]) not in stats:  # the postmaster: its reaped children
            total += int(fields[13]) + int(fields[14])
    return total / ticks


def _backend_cpu():
    """The function that gives the database server's CPU seconds since now."""
    start = _server_cpu()
    return lambda: _server_cpu() - start


def _pid_cpu(pid: int) -> float:
    """CPU seconds (user and system) of process ``pid`` so far; 0 when it is gone."""
    try:
        rest = Path(f"/proc/{pid}/stat").read_text().rpartition(") ")[2].split()
    except OSError:
        return 0.0
    return (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")


def _own_backends_cpu():
    """The function that gives the CPU seconds since now of the PostgreSQL backends that
    served this process's connection (``SELECT pg_backend_pid()`` on each new one; a
    connection's backend is read again just before it closes): unlike ``_server_cpu``,
    not counting what other databases on a shared server do meanwhile."""
    from django.db import connection
    from django.db.backends.signals import connection_created

    spent: dict[int, float] = {}  # backend pid -> CPU at start (negated), then added

    def backend_pid() -> int:
        with connection.connection.cursor() as cursor:  # the DB-API cursor: no wrappers
            cursor.execute("SELECT pg_backend_pid()")
            return int(cursor.fetchone()[0])

    def opened(sender, connection, **kwargs) -> None:
        pid = backend_pid()
        spent.setdefault(pid, -_pid_cpu(pid))

    connection.ensure_connection()
    current = [backend_pid()]
    spent[current[0]] = -_pid_cpu(current[0])
    connection_created.connect(opened, weak=False)
    close = connection.close

    def closing() -> None:
        if connection.connection is not None:
            pid = backend_pid()
            spent[pid] = spent.get(pid, 0.0) + _pid_cpu(pid)
            spent[-pid] = 0.0  # read: not again at the end
        close()

    connection.close = closing  # type: ignore[method-assign]

    def total() -> float:
        for pid in [p for p in spent if p > 0 and -p not in spent]:
            spent[pid] += _pid_cpu(pid)
        return sum(v for p, v in spent.items() if p > 0)

    return total


def child(args: argparse.Namespace) -> None:
    """One run in this process, with the settings of ``args.db``."""
    os.environ["DJANGO_SETTINGS_MODULE"] = "qaportal.settings"
    os.environ["CELERY_TASK_ALWAYS_EAGER"] = "1"
    os.environ["LOG_LEVEL"] = "WARNING"
    os.environ["DEBUG"] = "0"
    os.environ.setdefault("SECRET_KEY", "bench-only-secret-key")
    os.environ["ALLOWED_HOSTS"] = "127.0.0.1,localhost"
    os.environ["SESSION_COOKIE_SECURE"] = "0"
    os.environ["CSRF_COOKIE_SECURE"] = "0"
    os.environ["SECURE_SSL_REDIRECT"] = "0"
    for name in ("REDIS_URL", "CELERY_BROKER_URL"):
        os.environ.pop(name, None)
    tmp = tempfile.mkdtemp(prefix="simbench-")
    os.environ["QAPORTAL_VAR_DIR"] = tmp
    if args.db == "postgres":
        os.environ["DATABASE_URL"] = args.pg_url
        recreate_database(args.pg_url)
    else:
        os.environ.pop("DATABASE_URL", None)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core import checks
    from django.core.management import call_command

    from campaigns.design.services import campaign_create, stage_update
    from campaigns.platforms.publishing import campaign_start
    from campaigns.recipes.services import recipe_apply
    from campaigns.simulate import simulate_crowd

    call_command("migrate", verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)
    # What ``manage.py simulate_crowd`` does before the command starts: the system
    # checks, which import the URLconf (and with it every view and the API). Without
    # them the run's first ``reverse()`` imported it inside the timed run.
    checks.run_checks()
    owner = get_user_model().objects.create_user(username="bench-owner", password="x")
    campaign = campaign_create(owner=owner, name="Mintaka pilot", slug="mintaka-pilot")
    set_up = time.monotonic()
    write, *_ = recipe_apply(campaign=campaign, name="mintaka", sample=True, scale=args.scale)
    if args.cells < write.items.count():
        write.items.exclude(
            pk__in=list(write.items.order_by("id").values_list("pk", flat=True)[: args.cells])
        ).delete()
    if args.per_cell is not None:
        stage_update(stage=write, assignments_per_hit=args.per_cell)
    campaign = campaign_start(campaign=campaign, to_state="pilot")
    set_up = time.monotonic() - set_up

    if os.environ.get("SIMBENCH_COUNT_QUERIES"):
        from django.conf import settings

        settings.MIDDLEWARE = ["perf_probe_mw.CountQueries", *settings.MIDDLEWARE]
    statements: Counter[str] = Counter()
    if os.environ.get("SIMBENCH_STATEMENTS"):
        from django.db import connection

        def count(execute, sql, params, many, context):
            statements[sql.split(None, 1)[0].upper() if sql.strip() else "?"] += 1
            return execute(sql, params, many, context)

        # The run's one thread and connection: the simulated browsers call the app in
        # process, so every statement of every request goes through this wrapper.
        connection.execute_wrappers.append(count)
    timings = _statement_timer() if os.environ.get("SIMBENCH_STATEMENT_TIMES") else None
    plans = (
        _statement_plans()
        if os.environ.get("SIMBENCH_STATEMENT_PLANS") and args.db == "postgres"
        else None
    )
    profiler = _profiler() if args.profile else None
    backend = _backend_cpu() if args.db == "postgres" else None
    own_backend = _own_backends_cpu() if args.db == "postgres" else None
    cpu, wall = time.process_time(), time.monotonic()
    result = simulate_crowd(
        campaign=campaign, workers=args.workers, seed=args.seed, approve_all=True
    )
    wall, cpu = time.monotonic() - wall, time.process_time() - cpu
    # The process's peak so far: set-up and the run (the fingerprint's reads come after).
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    db_cpu = backend() if backend is not None else None
    own_db_cpu = own_backend() if own_backend is not None else None
    if profiler is not None:
        profiler(args.db)
    if os.environ.get("SIMBENCH_COUNT_QUERIES"):
        import perf_probe_mw

        stats = sorted(perf_probe_mw.STATS.items(), key=lambda kv: -kv[1][3])
        for key, (n, q, cpu_s, wall_s) in stats:
            print(
                f"{n:6d} x {q / n:5.1f} queries {cpu_s / n * 1000:6.2f} ms CPU "
                f"{wall_s / n * 1000:6.2f} ms wall = {wall_s:5.1f} s  {key}"
            )
    if timings is not None:
        timings()
    if plans is not None:
        plans()
    if statements:
        print(f"statements by kind: {dict(statements.most_common())} ({statements.total()})")
    counts, digest = fingerprint(campaign)
    seen_rule = seen_rule_tally(campaign)
    load = os.getloadavg()[0]
    print(
        f"SUMMARY simulate {args.db}: {result.requests} requests ({result.pages} pages) "
        f"in {wall:.1f} s wall / "
        f"{cpu:.1f} s CPU = {result.requests / wall:.1f} requests/s "
        f"({result.requests / cpu:.1f} per CPU-second)"
        + (f", database server {db_cpu:.1f} s CPU" if db_cpu is not None else "")
        + (f" (this run's backends {own_db_cpu:.1f} s)" if own_db_cpu is not None else "")
        + f"; peak RSS {peak_mb:.0f} MB; fingerprint {digest}; "
        f"ok={result.ok}; load {load:.1f}"
    )
    print(
        json.dumps(
            {
                "db": args.db,
                "per_cell": args.per_cell,
                "workers": args.workers,
                "set_up_s": round(set_up, 2),
                "wall_s": round(wall, 2),
                "cpu_s": round(cpu, 2),
                "db_server_cpu_s": None if db_cpu is None else round(db_cpu, 2),
                "db_backend_cpu_s": None if own_db_cpu is None else round(own_db_cpu, 2),
                "load_avg": round(load, 1),
                "peak_rss_mb": round(peak_mb),
                "requests": result.requests,
                "pages": result.pages,
                "requests_per_s": round(result.requests / wall, 1),
                "ok": result.ok,
                "errors": result.errors[:5],
                "stages": counts,
                "seen_rule": seen_rule,
                "fingerprint": digest,
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", choices=["postgres", "sqlite", "both"], default="both")
    parser.add_argument("--pg-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_PG))
    parser.add_argument(
        "--scale",
        choices=["pilot", "paper"],
        default="pilot",
        help="the recipe's sizes (pilot; paper: 50 places on each of the 80 writing items)",
    )
    parser.add_argument(
        "--per-cell", type=int, default=None, help="places per cell (pilot: 2; paper: 50)"
    )
    parser.add_argument("--workers", type=int, default=12)
    parser.add_argument(
        "--cells", type=int, default=80, help="writing items kept, first ones (80: all)"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", action="store_true", help="pyinstrument (dev tool)")
    args = parser.parse_args()
    if args.per_cell is None and args.scale == "pilot":
        args.per_cell = 2
    if args.db != "both":
        child(args)
        return
    for db in ("postgres", "sqlite"):
        command = [sys.executable, __file__, "--db", db, "--pg-url", args.pg_url]
        command += ["--per-cell", str(args.per_cell)] if args.per_cell is not None else []
        command += ["--scale", args.scale, "--workers", str(args.workers)]
        command += ["--seed", str(args.seed), "--cells", str(args.cells)] + (
            ["--profile"] if args.profile else []
        )
        subprocess.run(command, check=True)


if __name__ == "__main__":
    main()
