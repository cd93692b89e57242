"""MTurk at scale against the local fake: publish under throttling, then sync.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/qaportal_mturk_bench \\
        .venv/bin/python bench/mturk_bench.py             # 1,000 HITs x 10 assignments
    .venv/bin/python bench/mturk_bench.py --quick         # 100 HITs x 10 assignments

Recreates the database named in ``DATABASE_URL`` (its name must contain "bench"),
migrates it, and starts ``tests/campaigns/platforms/fake_mturk.FakeMTurk`` (a real HTTP server
speaking MTurk's JSON 1.1 protocol; the real boto3 client talks to it).

1. Publish: an MTurk campaign whose stage has ``--hits`` items (one per HIT, 10
   assignments each) is published through the services and the operation executor,
   with ``--throttle`` (30 %) of the fake's answers ThrottlingException. Prints the
   time, the calls, the throttled answers, and checks the fake holds exactly one
   MTurk HIT per qaportal HIT (no duplicate).
2. Sync: every HIT gets 10 assignments submitted on MTurk and stored by "the
   page" (bulk-created ``Assignment`` rows). ``mturk_hits_sync`` then reads them
   all. Prints API calls against the strict minimum (pages of reviewable HITs +
   one assignment page per HIT), database queries per batch of 100 HITs, and
   assignments ingested per second (target ≥ 2,000/s). A second sync shows the
   idempotent pass (nothing written).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/qaportal_mturk_bench")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "qaportal.settings")
os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("CELERY_TASK_ALWAYS_EAGER", "0")
os.environ.setdefault("LOG_LEVEL", "WARNING")
os.environ.setdefault("SITE_URL", "https://qaportal.example.org")

PER_HIT = 10


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


def make_stage(hits: int):
    from decimal import Decimal

    from django.contrib.auth.models import User

    from campaigns.models import Campaign, CampaignState, Item, ItemSource, Stage

    owner = User.objects.create(username="bench")
    campaign = Campaign.objects.create(
        owner=owner,
        name="Bench",
        slug="bench",
        provider="mturk",
        state=CampaignState.LIVE,
        budget_cap=Decimal("1e7"),
    )
    stage = Stage.objects.create(
        campaign=campaign,
        name="Write questions",
        position=0,
        task_type="question_writing",
        config={"questions_per_hit": 1},
        reward=Decimal("0.50"),
        assignments_per_hit=PER_HIT,
        items_per_hit=1,
        qualification_requirements=[{"kind": "approval_rate", "min": 95}],
    )
    Item.objects.bulk_create(
        Item(
            stage=stage,
            external_id=f"cell-{n}",
            data={"topic": f"topic {n}", "complexity_type": "comparative"},
            source=ItemSource.UPLOADED,
        )
        for n in range(hits)
    )
    return stage


def publish(stage, fake, throttle: float) -> None:
    from campaigns.models import HIT, HITStatus, OperationState, ProviderOperation
    from campaigns.platforms.operations import operation_execute
    from campaigns.platforms.publishing import stage_provider_publish

    fake.rates = {"throttle": throttle}
    fake.state.calls.clear()
    started = time.perf_counter()
    op = stage_provider_publish(stage=stage)
    assert op is not None
    attempts = 0
    while True:
        attempts += 1
        done = operation_execute(operation_id=op.pk)
        assert done is not None
        if done.state != OperationState.PENDING:
            break
        ProviderOperation.objects.filter(pk=op.pk).update(next_attempt_at=None)
    elapsed = time.perf_counter() - started
    fake.rates = {}
    published = HIT.objects.filter(stage=stage, status=HITStatus.PUBLISHED).count()
    annotations = [h["RequesterAnnotation"] for h in fake.state.hits.values()]
    print(f"publish: {published} HITs in {elapsed:.1f} s ({published / elapsed:.0f} HITs/s)")
    print(
        f"  operation {done.state} after {attempts} executor attempt(s); "
        f"{sum(fake.state.calls.values())} calls, {fake.state.faulted['throttle']} throttled "
        f"({fake.state.faulted['throttle'] / max(1, sum(fake.state.calls.values())):.0%})"
    )
    print(
        f"  MTurk HITs: {len(fake.state.hits)}; duplicates: "
        f"{len(annotations) - len(set(annotations))}"
    )
    assert done.state == OperationState.DONE, done.last_error
    assert len(fake.state.hits) == published == len(set(annotations))


def submit_everything(stage, fake, workers: int) -> int:
    from django.utils import timezone

    from campaigns.models import HIT, Assignment, AssignmentStatus, Worker, worker_pseudonym
    from tests.campaigns.platforms.mturk_helpers import ANSWERS

    ids = [f"AWORKER{n:06d}" for n in range(workers)]
    Worker.objects.bulk_create(
        Worker(
            provider="mturk",
            external_id=w,
            pseudonym=worker_pseudonym(provider="mturk", external_id=w),
        )
        for w in ids
    )
    by_external = dict(Worker.objects.filter(provider="mturk").values_list("external_id", "pk"))
    now = timezone.now()
    rows = []
    for n, (pk, hit_id) in enumerate(
        HIT.objects.filter(stage=stage).order_by("pk").values_list("pk", "provider_hit_id")
    ):
        for slot in range(PER_HIT):
            worker = ids[(n * PER_HIT + slot) % workers]
            assignment_id = fake.submit_assignment(hit_id, worker, ANSWERS)
            rows.append(
                Assignment(
                    hit_id=pk,
                    worker_id=by_external[worker],
                    provider="mturk",
                    provider_assignment_id=assignment_id,
                    status=AssignmentStatus.SUBMITTED,
                    answers=ANSWERS,
                    accepted_at=now,
                    submitted_at=now,
                )
            )
    Assignment.objects.bulk_create(rows, batch_size=5000)
    return len(rows)


def sync(hits: int, assignments: int, fake) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from campaigns.models import Assignment
    from campaigns.platforms.mturk.sync import mturk_hits_sync

    for label in ("first sync", "second sync (nothing new)"):
        fake.state.calls.clear()
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            stats = mturk_hits_sync()
            elapsed = time.perf_counter() - started
        calls = sum(fake.state.calls.values())
        minimum = math.ceil(hits / 100) + hits * math.ceil(PER_HIT / 100)
        batches = math.ceil(hits / 100)
        print(
            f"{label}: {stats.assignments} assignments read in {elapsed:.2f} s "
            f"({stats.assignments / elapsed:,.0f}/s); {stats.changed} rows written"
        )
        print(f"  API calls {calls} (strict minimum {minimum}): {dict(fake.state.calls)}")
        print(f"  DB queries {len(queries)}: {len(queries) / batches:.1f} per batch of 100 HITs")
    confirmed = Assignment.objects.filter(review_details__identity__status="confirmed").count()
    print(f"  confirmed assignments: {confirmed} of {assignments}")
    assert confirmed == assignments


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hits", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2000)
    parser.add_argument("--throttle", type=float, default=0.3)
    parser.add_argument("--quick", action="store_true", help="100 HITs")
    args = parser.parse_args()
    hits = 100 if args.quick else args.hits

    recreate_database(os.environ["DATABASE_URL"])
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    from tests.campaigns.platforms.fake_mturk import FakeMTurk

    call_command("migrate", verbosity=0)
    with FakeMTurk() as fake:
        settings.MTURK_ACCESS_KEY_ID = FakeMTurk.ACCESS_KEY
        settings.MTURK_SECRET_ACCESS_KEY = FakeMTurk.SECRET_KEY
        settings.MTURK_ENDPOINT_URL = fake.url
        settings.MTURK_MAX_ATTEMPTS = 1
        settings.MTURK_RETRY_MODE = "standard"  # adaptive would pace the client for real
        settings.MTURK_BACKOFF_BASE = 0.001
        settings.MTURK_RETRIES = 8
        stage = make_stage(hits)
        publish(stage, fake, args.throttle)
        assignments = submit_everything(stage, fake, args.workers)
        sync(hits, assignments, fake)


if __name__ == "__main__":
    main()
