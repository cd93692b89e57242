"""Review rules over a 100,000-assignment stage: time and queries per batch.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/qaportal_rules_bench \\
        .venv/bin/python bench/review_rules_bench.py              # 20,000 HITs x 5
    .venv/bin/python bench/review_rules_bench.py --hits 2000      # smaller

Recreates the database named in ``DATABASE_URL`` (default above), migrates it,
and makes a local WhyQA answering stage (``sentence_selection_answer``, one item
per HIT, 5 assignments per HIT, 10 % gold items) whose rows are written with
``bulk_create``: items, HITs, 1,000 workers, and the submitted assignments
(good workers pick near the right sentences, spammers say "no answer" or pick
at random, some comments copied). All eight deciding rules plus the gold actions
run through ``validation.services.stage_review``. Prints the wall time of the
run and the queries per batch, measured as the difference between two runs with
different batch sizes (statuses reset, then ``VACUUM ANALYZE`` as autovacuum
would, in between). Target (issue 7): under 30 s,
a constant number of queries per batch.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/qaportal_rules_bench")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "qaportal.settings")
os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("CELERY_TASK_ALWAYS_EAGER", "1")
os.environ.setdefault("LOG_LEVEL", "WARNING")

RULES = [
    {"rule": "gold_accuracy", "min": 0.5, "min_gold": 3},
    {"rule": "consensus", "min": 0.5},
    {"rule": "peer_overlap", "metric": "sentences", "min": 0.2},
    {"rule": "work_time", "min_seconds": 10},
    {"rule": "paste_share", "max": 0.5, "fields": ["comment"]},
    {"rule": "duplicates", "threshold": 0.8, "fields": ["comment"]},
    {"rule": "no_answer_rate", "max": 0.6, "min_answers": 5},
    {"rule": "gold_disqualify", "min": 0.5, "min_gold": 4, "block": True},
]
BONUS = [{"rule": "gold_bonus", "amount": "0.10"}]
PROFILE = False
WORDS = [
    "river",
    "empire",
    "trade",
    "plague",
    "harvest",
    "winter",
    "war",
    "bridge",
    "salt",
    "copper",
    "grain",
    "fleet",
]


def recreate_database(url: str) -> None:
    import psycopg2

    parsed = urlparse(url)
    name = parsed.path.lstrip("/")
    admin = psycopg2.connect(
        host=parsed.hostname, port=parsed.port or 5432, user=parsed.username, dbname="postgres"
    )
    admin.autocommit = True
    with admin.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}"')
        cursor.execute(f'CREATE DATABASE "{name}"')
    admin.close()


def build(hits: int, per_hit: int, workers: int, seed: int) -> int:
    from django.utils import timezone

    from campaigns.models import (
        HIT,
        Assignment,
        Campaign,
        HITItem,
        HITStatus,
        Item,
        ItemSource,
        ItemStatus,
        Provider,
        Stage,
        Worker,
        worker_pseudonym,
    )
    from tests.factories import UserFactory

    rng = random.Random(seed)
    owner = UserFactory.create(username="bench-owner")
    campaign = Campaign.objects.create(
        slug="bench-rules", name="Bench", owner=owner, provider=Provider.LOCAL, state="live"
    )
    stage = Stage.objects.create(
        campaign=campaign,
        name="Answer",
        task_type="sentence_selection_answer",
        assignments_per_hit=per_hit,
        reward=Decimal("0.10"),
        gold_ratio=Decimal("0.1"),
        review_rules=RULES,
        bonus_rules=BONUS,
    )
    truth = [sorted(rng.sample(range(8), rng.randint(1, 2))) for _ in range(hits)]
    items = Item.objects.bulk_create(
        [
            Item(
                stage=stage,
                external_id=f"q{n}",
                data={"question": f"Why {n}?", "sentences": [f"S{j}." for j in range(8)]},
                gold={"sentences": truth[n]} if n % 10 == 0 else None,
                source=ItemSource.UPLOADED,
                status=ItemStatus.PUBLISHED,
            )
            for n in range(hits)
        ],
        batch_size=5000,
    )
    now = timezone.now()
    hit_rows = HIT.objects.bulk_create(
        [
            HIT(
                stage=stage,
                provider=Provider.LOCAL,
                provider_hit_id=f"local-b{n}",
                max_assignments=per_hit,
                places_left=0,
                reward=stage.reward,
                status=HITStatus.PUBLISHED,
                published_at=now,
            )
            for n in range(hits)
        ],
        batch_size=5000,
    )
    HITItem.objects.bulk_create(
        [HITItem(hit=h, item=i, position=0) for h, i in zip(hit_rows, items, strict=True)],
        batch_size=5000,
    )
    people = Worker.objects.bulk_create(
        [
            Worker(
                provider=Provider.LOCAL,
                external_id=f"b{n}",
                pseudonym=worker_pseudonym(provider=Provider.LOCAL, external_id=f"b{n}"),
            )
            for n in range(workers)
        ]
    )
    spam = {w.pk for w in people[: workers // 10]}
    comments = [" ".join(rng.sample(WORDS, 6)) for _ in range(200)]
    rows: list[Assignment] = []
    for n, (hit, item_truth) in enumerate(zip(hit_rows, truth, strict=True)):
        for who in rng.sample(people, per_hit):
            if who.pk in spam:
                no = rng.random() < 0.7
                chosen = [] if no else sorted(rng.sample(range(8), 2))
            else:
                no = rng.random() < 0.05
                chosen = [] if no else item_truth[: rng.randint(1, len(item_truth))]
            comment = rng.choice(comments) if rng.random() < 0.3 else ""
            seconds = rng.randint(3, 15) if who.pk in spam else rng.randint(20, 200)
            pasted = len(comment) if comment and who.pk in spam else 0
            rows.append(
                Assignment(
                    hit=hit,
                    worker=who,
                    provider=Provider.LOCAL,
                    status="submitted",
                    answers={
                        "items": [
                            {
                                "external_id": f"q{n}",
                                "sentences": chosen,
                                "no_answer": no,
                                "comment": comment,
                            }
                        ]
                    },
                    accepted_at=now - timedelta(seconds=seconds),
                    submitted_at=now + timedelta(microseconds=len(rows)),
                    work_seconds=seconds,
                    telemetry={"pastes": [{"field": "comment", "length": pasted}]}
                    if pasted
                    else {},
                )
            )
    Assignment.objects.bulk_create(rows, batch_size=5000)
    return stage.pk


def vacuum() -> None:
    """What autovacuum does for a live table: fresh statistics, dead rows gone."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")


