"""Model calls against a fake endpoint answering in 500 ms (issue 38, items 1 and 6).

    .venv/bin/python bench/model_calls_bench.py                  # 200 calls, 50 threads
    .venv/bin/python bench/model_calls_bench.py --calls 500 --concurrency 8

Recreates the database ``qaportal_llm_bench`` (``DATABASE_URL`` to change it), migrates
it, and makes one campaign, stage and items, and an endpoint on the in-process fake
(``tests/campaigns/assist/fake_openai.py``) that answers every request after 500 ms.

1. What a page pays: ``model_call_request`` in the page's transaction (the call row and
   its outbox message; the model is asked after the commit, never in the request), p50
   and p99 over ``--calls`` requests.
2. What the workers do: ``--threads`` threads (the Celery workers) run
   ``model_call_run`` on every call, re-running those the concurrency limit held back,
   until all are done. Reports wall and process CPU time, the fake's peak of requests
   at once (must not pass the endpoint's ``concurrency``), and that every call has
   exactly one ledger entry.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchdb import cpu_seconds, database_recreate

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/qaportal_llm_bench")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "qaportal.settings")
os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("CELERY_TASK_ALWAYS_EAGER", "1")
os.environ.setdefault("LOG_LEVEL", "WARNING")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--threads", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--delay", type=float, default=0.5)
    args = parser.parse_args()

    database_recreate()
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection, transaction

    call_command("migrate", verbosity=0)
    from django.contrib.auth import get_user_model

    from campaigns.assist.calls import model_call_request, model_call_run
    from campaigns.assist.endpoints import model_endpoint_create
    from campaigns.models import (
        Campaign,
        Item,
        ItemSource,
        LedgerEntry,
        LedgerKind,
        ModelCall,
        ModelCallStatus,
        Stage,
    )
    from tests.campaigns.assist.fake_openai import FakeOpenAI

    owner = get_user_model().objects.create_user(username="bench", password="x")
    campaign = Campaign.objects.create(owner=owner, name="bench", slug="bench")
    stage = Stage.objects.create(campaign=campaign, name="write", task_type="question_writing")
    items = Item.objects.bulk_create(
        Item(stage=stage, external_id=f"i{n}", data={}, source=ItemSource.UPLOADED)
        for n in range(args.calls)
    )
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
        # 1. The page's side: the row and its outbox message, in the page's transaction.
        # (The eager run at commit is left out: with a broker the commit only sends it.)
        page_ms = []
        ids = []
        for item in items:
            with transaction.atomic():
                started = time.perf_counter()
                call = model_call_request(
                    endpoint_id=endpoint.pk,
                    purpose="adversarial",
                    item_id=item.pk,
                    question="Why did the empire fall?",
                    context="The empire fell because of the plague. Trade had stopped.",
                )
                page_ms.append((time.perf_counter() - started) * 1000)
                ids.append(call.pk)
                transaction.set_rollback(False)
                connection.run_on_commit = []  # measured above; the runs come next
        page_ms.sort()
        p99 = page_ms[min(len(page_ms) - 1, int(len(page_ms) * 0.99))]

        # 2. The workers' side.
        def work(call_id: int) -> int:
            runs = 0
            try:
                while True:
                    runs += 1
                    call = model_call_run(call_id=call_id)
                    if call is None or call.status in (
                        ModelCallStatus.DONE,
                        ModelCallStatus.UNAVAILABLE,
                    ):
                        return runs
                    time.sleep(0.05)
            finally:
                connection.close()

        cpu0, wall0 = cpu_seconds(), time.perf_counter()
        with ThreadPoolExecutor(max_workers=args.threads) as pool:
            runs = list(pool.map(work, ids))
        wall, cpu = time.perf_counter() - wall0, cpu_seconds() - cpu0
        peak = fake.peak_active
        asked = len(fake.calls)
    done = ModelCall.objects.filter(status=ModelCallStatus.DONE).count()
    entries = LedgerEntry.objects.filter(kind=LedgerKind.MODEL_USAGE).count()
    print(f"calls {args.calls}, threads {args.threads}, endpoint concurrency {args.concurrency}")
    print(
        f"page side: model_call_request p50 {statistics.median(page_ms):.2f} ms, p99 {p99:.2f} ms"
    )
    print(
        f"workers: {wall:.1f} s wall, {cpu:.1f} s CPU (this process), "
        f"ideal {args.calls * args.delay / args.concurrency:.1f} s; runs {sum(runs)} "
        f"(held back {sum(runs) - len(runs)}); endpoint asked {asked} times"
    )
    print(f"fake's peak of requests at once: {peak} (limit {args.concurrency})")
    print(f"done {done}/{args.calls}; model_usage ledger entries {entries}")
    print("load average:", Path("/proc/loadavg").read_text().split()[:3])


if __name__ == "__main__":
    main()
