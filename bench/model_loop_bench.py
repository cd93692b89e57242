"""Adversarial writing with a model in the loop: 50 simulated workers against a fake
endpoint answering in 500 ms (issue 38, performance).

    .venv/bin/python bench/model_loop_bench.py                 # 50 workers, 4 tasks each
    .venv/bin/python bench/model_loop_bench.py --workers 20 --tasks 2

Recreates the database ``qaportal_adv_bench`` (``DATABASE_URL`` to change it), migrates
it, and makes one local campaign with two stages of ``adversarial_passage_question``
over the same passages: one plain, one with ``adversarial`` pointing at an endpoint on
the in-process fake (``tests/campaigns/assist/fake_openai.py``), which answers every
request after ``--delay`` seconds (0.5).

Celery is not eager here (``CELERY_BROKER_URL=memory://``): a commit only sends the
model call's message, as in production. ``--celery`` threads stand in for the Celery
workers: they run the calls that are pending (``model_call_run``) as they appear.

Each simulated worker (a thread with its own session, through Django's test client, in
this process) joins by an invite link and does ``--tasks`` tasks on each stage:

- without the model: accept, the work page, submit;
- with the model: accept, the work page, "Ask the model" (the try), then the work page
  again every 0.5 s while it says the model is answering (the poll), until it shows
  the answer; submit.

Reported: p50 / p99 / max of the worker-page requests of each stage (none may wait on
the model), the number of polls, wall and process CPU time, the load average, and that
every try has exactly one model call, done, with one ``model_usage`` ledger entry.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchdb import cpu_seconds, database_recreate

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/qaportal_adv_bench")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "qaportal.settings")
os.environ.setdefault("DEBUG", "1")
os.environ["CELERY_BROKER_URL"] = "memory://"
os.environ["CELERY_TASK_ALWAYS_EAGER"] = "0"
os.environ.setdefault("LOG_LEVEL", "WARNING")

SENTENCES = [
    "The Amazon river flows through Brazil.",
    "Its basin covers seven million square kilometres.",
    "Francisco de Orellana sailed it in 1542.",
    "Many tributaries join it from the Andes.",
]
_ASSIGNMENT = re.compile(r"/work/a/(\d+)/$")


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=50)
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--delay", type=float, default=0.5)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--celery", type=int, default=8)
    args = parser.parse_args()

    database_recreate()
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client

    call_command("migrate", verbosity=0)
    settings.ALLOWED_HOSTS = ["*"]
    from datetime import timedelta

    from django.contrib.auth import get_user_model

    from campaigns.assist.calls import model_call_run
    from campaigns.assist.endpoints import model_endpoint_create
    from campaigns.design.services import campaign_create, stage_add
    from campaigns.models import (
        AdversarialTry,
        Item,
        ItemSource,
        LedgerEntry,
        LedgerKind,
        ModelCall,
        ModelCallStatus,
    )
    from campaigns.platforms.publishing import campaign_start
    from campaigns.work.invites import invite_create, invite_token
    from tests.campaigns.assist.fake_openai import FakeOpenAI

    owner = get_user_model().objects.create_user(username="bench", password="x")
    n_items = args.workers * args.tasks
    with FakeOpenAI(delay=args.delay) as fake:
        endpoint = model_endpoint_create(
            owner=owner,
            values={
                "name": "fake",
                "kind": "openai",
                "base_url": fake.base_url,
                "model": "fake-model-7b",
                "timeout_seconds": "5",
                "concurrency": args.concurrency,
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
                for n in range(n_items)
            )
        campaign = campaign_start(campaign=campaign, to_state="pilot")
        invite = invite_create(
            campaign=campaign, created_by=owner, expires_in=timedelta(days=1), max_uses=None
        )
        token = invite_token(invite=invite)
        lock = threading.Lock()
        kinds = ("accept", "page", "submit")
        timings: dict[str, list[float]] = {
            **{f"{k} {s}": [] for k in kinds for s in ("plain", "loop")},
            "try loop": [],
            "mark loop": [],
            "poll loop": [],
        }
        polls = [0]
        refused: list[str] = []
        stop = threading.Event()

        def timed(kind: str, call, *a, **kw):
            started = time.perf_counter()
            response = call(*a, **kw)
            ms = (time.perf_counter() - started) * 1000
            with lock:
                timings[kind].append(ms)
            return response

        form = {"items/0/question": "Who sailed the Amazon river?", "items/0/sentences": "2"}

        def worker(n: int) -> int:
            client = Client(HTTP_HOST="localhost")
            done = 0
            try:
                client.post(f"/work/i/{token}/")
                for stage, kind in ((plain, "plain"), (loop, "loop")):
                    for _ in range(args.tasks):
                        r = timed(f"accept {kind}", client.post, f"/work/s/{stage.pk}/accept/")
                        found = _ASSIGNMENT.search(r.get("Location", ""))
                        if not found:
                            break
                        page = f"/work/a/{found.group(1)}/"
                        timed(f"page {kind}", client.get, page)
                        if kind == "loop":
                            r = timed("try loop", client.post, f"{page}try/", form)
                            if r.status_code != 302:
                                found_error = re.search(rb'role="alert"[^>]*>(.*?)<', r.content)
                                with lock:
                                    refused.append(
                                        (found_error.group(1) if found_error else b"?").decode()
                                    )
                            while True:
                                r = timed("poll loop", client.get, page)
                                with lock:
                                    polls[0] += 1
                                if b"data-adv-poll" not in r.content:
                                    break
                                time.sleep(0.5)
                            if b"/mark/" in r.content:
                                timed(
                                    "mark loop",
                                    client.post,
                                    f"{page}try/1/mark/",
                                    {"model_right": "no"},
                                )
                        r = timed(f"submit {kind}", client.post, page, form)
                        done += r.status_code == 302
            finally:
                connection.close()
            return done

        def celery() -> None:
            try:
                while not stop.is_set():
                    pending = list(
                        ModelCall.objects.filter(status=ModelCallStatus.PENDING).values_list(
                            "pk", flat=True
                        )[:4]
                    )
                    if not pending:
                        time.sleep(0.05)
                        continue
                    for call_id in pending:
                        model_call_run(call_id=call_id)
            finally:
                connection.close()

        cpu0, wall0 = cpu_seconds(), time.perf_counter()
        celery_threads = [threading.Thread(target=celery) for _ in range(args.celery)]
        for t in celery_threads:
            t.start()
        with ThreadPoolExecutor(max_workers=args.workers) as pool:
            submitted = sum(pool.map(worker, range(args.workers)))
        stop.set()
        for t in celery_threads:
            t.join()
        wall, cpu = time.perf_counter() - wall0, cpu_seconds() - cpu0
        asked = len(fake.calls)
    tries = AdversarialTry.objects.count()
    calls = ModelCall.objects.count()
    done = ModelCall.objects.filter(status=ModelCallStatus.DONE).count()
    entries = LedgerEntry.objects.filter(kind=LedgerKind.MODEL_USAGE).count()
    print(f"workers {args.workers} x {args.tasks} tasks per stage; fake delay {args.delay} s")
    everything = {
        "all plain": [v for k, vs in timings.items() if k.endswith("plain") for v in vs],
        "all loop": [v for k, vs in timings.items() if k.endswith("loop") for v in vs],
    }
    for kind, values in {**timings, **everything}.items():
        values = values or [0.0]
        print(
            f"{kind:12s}: {len(values)} requests, p50 {statistics.median(values):.1f} ms, "
            f"p99 {_pct(values, 0.99):.1f} ms, max {max(values):.1f} ms"
        )
    print(f"submitted {submitted}; polls {polls[0]}; tries refused {len(refused)} {refused[:3]}")
    print(f"tries {tries}, model calls {calls} (done {done}), endpoint asked {asked} times")
    print(f"model_usage ledger entries {entries}")
    print(f"wall {wall:.1f} s, CPU {cpu:.1f} s (this process)")
    print("load average:", Path("/proc/loadavg").read_text().split()[:3])


if __name__ == "__main__":
    main()
