"""Adversarial writing with a model in the loop, in the deployed shape (issue 38,
performance): 50 simulated workers, a fake endpoint answering in 500 ms, every piece
in its own process.

    .venv/bin/python bench/model_loop_deployed.py                  # 50 workers, 4 tasks
    .venv/bin/python bench/model_loop_deployed.py --workers 10 --tasks 2 --base-port 24100

``model_loop_bench.py`` runs everything in one Python process (threads, one GIL); this
one runs what a deployment runs, each a process of its own, on loopback:

- the app under gunicorn (``--web-workers`` sync workers, 3 as ``WEB_CONCURRENCY``'s
  default, DEBUG off);
- a Celery worker (prefork, ``--celery-concurrency``) on a Redis broker: a page's
  commit sends the model call's message, the worker asks the endpoint;
- the OpenAI fake (``tests/campaigns/assist/fake_openai.py``) as its own HTTP server,
  answering every request after ``--delay`` seconds (0.5);
- ``--load-procs`` load generators (asyncio, ``loadgen.Client``: one connection per
  request, cookies and CSRF as a browser), splitting the simulated workers; with
  ``--think S`` each waits 0.5 to 1.5 times S seconds before each request (0: a closed loop).

Recreates the database of ``DATABASE_URL`` (default ``qaportal_adv_bench``) and
flushes the Redis database of ``REDIS_URL`` (default db 4): give it ones of your own.
One local campaign with two stages of ``adversarial_passage_question`` over the same
passages: one plain, one with ``adversarial`` (worker judges, one try) on the fake.
Each worker joins by the invite link and does ``--tasks`` tasks on each stage,
alternating, as a browser would:

- plain: accept, the work page, submit;
- with the model: accept, the work page, "Ask the model" (the try) and the page it
  leads to (waiting), the state every 0.7 s from 0.4 s on (``adversarial.js``), the
  page again with the answer, the mark and the page after it, submit.

Reported per request kind: p50 / p99 / max at the client (queueing included) and in the
gunicorn worker (its access log's request time); the processes' CPU; the load average; and
that every try has one model call, done, one ``model_usage`` ledger entry, and the
endpoint was asked once per call.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(ROOT))

import loadgen  # noqa: E402 - the bench folder is on the path now
import worker_cycles as wc  # noqa: E402

SENTENCES = [
    "The Amazon river flows through Brazil.",
    "Its basin covers seven million square kilometres.",
    "Francisco de Orellana sailed it in 1542.",
    "Many tributaries join it from the Andes.",
]
FORM = {"items/0/question": "Who sailed the Amazon river?", "items/0/sentences": "2"}
_ASSIGNMENT = re.compile(r"/work/a/(\d+)/$")
_POLL = re.compile(r'data-adv-poll="([^"]+)"')
_MARK = re.compile(r'formaction="([^"]+/mark/)"')
TICKS = os.sysconf("SC_CLK_TCK")


def deployed_env(tmp: Path, port: int) -> dict[str, str]:
    """The environment of every qaportal process of the run (web, Celery, set-up)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "CELERY_"))}
    database = os.environ.get(
        "DATABASE_URL", "postgres://postgres@127.0.0.1:5432/qaportal_adv_bench"
    )
    redis = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/4")
    env.update(
        {
            "DATABASE_URL": database,
            "REDIS_URL": redis,
            "CELERY_BROKER_URL": redis,
            "CELERY_TASK_ALWAYS_EAGER": "0",
            "SECRET_KEY": "bench-model-loop-not-secret-0123456789abcdefghijklmnopqrstuvwxyz",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "DEBUG": "0",
            "SESSION_COOKIE_SECURE": "0",
            "CSRF_COOKIE_SECURE": "0",
            "SECURE_SSL_REDIRECT": "0",
            "STATIC_ROOT": str(tmp / "static"),
            "QAPORTAL_VAR_DIR": str(tmp / "var"),
            "SITE_URL": f"http://{wc.HOST}:{port}",
            "LOG_LEVEL": "WARNING",
            "DJANGO_SETTINGS_MODULE": "qaportal.settings",
            "PYTHONPATH": str(ROOT),
        }
    )
    return env