def fingerprint(stage_id: int) -> str:
    """A digest of every decision written (status, source, reason, review details without
    their time stamps) and of the worker counters, blocks and ledger: equal digests,
    equal results."""
    import hashlib
    import json

    from campaigns.models import Assignment, LedgerEntry, Worker, WorkerBlock

    digest = hashlib.sha256()
    rows = Assignment.objects.filter(hit__stage_id=stage_id).order_by("pk")
    for row in rows.values_list(
        "pk", "status", "decision_source", "decision_reason", "feedback", "review_details"
    ).iterator(chunk_size=5000):
        details = dict(row[5] or {})
        if "review" in details:
            details["review"] = {k: v for k, v in details["review"].items() if k != "at"}
        digest.update(json.dumps([*row[:5], details], sort_keys=True, default=str).encode())
    for model, fields in (
        (Worker, ("pk", "approved_count", "rejected_count")),
        (WorkerBlock, ("worker_id", "reason")),
        (LedgerEntry, ("worker_id", "kind", "amount")),
    ):
        for row in model.objects.order_by(*fields).values_list(*fields):
            digest.update(json.dumps([model.__name__, *row], default=str).encode())
    return digest.hexdigest()[:16]


def backend_cpu() -> float | None:
    """CPU seconds used so far by this connection's PostgreSQL backend (user + system),
    read from /proc when the server runs on this machine; None otherwise."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def writer_counted() -> dict[str, float]:
    """Count what ``stage_review``'s writer thread does on its own connection (its
    queries and its PostgreSQL backend's CPU), which the main thread's
    ``CaptureQueriesContext`` and backend do not see."""
    import threading

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from validation import review_batches as batches

    counts = {"queries": 0.0, "backend_cpu": 0.0}
    lock = threading.Lock()  # the writer threads count at once
    apply = getattr(batches._batch_apply, "__wrapped__", batches._batch_apply)
    session = getattr(batches._writer_session, "__wrapped__", batches._writer_session)
    close = getattr(batches._connection_close, "__wrapped__", batches._connection_close)

    def counted_apply(**kwargs: Any) -> None:
        if threading.current_thread() is threading.main_thread():
            apply(**kwargs)  # counted by the caller's context
            return
        with CaptureQueriesContext(connection) as ctx:
            apply(**kwargs)
        with lock:
            counts["queries"] += len(ctx.captured_queries)

    def counted_session() -> None:
        with CaptureQueriesContext(connection) as ctx:
            session()
        with lock:
            counts["queries"] += len(ctx.captured_queries)

    def counted_close() -> None:
        if connection.connection is not None:
            used = backend_cpu() or 0.0
            with lock:
                counts["backend_cpu"] += used
        close()

    counted_apply.__wrapped__ = apply  # type: ignore[attr-defined]
    counted_session.__wrapped__ = session  # type: ignore[attr-defined]
    counted_close.__wrapped__ = close  # type: ignore[attr-defined]
    batches._batch_apply = counted_apply
    batches._writer_session = counted_session
    batches._connection_close = counted_close
    return counts


def run(stage_id: int, batch_size: int) -> tuple[float, int, int, dict]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from campaigns.models import Assignment, LedgerEntry, Stage, Worker, WorkerBlock
    from validation.services import stage_review

    Assignment.objects.filter(hit__stage_id=stage_id).update(
        status="submitted", review_details={}, decision_source="", decision_reason=""
    )
    Worker.objects.update(approved_count=0, rejected_count=0)
    LedgerEntry.objects.all().delete()
    WorkerBlock.objects.all().delete()
    vacuum()
    stage = Stage.objects.get(pk=stage_id)
    profiler = None
    if PROFILE:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    writer = writer_counted()
    pg_before = backend_cpu()
    with CaptureQueriesContext(connection) as ctx:
        started, cpu = time.perf_counter(), time.process_time()
        summary = stage_review(stage=stage, batch_size=batch_size)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    pg_after = backend_cpu()
    pg = (
        f"{pg_after - pg_before + writer['backend_cpu']:.1f} s"
        if pg_before is not None and pg_after
        else "n/a"
    )
    queries = len(ctx.captured_queries) + int(writer["queries"])
    if profiler is not None:
        import pstats

        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(45)
    digest = fingerprint(stage_id)
    print(
        f"  batch {batch_size}: {cpu:.1f} s CPU in this process, {pg} in its PostgreSQL "
        f"backend; load average {os.getloadavg()[0]:.1f}; fingerprint {digest}"
    )
    return (
        seconds,
        queries,
        summary.batches,
        {
            "decisions": dict(summary.decisions),
            "worker_actions": dict(summary.worker_actions),
        },
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hits", type=int, default=20_000)
    parser.add_argument("--per-hit", type=int, default=5)
    parser.add_argument("--workers", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", action="store_true", help="cProfile of each run")
    parser.add_argument(
        "--reuse", action="store_true", help="measure an earlier build again (no rebuild)"
    )
    args = parser.parse_args()
    global PROFILE
    PROFILE = args.profile
    if not args.reuse:
        recreate_database(os.environ["DATABASE_URL"])

    import django
    from django.core.management import call_command

    django.setup()
    if args.reuse:
        from campaigns.models import Assignment, Stage

        stage_id = Stage.objects.get(campaign__slug="bench-rules").pk
        total = Assignment.objects.filter(hit__stage_id=stage_id).count()
        print(f"reusing the build of {total:,} assignments")
    else:
        call_command("migrate", verbosity=0)
        started = time.perf_counter()
        stage_id = build(args.hits, args.per_hit, args.workers, args.seed)
        total = args.hits * args.per_hit
        print(f"built {total:,} submitted assignments in {time.perf_counter() - started:.1f} s")
    s1, q1, b1, result = run(stage_id, 1000)
    print(f"stage_review, batch 1000: {s1:.1f} s, {q1} queries, {b1} batches")
    print(f"  {result}")
    s2, q2, b2, _ = run(stage_id, 2000)
    print(f"stage_review, batch 2000: {s2:.1f} s, {q2} queries, {b2} batches")
    per_batch = (q1 - q2) / (b1 - b2) if b1 != b2 else float("nan")
    print(f"queries per batch: {per_batch:g}; outside the batches: {q1 - per_batch * b1:g}")
    print(
        f"summary: {total:,} assignments, stage_review {s1:.1f} s (batch 1000) / {s2:.1f} s "
        f"(batch 2000), {per_batch:g} queries per batch; target (issue 24) <= 10 s: "
        f"{'ok' if max(s1, s2) <= 10 else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
