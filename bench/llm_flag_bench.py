"""The LLM flag's precision and recall on a simulated crowd (issue 38, item 3).

    .venv/bin/python bench/llm_flag_bench.py                       # 40 workers, 30 % paste
    .venv/bin/python bench/llm_flag_bench.py --workers 60 --llm-share 0.5 --seed 3

Recreates the database ``qaportal_flag_bench`` (``DATABASE_URL`` to change it), migrates
it, and makes a local campaign with one rephrasing stage (``--items`` questions, one per
HIT, ``--per-hit`` rephrasings each) whose ``llm_flag`` setting points at an endpoint on
the in-process OpenAI fake answering as a paraphrasing model would
(``tests/campaigns/assist/fake_models.py``). The crowd simulator
(``simulate_crowd(llm_share=…)``, ``--llm-share`` on the command) runs good workers:
a share of them paste the model's rephrasing (sometimes lightly edited; the page's
telemetry reports the paste), the others type their own. Each answer's flag is
computed after it is stored, as in production (eager Celery: at commit).

Reports, at the default threshold, precision and recall of ``Assignment.llm_flag``
against the simulator's ground truth (``SimulationResult.llm_pasted``), the scores'
ranges per class, wall and process CPU time and the load average.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchdb import cpu_seconds, database_recreate

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/qaportal_flag_bench")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "qaportal.settings")
os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("CELERY_TASK_ALWAYS_EAGER", "1")
os.environ.setdefault("LOG_LEVEL", "WARNING")

SUBJECTS = [
    ("Which river flows through", "Vienna"),
    ("Who painted the ceiling of", "the Sistine Chapel"),
    ("Which country has the largest population in", "Africa"),
    ("Who wrote the novel set in", "Dublin on a single day"),
    ("Which mountain is the highest in", "the Alps"),
    ("Which language is spoken in", "Quebec"),
    ("Who invented the machine used by", "Alan Turing at Bletchley Park"),
    ("Which team won the cup played in", "Montevideo in 1930"),
    ("Which city was founded first,", "Rome or Carthage"),
    ("Which lake lies between", "Kenya and Uganda"),
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=40)
    parser.add_argument("--llm-share", type=float, default=0.3)
    parser.add_argument("--items", type=int, default=40)
    parser.add_argument("--per-hit", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    if os.environ["DATABASE_URL"].startswith("postgres"):
        database_recreate()
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)

    from django.contrib.auth import get_user_model

    from campaigns.assist.endpoints import model_endpoint_create
    from campaigns.design.services import campaign_create, stage_add
    from campaigns.models import Assignment, CampaignState, Item, ItemSource
    from campaigns.platforms.publishing import campaign_start
    from campaigns.simulate.run import simulate_crowd
    from tests.campaigns.assist.fake_models import paraphrase_answer
    from tests.campaigns.assist.fake_openai import FakeOpenAI
    from validation.llm_flag import DEFAULT_THRESHOLD

    owner = get_user_model().objects.create_user(username="bench", password="x")
    with FakeOpenAI(api_key="sk-bench-0123456789abcdef", answer=paraphrase_answer) as fake:
        endpoint = model_endpoint_create(
            owner=owner,
            values={
                "name": "fake",
                "kind": "openai",
                "base_url": fake.base_url,
                "model": "fake-paraphraser",
                "api_key": fake.api_key,
                "timeout_seconds": "5",
                "concurrency": 8,
            },
        )
        campaign = campaign_create(owner=owner, name="LLM flag bench", slug="llm-flag-bench")
        stage = stage_add(
            campaign=campaign,
            name="Rephrase",
            task_type="rephrase",
            config={"llm_flag": {"endpoint": endpoint.pk}},
            assignments_per_hit=args.per_hit,
            reward=Decimal("0.10"),
        )
        for n in range(args.items):
            lead, subject = SUBJECTS[n % len(SUBJECTS)]
            question = f"{lead} {subject} (question {n + 1})?"
            Item.objects.create(
                stage=stage,
                external_id=f"q{n}",
                data={"question": question},
                source=ItemSource.UPLOADED,
            )
        campaign_start(campaign=campaign, to_state=CampaignState.PILOT)
        load = os.getloadavg()
        wall, cpu = time.perf_counter(), cpu_seconds()
        result = simulate_crowd(
            campaign=campaign,
            workers=args.workers,
            seed=args.seed,
            shares={"good": 1.0},
            llm_share=args.llm_share,
        )
        wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu

    pasted = set(result.llm_pasted)
    rows = list(
        Assignment.objects.filter(hit__stage=stage, submitted_at__isnull=False).values_list(
            "pk", "llm_flag"
        )
    )
    tp = fp = fn = tn = missing = 0
    scores: dict[bool, list[float]] = {True: [], False: []}
    for pk, flag in rows:
        if not flag:
            missing += 1
            continue
        truth, said = pk in pasted, bool(flag.get("flagged"))
        scores[truth].append(float(flag.get("score") or 0.0))
        tp += truth and said
        fp += said and not truth
        fn += truth and not said
        tn += not truth and not said
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    print(
        f"workers {args.workers}, llm share {args.llm_share}, seed {args.seed}: "
        f"{len(rows)} answers, {len(pasted)} pasted, {missing} without a flag"
    )
    print(f"threshold {DEFAULT_THRESHOLD}: TP {tp} FP {fp} FN {fn} TN {tn}")
    print(f"precision {precision:.3f}  recall {recall:.3f}")
    for truth, label in ((True, "pasted"), (False, "own text")):
        if scores[truth]:
            values = sorted(scores[truth])
            print(
                f"  {label:9} score min {values[0]:.3f} median {values[len(values) // 2]:.3f} "
                f"max {values[-1]:.3f}"
            )
    print(
        f"wall {wall:.1f} s, process CPU {cpu:.1f} s, load average before "
        f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; simulation ok: {result.ok}"
    )
    if not result.ok:
        print("\n".join(result.errors[:5]))


if __name__ == "__main__":
    main()
