"""Costs summary, workers table and ledger page over a large campaign: time and queries.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/qaportal_money_bench \\
        .venv/bin/python bench/money_workers_bench.py            # 1,000,000 assignments
    .venv/bin/python bench/money_workers_bench.py --quick        # 20,000 assignments

Recreates the database named in ``DATABASE_URL`` (default above), migrates it and
writes with ``bulk_create`` an MTurk campaign of three stages (one item per HIT,
3 assignments per HIT) whose assignments are spread over ``--workers`` workers
(85 % approved with reward and fee in the ledger as paid, 5 % rejected, 10 %
submitted; work times and page telemetry with pastes on 1 in 7), plus a bonus
per 20 approvals. Then times, with the number of queries, what the Costs and
Workers pages and API run: ``campaign_costs``, ``campaign_worker_table`` (which
includes ``validation.selectors.stage_quality`` per stage: once computed, once from
the cache), and the first API page of the ledger. Each measured twice after
``VACUUM ANALYZE``; the better is shown. ``--reuse`` measures an earlier build again.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/qaportal_money_bench")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "qaportal.settings")
os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("CELERY_TASK_ALWAYS_EAGER", "1")
os.environ.setdefault("LOG_LEVEL", "WARNING")

BATCH = 5000


def recreate_database(url: str) -> None:
    import psycopg2

    parsed = urlparse(url)
    name = parsed.path.lstrip("/")
    if "bench" not in name:
        raise SystemExit(f"Refusing to recreate {name!r}: the name must contain 'bench'.")
    admin = psycopg2.connect(
        host=parsed.hostname, port=parsed.port or 5432, user=parsed.username, dbname="postgres"
    )
    admin.autocommit = True
    with admin.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}"')
        cursor.execute(f'CREATE DATABASE "{name}"')
    admin.close()


def build(assignments: int, workers: int) -> str:
    from django.contrib.auth.models import User
    from django.utils import timezone

    from campaigns.models import (
        HIT,
        Assignment,
        Campaign,
        HITItem,
        Item,
        LedgerEntry,
        Stage,
        Worker,
    )

    owner = User.objects.create(username="bench")
    campaign = Campaign.objects.create(
        owner=owner, name="Bench", slug="bench", provider="mturk", budget_cap=Decimal("1e7")
    )
    stages = [
        Stage.objects.create(
            campaign=campaign,
            name=f"stage {n}",
            position=n,
            task_type="question_writing",
            reward=Decimal("0.50"),
            assignments_per_hit=3,
        )
        for n in range(3)
    ]
    people = Worker.objects.bulk_create(
        [
            Worker(provider="mturk", external_id=f"A{n:012d}", pseudonym=f"w_{n:016x}")
            for n in range(workers)
        ],
        batch_size=BATCH,
    )
    now = timezone.now()
    hits_total = assignments // 3
    per_stage = hits_total // len(stages)
    n = 0
    for stage in stages:
        for start in range(0, per_stage, BATCH):
            count = min(BATCH, per_stage - start)
            items = Item.objects.bulk_create(
                [
                    Item(stage=stage, external_id=f"{stage.pk}-{start + i}", data={})
                    for i in range(count)
                ]
            )
            hits = HIT.objects.bulk_create(
                [
                    HIT(
                        stage=stage,
                        provider="mturk",
                        provider_hit_id=f"H{stage.pk}-{start + i}",
                        max_assignments=3,
                        places_left=0,
                        reward=Decimal("0.50"),
                        status="completed",
                    )
                    for i in range(count)
                ]
            )
            HITItem.objects.bulk_create(
                [HITItem(hit=h, item=it) for h, it in zip(hits, items, strict=True)]
            )
            rows = []
            for hit in hits:
                for k in range(3):
                    n += 1
                    status = (
                        "approved" if n % 20 < 17 else ("rejected" if n % 20 == 17 else "submitted")
                    )
                    seconds = 60 + (n * 7919) % 600
                    rows.append(
                        Assignment(
                            hit=hit,
                            worker=people[(n + k) % workers],
                            provider="mturk",
                            provider_assignment_id=f"A{n}",
                            status=status,
                            accepted_at=now - timedelta(seconds=seconds),
                            submitted_at=now,
                            work_seconds=seconds,
                            telemetry={"paste_count": 1 if n % 7 == 0 else 0},
                        )
                    )
            made = Assignment.objects.bulk_create(rows)
            ledger = []
            for a in made:
                if a.status != "approved":
                    continue
                for kind, amount in (("reward", "0.50"), ("platform_fee", "0.10")):
                    ledger.append(
                        LedgerEntry(
                            campaign=campaign,
                            stage=stage,
                            kind=kind,
                            status="paid",
                            amount=Decimal(amount),
                            key=f"{kind}:assignment:{a.pk}",
                            assignment=a,
                            worker=a.worker,
                        )
                    )
                if a.pk % 20 == 0:
                    ledger.append(
                        LedgerEntry(
                            campaign=campaign,
                            stage=stage,
                            kind="bonus",
                            status="committed",
                            amount=Decimal("0.25"),
                            key=f"bonus:{a.pk}",
                            assignment=a,
                            worker=a.worker,
                        )
                    )
            LedgerEntry.objects.bulk_create(ledger, batch_size=BATCH)
    return campaign.slug


def measure(label: str, fn: Callable[[], object]) -> None:
    from django.db import connection, reset_queries

    best = float("inf")
    queries = 0
    result: object = None
    for _ in range(2):
        reset_queries()
        started = time.perf_counter()
        result = fn()
        elapsed = time.perf_counter() - started
        queries = len(connection.queries)
        best = min(best, elapsed)
    print(f"{label}: {best * 1000:.0f} ms, {queries} queries ({result})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assignments", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=5000)
    parser.add_argument("--quick", action="store_true", help="20,000 assignments, 500 workers")
    parser.add_argument(
        "--reuse", action="store_true", help="measure the campaign an earlier run built"
    )
    args = parser.parse_args()
    if args.quick:
        args.assignments, args.workers = 20_000, 500
    if not args.reuse:
        recreate_database(os.environ["DATABASE_URL"])

    import django
    from django.core.management import call_command
    from django.db import connection

    django.setup()
    call_command("migrate", verbosity=0)
    slug = "bench"
    if not args.reuse:
        started = time.perf_counter()
        slug = build(args.assignments, args.workers)
        print(
            f"built {args.assignments:,} assignments, {args.workers:,} workers in "
            f"{time.perf_counter() - started:.1f} s"
        )
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")

    from rest_framework.test import APIClient

    from campaigns.insights.money import campaign_costs
    from campaigns.insights.workers import campaign_worker_table
    from campaigns.models import Campaign

    campaign = Campaign.objects.get(slug=slug)
    measure("campaign_costs", lambda: f"spent {campaign_costs(campaign=campaign).spent}")
    from django.core.cache.backends.dummy import DummyCache

    from campaigns.insights import workers as selectors_workers

    def cold_table() -> str:
        # A cache that keeps nothing: every stage's quality numbers are computed.
        shared, selectors_workers.cache = selectors_workers.cache, DummyCache("cold", {})
        try:
            return f"{len(campaign_worker_table(campaign=campaign))} rows"
        finally:
            selectors_workers.cache = shared

    measure("campaign_worker_table, stage quality computed", cold_table)
    measure(
        "campaign_worker_table, stage quality cached",
        lambda: f"{len(campaign_worker_table(campaign=campaign))} rows",
    )
    client = APIClient()
    client.force_authenticate(campaign.owner)
    measure(
        "GET ledger/ first page",
        lambda: client.get(f"/api/v1/campaigns/{slug}/ledger/", HTTP_HOST="127.0.0.1").status_code,
    )


if __name__ == "__main__":
    main()