def campaign_setup(*, workers: int, tasks: int, fake_url: str, concurrency: int) -> dict:
    """(In this process, before the servers start) The database, the endpoint on the
    fake, the campaign with its two stages and its invite."""
    import django

    django.setup()
    from datetime import timedelta

    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connections

    from campaigns.assist.endpoints import model_endpoint_create
    from campaigns.design.services import campaign_create, stage_add
    from campaigns.models import Item, ItemSource
    from campaigns.platforms.publishing import campaign_start
    from campaigns.work.invites import invite_create, invite_token

    call_command("migrate", verbosity=0)
    call_command("collectstatic", "--noinput", verbosity=0)
    owner = get_user_model().objects.create_user(username="bench", password="x")
    endpoint = model_endpoint_create(
        owner=owner,
        values={
            "name": "fake",
            "kind": "openai",
            "base_url": fake_url,
            "model": "fake-model-7b",
            "timeout_seconds": "5",
            "concurrency": concurrency,
            "price_in_per_1k": "0.0005",
            "price_out_per_1k": "0.0015",
        },
    )
    campaign = campaign_create(owner=owner, name="bench", slug="bench")
    plain = stage_add(campaign=campaign, name="plain", task_type="adversarial_passage_question")
    loop = stage_add(
        campaign=campaign,
        name="loop",
        task_type="adversarial_passage_question",
        config={"adversarial": {"endpoint": endpoint.pk, "max_tries": 1, "judge": "worker"}},
    )
    for stage in (plain, loop):
        Item.objects.bulk_create(
            Item(
                stage=stage,
                external_id=f"{stage.name}-{n}",
                data={"sentences": SENTENCES},
                source=ItemSource.UPLOADED,
            )
            for n in range(workers * tasks)
        )
    campaign = campaign_start(campaign=campaign, to_state="pilot")
    invite = invite_create(
        campaign=campaign, created_by=owner, expires_in=timedelta(days=1), max_uses=None
    )
    config = {"token": invite_token(invite=invite), "plain": plain.pk, "loop": loop.pk}
    connections.close_all()
    return config


def outcome_check(timeout: float) -> dict[str, int]:
    """Wait (up to ``timeout`` s) for the calls to settle, then count them."""
    from django.db.models import Count

    from campaigns.models import (
        AdversarialTry,
        LedgerEntry,
        LedgerKind,
        ModelCall,
        ModelCallStatus,
    )

    deadline = time.time() + timeout
    open_states = (ModelCallStatus.PENDING, ModelCallStatus.RUNNING)
    while ModelCall.objects.filter(status__in=open_states).exists() and time.time() < deadline:
        time.sleep(0.5)
    entry_call_ids = [
        int(key.rsplit(":", 1)[1])
        for key in LedgerEntry.objects.filter(kind=LedgerKind.MODEL_USAGE).values_list(
            "key", flat=True
        )
    ]
    return {
        "tries": AdversarialTry.objects.count(),
        "calls": ModelCall.objects.count(),
        "done": ModelCall.objects.filter(status=ModelCallStatus.DONE).count(),
        "not_done": ModelCall.objects.exclude(status=ModelCallStatus.DONE).count(),
        "ledger_model_usage": LedgerEntry.objects.filter(kind=LedgerKind.MODEL_USAGE).count(),
        "tries_with_two_calls": ModelCall.objects.values("assignment_id", "try_number")
        .annotate(n=Count("pk"))
        .filter(n__gt=1)
        .count(),
        "calls_without_entry": ModelCall.objects.filter(status=ModelCallStatus.DONE)
        .exclude(pk__in=entry_call_ids)
        .count(),
    }


_LOGGED = re.compile(r"^(GET|POST) (\S+) (\d{3}) (\d+)$")


