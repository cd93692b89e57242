"""Mintaka at the paper's scale on Prolific, against the fake held to Prolific's schema:
how many studies, and how many requests of each operation, the publication side takes.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/qaportal_prolific_bench \\
        .venv/bin/python bench/prolific_mintaka_bench.py [--batch-places 50]

Recreates the database named in ``DATABASE_URL`` (its name must contain "bench"),
migrates it, starts ``tests/campaigns/platforms/fake_prolific.FakeProlific`` (every
request validated against ``reference/openapi.yml``), then:

1. loads the Mintaka recipe for Prolific at the paper's scale (80 writing items of 50
   places: 20,000 questions) and takes the campaign to pilot: the writing study;
2. feeds the two linking stages the way hand-offs do, in batches of
   ``--batch-places`` places (``PAID_HANDOFF_BATCH_PLACES``): 16,000 answers to link
   (4 per writing assignment, as the recipe expects; 2 annotators each) and 20,000
   questions (1 annotator each for seen questions, the recipe's floor), publishing each
   batch as hand-offs do; between batches Prolific finishes the study now and then
   (every ``--finish-every`` batches), as it does when every place is taken;
3. prints the studies per stage, the requests per operationId, and any refusal.

Submissions, their sync, approvals and bonuses are not driven here (they scale with
the participants, not with the studies); docs/providers.md gives their cost per call.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/qaportal_prolific_bench")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "qaportal.settings")
os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("CELERY_TASK_ALWAYS_EAGER", "0")
os.environ.setdefault("LOG_LEVEL", "WARNING")
os.environ.setdefault("SITE_URL", "https://qaportal.example.org")


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch-places", type=int, default=50)
    parser.add_argument("--finish-every", type=int, default=10)
    args = parser.parse_args()
    recreate_database(os.environ["DATABASE_URL"])

    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    call_command("migrate", verbosity=0)

    from campaigns.models import CampaignState, Item, ItemSource, OperationState
    from campaigns.models import ProviderOperation as Op
    from campaigns.platforms.operations import operation_execute
    from campaigns.platforms.prolific.studies import prolific_stage_publish
    from campaigns.platforms.publishing import campaign_start
    from campaigns.recipes.base import PAPER
    from campaigns.recipes.services import campaign_create_with_recipe
    from tests.campaigns.platforms.fake_prolific import FakeProlific

    def run_operations() -> None:
        while True:
            pending = list(
                Op.objects.filter(state=OperationState.PENDING).values_list("pk", flat=True)
            )
            if not pending:
                return
            for pk in pending:
                op = operation_execute(operation_id=pk)
                if op is not None and op.state == OperationState.FAILED:
                    raise SystemExit(f"operation {pk} failed: {op.last_error}")

    with FakeProlific(token="bench-token") as fake:
        settings.PROLIFIC_API_TOKEN = "bench-token"
        settings.PROLIFIC_API_URL = fake.url
        settings.PROLIFIC_WORKSPACE_ID = "bench-workspace"
        settings.PROLIFIC_BACKOFF_BASE = 0.01
        owner = get_user_model().objects.create_user("bench", password="x")
        started = time.perf_counter()
        campaign = campaign_create_with_recipe(
            owner=owner,
            name="Mintaka, paper scale",
            slug="mintaka-paper",
            provider="prolific",
            recipe="mintaka",
            scale=PAPER,
            usd_rate="0.80",
        )
        _write, link_answers, link_questions, *_ = campaign.stages.order_by("position")
        campaign = campaign_start(campaign=campaign, to_state=CampaignState.PILOT)
        run_operations()

        def feed(stage, *, items: int, places_per_item: int, kind: str) -> int:
            per_batch = max(1, args.batch_places // places_per_item)
            batches = 0
            made = 0
            while made < items:
                n = min(per_batch, items - made)
                Item.objects.bulk_create(
                    Item(
                        stage=stage,
                        external_id=f"{kind}-{made + k}",
                        data={
                            "question": f"Question {made + k}?",
                            "answer": f"Answer {made + k}",
                            "answer_type": "entity",
                        },
                        source=ItemSource.UPLOADED,
                    )
                    for k in range(n)
                )
                made += n
                prolific_stage_publish(stage=stage)
                run_operations()
                batches += 1
                if batches % args.finish_every == 0:
                    for study in fake.state.studies.values():  # every place taken
                        if study["status"] == "ACTIVE":
                            study["status"] = "AWAITING REVIEW"
            return batches

        answers = feed(link_answers, items=16_000, places_per_item=2, kind="answer")
        questions = feed(link_questions, items=20_000, places_per_item=1, kind="question")
        elapsed = time.perf_counter() - started

        studies: Counter[str] = Counter()
        for op in Op.objects.filter(kind="create_study", state=OperationState.DONE):
            if not (op.result or {}).get("grown"):
                studies[campaign.stages.get(pk=op.payload["stage_id"]).name] += 1
        calls = Counter(c.operation_id or f"{c.method} {c.path}" for c in fake.state.calls)
        refused = [c for c in fake.state.calls if c.status >= 400]
        print(f"Mintaka at paper scale on Prolific ({elapsed:.0f} s)")
        print(f"  hand-off batches: {answers} (answer linking), {questions} (question linking)")
        print(
            f"  studies: {sum(studies.values())} — "
            + ", ".join(f"{k}: {v}" for k, v in studies.items())
        )
        print(f"  requests: {sum(calls.values())}")
        for name, count in sorted(calls.items(), key=lambda kv: -kv[1]):
            print(f"    {count:6d}  {name}")
        print(f"  refused: {len(refused)}")
        places = {s["id"]: s["total_available_places"] for s in fake.state.studies.values()}
        print(f"  places per study: {sorted(places.values())}")
        if refused:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
