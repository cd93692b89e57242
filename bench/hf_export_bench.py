"""The ``hf`` export over a large campaign: rows per second into Parquet, the whole
folder (card, Croissant, datasheet) and peak memory.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/qaportal_hf_bench \\
        .venv/bin/python bench/hf_export_bench.py                  # 1,000,000 assignments
    .venv/bin/python bench/hf_export_bench.py --quick              # 20,000 assignments
    .venv/bin/python bench/hf_export_bench.py --reuse --shape mintaka

Builds the campaign of ``money_workers_bench`` (three stages, 3 assignments per HIT,
85 % approved, 5 % rejected, 10 % submitted; ``--reuse`` measures an earlier build).
``--shape examples`` (the default) exports one row per accepted example; ``--shape
mintaka`` first gives every assignment five QA pairs and every item a topic and a
complexity type, marks the campaign as Mintaka's recipe, and exports one row per QA
pair in Mintaka's schema. Measures ``parquet_write`` (the rows: what a background job
streams, with its progress callback) and then ``hf_folder_write`` (rows plus the
dashboard's figures for the card and Croissant), the second under ``tracemalloc``.
Target (issue 23): >= 20,000 rows/s.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/qaportal_hf_bench")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import money_workers_bench as base  # noqa: E402 - after the path and the environment

MINTAKA_SQL = [
    """UPDATE campaigns_assignment SET answers = jsonb_build_object('questions', (
         SELECT jsonb_agg(jsonb_build_object(
             'question', 'Which river number ' || id || '-' || k || ' is longer?',
             'answer', 'The Nile')) FROM generate_series(1, 5) AS k))""",
    """UPDATE campaigns_item SET data = jsonb_build_object(
         'topic', 'geography', 'complexity_type', 'comparative')""",
    "UPDATE campaigns_campaign SET recipe = 'mintaka' WHERE slug = 'bench'",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assignments", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=5000)
    parser.add_argument("--quick", action="store_true", help="20,000 assignments, 500 workers")
    parser.add_argument("--reuse", action="store_true", help="measure an earlier build")
    parser.add_argument("--shape", choices=("examples", "mintaka"), default="examples")
    args = parser.parse_args()
    if args.quick:
        args.assignments, args.workers = 20_000, 500
    if not args.reuse:
        base.recreate_database(os.environ["DATABASE_URL"])

    import django
    from django.core.management import call_command
    from django.db import connection

    django.setup()
    call_command("migrate", verbosity=0)
    if not args.reuse:
        started = time.perf_counter()
        base.build(args.assignments, args.workers)
        print(f"built {args.assignments:,} assignments in {time.perf_counter() - started:.1f} s")
    with connection.cursor() as cursor:
        if args.shape == "mintaka":
            for sql in MINTAKA_SQL:
                cursor.execute(sql)
        else:
            cursor.execute("UPDATE campaigns_campaign SET recipe = '' WHERE slug = 'bench'")
        cursor.execute("VACUUM ANALYZE")

    from campaigns.exports.hf import hf_folder_write, parquet_write
    from campaigns.exports.hf_rows import dataset_shape
    from campaigns.exports.mintaka import DEFAULT_RATIOS
    from campaigns.models import Campaign

    campaign = Campaign.objects.get(slug="bench")
    shape = dataset_shape(campaign=campaign)
    shape.features()  # import datasets and pyarrow before the clock starts
    work = Path(tempfile.mkdtemp(prefix="hf-bench-"))
    try:
        reports: list[int] = []
        cpu = time.process_time()
        started = time.perf_counter()
        counts = parquet_write(
            campaign=campaign,
            folder=work / "rows",
            shape=shape,
            ratios=DEFAULT_RATIOS,
            seed=0,
            progress=reports.append,
        )
        elapsed = time.perf_counter() - started
        cpu = time.process_time() - cpu
        rows = sum(counts.values())
        print(
            f"parquet_write ({shape.name}): {rows:,} rows {counts} in {elapsed:.1f} s = "
            f"{rows / elapsed:,.0f} rows/s ({rows / cpu:,.0f} rows per CPU second of this "
            f"process; load average {os.getloadavg()[0]:.1f}); {len(reports)} progress reports"
        )
        tracemalloc.start()
        started = time.perf_counter()
        result = hf_folder_write(campaign=campaign, target=work / "hf")
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        size = sum(p.stat().st_size for p in (work / "hf").rglob("*") if p.is_file())
        print(
            f"hf_folder_write: {result.contents.rows:,} rows, card and Croissant in "
            f"{elapsed:.1f} s (under tracemalloc) = {result.contents.rows / elapsed:,.0f} rows/s; "
            f"folder {size / 2**20:.1f} MB; peak Python memory {peak / 2**20:.1f} MB, "
            f"process peak RSS {rss:.0f} MB"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