def service_times(log: Path, cfg: dict) -> dict[str, list[float]]:
    """Each request's time inside its gunicorn worker (ms, from the access log), by the
    same kinds as the load generators' (the stage of a work page from its assignment)."""
    from campaigns.models import Assignment

    stage_of = dict(Assignment.objects.values_list("pk", "hit__stage_id"))
    kind_of_stage = {cfg["plain"]: "plain", cfg["loop"]: "loop"}
    out: dict[str, list[float]] = {}
    for line in log.read_text().splitlines():
        found = _LOGGED.match(line.strip())
        if not found:
            continue
        method, path, _, micros = found.groups()
        ms = int(micros) / 1000
        if m := re.fullmatch(r"/work/s/(\d+)/accept/", path):
            kind = f"accept {kind_of_stage.get(int(m.group(1)), '?')}"
        elif m := re.fullmatch(r"/work/a/(\d+)/(.*)", path):
            stage = kind_of_stage.get(stage_of.get(int(m.group(1)), 0), "?")
            rest = m.group(2)
            if rest == "":
                kind = f"{'page' if method == 'GET' else 'submit'} {stage}"
            elif rest == "try/":
                kind = "try loop"
            elif rest.endswith("/mark/"):
                kind = "mark loop"
            else:
                kind = "state loop"
        else:
            continue
        out.setdefault(kind, []).append(ms)
    for suffix in ("plain", "loop"):
        out[f"all {suffix}"] = [
            v for k, vs in list(out.items()) if k.endswith(f" {suffix}") for v in vs
        ]
    return out


# --- the fake, as its own process -------------------------------------------------------


def fake_serve(port: int, delay: float) -> None:
    """Serve the OpenAI fake until SIGTERM; then print what it saw (JSON) and exit."""
    from tests.campaigns.assist.fake_openai import FakeOpenAI

    fake = FakeOpenAI(delay=delay).start(port)

    def report(*_: Any) -> None:
        statuses: dict[str, int] = {}
        for call in fake.calls:
            statuses[str(call.get("status"))] = statuses.get(str(call.get("status")), 0) + 1
        print(json.dumps({"asked": len(fake.calls), "peak": fake.peak_active, **statuses}))
        sys.stdout.flush()
        os._exit(0)

    signal.signal(signal.SIGTERM, report)
    print("ready", flush=True)
    while True:
        time.sleep(3600)


# --- a load generator process ---------------------------------------------------------


def _csrf(client: loadgen.Client, data: dict[str, str]) -> dict[str, str]:
    return {**data, "csrfmiddlewaretoken": client.cookies.get("csrftoken", "")}


async def _worker(cfg: dict, index: int, rec: dict[str, list[float]], errors: list[str]) -> int:
    client = loadgen.Client(wc.HOST, cfg["port"], timeout=60)

    rng = random.Random(index)

    async def timed(kind: str, method: str, path: str, form: dict | None = None):
        if cfg["think"]:
            await asyncio.sleep(cfg["think"] * rng.uniform(0.5, 1.5))
        started = time.perf_counter()
        response = await client.request(method, path, form=form)
        rec.setdefault(kind, []).append((time.perf_counter() - started) * 1000)
        if response.status >= 500:
            errors.append(f"{kind} {response.status}")
        return response

    invite = f"/work/i/{cfg['token']}/"
    await client.request("GET", invite)
    await client.request("POST", invite, form=_csrf(client, {}))
    submitted = 0
    for task in range(cfg["tasks"]):
        order = ("plain", "loop") if (task + index) % 2 == 0 else ("loop", "plain")
        for kind in order:
            accept = f"/work/s/{cfg[kind]}/accept/"
            r = await timed(f"accept {kind}", "POST", accept, _csrf(client, {}))
            found = _ASSIGNMENT.search(r.location)
            if not found:
                errors.append(f"accept {kind}: {r.status} {r.location!r}")
                continue
            page = r.location
            r = await timed(f"page {kind}", "GET", page)
            if kind == "loop":
                r = await timed("try loop", "POST", f"{page}try/", _csrf(client, FORM))
                if r.status != 302:
                    errors.append(f"try refused: {r.status}")
                r = await timed("page again loop", "GET", page)
                poll = _POLL.search(r.text)
                if poll:
                    await asyncio.sleep(0.4)
                    while True:
                        state = await timed("state loop", "GET", poll.group(1))
                        body = json.loads(state.body or b"{}")
                        if body.get("final") or body.get("go_on_without_model"):
                            break
                        await asyncio.sleep(0.7)
                    r = await timed("page again loop", "GET", page)
                mark = _MARK.search(r.text)
                if mark:
                    await timed(
                        "mark loop", "POST", mark.group(1), _csrf(client, {"model_right": "no"})
                    )
                    await timed("page again loop", "GET", page)
            r = await timed(f"submit {kind}", "POST", page, _csrf(client, FORM))
            if r.status == 302 and not r.location.endswith(page):
                submitted += 1
            else:
                errors.append(f"submit {kind}: {r.status} {r.location!r}")
    return submitted


def load_run(cfg: dict) -> None:
    """One load generator: workers ``cfg["first"]`` … ``cfg["last"]``; prints JSON."""
    rec: dict[str, list[float]] = {}
    errors: list[str] = []

    async def everything() -> list[int]:
        await asyncio.sleep(max(0.0, cfg["start_at"] - time.time()))
        return await asyncio.gather(
            *(_worker(cfg, i, rec, errors) for i in range(cfg["first"], cfg["last"]))
        )

    submitted = sum(asyncio.run(everything()))
    usage = os.times()
    print(
        json.dumps(
            {
                "timings": rec,
                "errors": errors,
                "submitted": submitted,
                "cpu": usage.user + usage.system,
            }
        )
    )


# --- the run ----------------------------------------------------------------------------


def _cpu_of(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / TICKS


def _tree(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [pid, *(int(p) for p in out.split())]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=50)
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--delay", type=float, default=0.5)
    parser.add_argument("--concurrency", type=int, default=16, help="the endpoint's limit")
    parser.add_argument("--web-workers", type=int, default=3)
    parser.add_argument("--celery-concurrency", type=int, default=8)
    parser.add_argument("--load-procs", type=int, default=2)
    parser.add_argument(
        "--think", type=float, default=0.0, help="mean seconds before each request (0: none)"
    )
    parser.add_argument("--base-port", type=int, default=24000)
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()

    web_port, fake_port = args.base_port, args.base_port + 1
    tmp = Path(tempfile.mkdtemp(prefix="model-loop-"))
    env = deployed_env(tmp, web_port)
    os.environ.update(env)
    from benchdb import database_recreate

    database_recreate()
    redis_db = int(env["REDIS_URL"].rsplit("/", 1)[1] or 0)
    wc.redis_cmd(redis_db, "FLUSHDB")
    py = sys.executable
    fake = subprocess.Popen(
        [py, __file__, "fake", str(fake_port), str(args.delay)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert fake.stdout is not None
    fake.stdout.readline()  # "ready"
    cfg = campaign_setup(
        workers=args.workers,
        tasks=args.tasks,
        fake_url=f"http://{wc.HOST}:{fake_port}/v1",
        concurrency=args.concurrency,
    )
    bin_dir = Path(py).parent
    web = wc.Server(
        "gunicorn",
        [
            *wc.gunicorn_cmd(
                bin_dir / "gunicorn", "qaportal.wsgi", web_port, args.web_workers, "sync", 1
            ),
            "--access-logfile",
            str(tmp / "access.log"),
            "--access-logformat",
            "%(m)s %(U)s %(s)s %(D)s",
        ],
        env,
        ROOT,
        tmp / "gunicorn.log",
        web_port,
    )
    celery = wc.Server(
        "celery",
        [
            str(bin_dir / "celery"),
            "-A",
            "qaportal",
            "worker",
            "--loglevel",
            "WARNING",
            "--concurrency",
            str(args.celery_concurrency),
        ],
        env,
        ROOT,
        tmp / "celery.log",
        0,
    )
    loads: list[subprocess.Popen] = []
    try:
        web.wait_ready("/healthz")
        time.sleep(3)  # the Celery worker's pool
        web_pids, celery_pids = _tree(web.proc.pid), _tree(celery.proc.pid)
        cpu0 = {
            "web": _cpu_of(web_pids),
            "celery": _cpu_of(celery_pids),
            "fake": _cpu_of([fake.pid]),
        }
        start_at = time.time() + 2
        share = -(-args.workers // args.load_procs)
        for n in range(args.load_procs):
            part = {
                **cfg,
                "port": web_port,
                "tasks": args.tasks,
                "think": args.think,
                "start_at": start_at,
                "first": n * share,
                "last": min(args.workers, (n + 1) * share),
            }
            loads.append(
                subprocess.Popen(
                    [py, __file__, "load", json.dumps(part)],
                    env=env,
                    cwd=ROOT,
                    stdout=subprocess.PIPE,
                    text=True,
                )
            )
        results = [json.loads(p.communicate()[0]) for p in loads]
        wall = time.time() - start_at
        import django

        django.setup()
        counts = outcome_check(timeout=60)
        service = service_times(tmp / "access.log", cfg)
        cpu = {
            "web": _cpu_of(web_pids) - cpu0["web"],
            "celery": _cpu_of(celery_pids) - cpu0["celery"],
            "fake": _cpu_of([fake.pid]) - cpu0["fake"],
            "load": sum(r["cpu"] for r in results),
        }
    finally:
        for p in loads:
            if p.poll() is None:
                p.kill()
        web.stop()
        celery.stop()
        fake.send_signal(signal.SIGTERM)
    seen = json.loads(fake.communicate(timeout=10)[0].strip().splitlines()[-1])
    timings: dict[str, list[float]] = {}
    for result in results:
        for kind, values in result["timings"].items():
            timings.setdefault(kind, []).extend(values)
    for suffix in ("plain", "loop"):
        timings[f"all {suffix}"] = [
            v for k, vs in list(timings.items()) if k.endswith(f" {suffix}") for v in vs
        ]
    rows = {
        kind: {
            "n": len(values),
            "p50": round(statistics.median(values), 1),
            "p99": round(_pct(values, 0.99), 1),
            "max": round(max(values), 1),
        }
        for kind, values in sorted(timings.items())
        if values
    }
    service_rows = {
        kind: {
            "n": len(values),
            "p50": round(statistics.median(values), 1),
            "p99": round(_pct(values, 0.99), 1),
            "max": round(max(values), 1),
        }
        for kind, values in sorted(service.items())
        if values
    }
    errors = [e for r in results for e in r["errors"]]
    report = {
        "workers": args.workers,
        "tasks": args.tasks,
        "delay": args.delay,
        "web_workers": args.web_workers,
        "celery_concurrency": args.celery_concurrency,
        "load_procs": args.load_procs,
        "think": args.think,
        "requests": rows,
        "service": service_rows,
        "submitted": sum(r["submitted"] for r in results),
        "errors": errors[:10],
        "error_count": len(errors),
        "outcome": counts,
        "endpoint": seen,
        "wall_s": round(wall, 1),
        "cpu_s": {k: round(v, 1) for k, v in cpu.items()},
        "loadavg": Path("/proc/loadavg").read_text().split()[:3],
    }
    for kind, row in rows.items():
        print(
            f"{kind:18s} n {row['n']:5d}  p50 {row['p50']:7.1f}  "
            f"p99 {row['p99']:7.1f}  max {row['max']:7.1f} ms"
        )
    print("in the gunicorn worker (access log, request start to response written):")
    for kind, row in service_rows.items():
        print(
            f"{kind:18s} n {row['n']:5d}  p50 {row['p50']:7.1f}  "
            f"p99 {row['p99']:7.1f}  max {row['max']:7.1f} ms"
        )
    hidden = ("requests", "service")
    print(json.dumps({k: v for k, v in report.items() if k not in hidden}, indent=1))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "fake":
        fake_serve(int(sys.argv[2]), float(sys.argv[3]))
    elif len(sys.argv) > 1 and sys.argv[1] == "load":
        load_run(json.loads(sys.argv[2]))
    else:
        main()
