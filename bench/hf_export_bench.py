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
dashboard's figures for the card and Croissant); ``--memory`` runs the folder a second
time under ``tracemalloc`` for the peak Python memory (tracemalloc slows Python several
times over, so that run is not timed). Prints the rows' fingerprint (a SHA-256 over the
rows read back from the Parquet files, split by split, and the data files' checksum) to
compare runs, the CPU seconds of this process and of its PostgreSQL backend, and a last
``SUMMARY`` line. Target (issue 23): >= 20,000 rows/s. ``--facts-only`` (with
``--reuse``) measures the card's figures alone in a fresh process: their time and the
process's peak RSS (issue 33: the folder in at most 1 GB).
"""

from __future__ import annotations

import argparse
import hashlib
import json
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

# Five QA pairs per assignment with answers of every type (an entity named once, yes/no,
# a number with a unit, a date, a lower-case phrase, an entity named often), "how many"
# questions among them, and four complexity types, so that answer typing and value
# parsing take the paths a real campaign's rows take.
MINTAKA_SQL = [
    """UPDATE campaigns_assignment SET answers = jsonb_build_object('questions', (
         SELECT jsonb_agg(jsonb_build_object(
             'question', CASE WHEN k = 2
                 THEN 'How many countries does river ' || id || ' cross?'
                 ELSE 'Which river number ' || id || '-' || k || ' is longer?' END,
             'answer', CASE (id + k) % 6
                 WHEN 0 THEN 'River ' || id || '-' || k
                 WHEN 1 THEN CASE WHEN k % 2 = 0 THEN 'Yes' ELSE 'No' END
                 WHEN 2 THEN (100 + id % 900) || ' km'
                 WHEN 3 THEN 'March ' || k || ', ' || (1900 + id % 120)
                 WHEN 4 THEN 'it flows north through eleven countries of east africa'
                 ELSE 'The Nile' END,
             'numeric_value', k)) FROM generate_series(1, 5) AS k))""",
    """UPDATE campaigns_item SET data = jsonb_build_object(
         'topic', 'geography', 'complexity_type',
         (ARRAY['comparative', 'count', 'superlative', 'generic'])[id % 4 + 1])""",
    "UPDATE campaigns_campaign SET recipe = 'mintaka' WHERE slug = 'bench'",
]


def rows_fingerprint(folder: Path, counts: dict[str, int]) -> str:
    """SHA-256 over every row read back from the Parquet files (split by split, in file
    order, each row as sorted JSON): equal for two runs exactly when the rows are."""
    import pyarrow.parquet as pq

    digest = hashlib.sha256()
    for split in ("train", "dev", "test"):
        if split not in counts:
            continue
        digest.update(f"[{split}]".encode())
        parquet = pq.ParquetFile(folder / f"data/{split}-00000-of-00001.parquet")
        for batch in parquet.iter_batches(batch_size=20_000):
            for row in batch.to_pylist():
                digest.update(json.dumps(row, sort_keys=True, default=str).encode())
                digest.update(b"\n")
    return digest.hexdigest()[:16]


def peak_rss() -> float:
    """This process's peak resident memory so far, in MB (``ru_maxrss``)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def backend_cpu() -> float:
    """CPU seconds of this connection's PostgreSQL backend so far (0 if unreadable)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assignments", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=5000)
    parser.add_argument("--quick", action="store_true", help="20,000 assignments, 500 workers")
    parser.add_argument("--reuse", action="store_true", help="measure an earlier build")
    parser.add_argument("--shape", choices=("examples", "mintaka"), default="examples")
    parser.add_argument(
        "--memory", action="store_true", help="also write the folder under tracemalloc"
    )
    parser.add_argument(
        "--facts-only",
        action="store_true",
        help="only the card's figures (campaign_facts), in a fresh process: their peak RSS",
    )
    args = parser.parse_args()
    if args.quick:
        args.assignments, args.workers = 20_000, 500
    if not args.reuse:
        base.recreate_database(os.environ["DATABASE_URL"])

    import django
    from django.core.management import call_command
    from django.db import connection

    django.setup()
    from django.conf import settings

    # As a job's worker runs (DEBUG off): DEBUG's query log keeps the SQL text of the
    # last 9,000 queries, each chunk's look-ups with their 25,000 ids written out,
    # some 140 bytes a row of the export's peak RSS that no deployment has.
    settings.DEBUG = False
    call_command("migrate", verbosity=0)
    if not args.reuse:
        started = time.perf_counter()
        base.build(args.assignments, args.workers)
        print(f"built {args.assignments:,} assignments in {time.perf_counter() - started:.1f} s")
    with connection.cursor() as cursor:
        cursor.execute("SELECT recipe FROM campaigns_campaign WHERE slug = 'bench'")
        shaped = cursor.fetchone()[0] == "mintaka"
        if args.shape == "mintaka" and not shaped:
            # Once per build (the statements give the same rows every time): rewriting
            # every assignment took minutes at a million.
            for sql in MINTAKA_SQL:
                cursor.execute(sql)
        elif args.shape != "mintaka":
            cursor.execute("UPDATE campaigns_campaign SET recipe = '' WHERE slug = 'bench'")
        if not (args.shape == "mintaka" and shaped):
            cursor.execute("VACUUM ANALYZE")

    from campaigns.exports.hf import hf_folder_write, parquet_write
    from campaigns.exports.hf_rows import dataset_shape
    from campaigns.exports.mintaka import DEFAULT_RATIOS
    from campaigns.models import Campaign

    campaign = Campaign.objects.get(slug="bench")
    if args.facts_only:
        facts_only(campaign)
        return
    shape = dataset_shape(campaign=campaign)
    shape.features()  # import datasets and pyarrow before the clock starts
    from campaigns.exports.card_facts import campaign_facts
    from campaigns.exports.hf import data_checksum

    work = Path(tempfile.mkdtemp(prefix="hf-bench-"))
    try:
        reports: list[int] = []
        db_cpu = backend_cpu()
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
        db_cpu = backend_cpu() - db_cpu
        load = os.getloadavg()[0]
        rows = sum(counts.values())
        print(
            f"parquet_write ({shape.name}): {rows:,} rows {counts} in {elapsed:.1f} s = "
            f"{rows / elapsed:,.0f} rows/s ({rows / cpu:,.0f} rows per CPU second of this "
            f"process, {cpu:.1f} s CPU; PostgreSQL backend {db_cpu:.1f} s CPU; "
            f"load average {load:.1f}); {len(reports)} progress reports; peak RSS so far "
            f"{peak_rss():.0f} MB"
        )
        files = [f"data/{s}-00000-of-00001.parquet" for s in counts]
        fingerprint = rows_fingerprint(work / "rows", counts)
        print(f"rows fingerprint {fingerprint}; data files {data_checksum(work / 'rows', files)}")

        facts_cpu = time.process_time()
        started = time.perf_counter()
        campaign_facts(campaign=campaign)
        facts_wall = time.perf_counter() - started
        facts_cpu = time.process_time() - facts_cpu
        print(
            f"campaign_facts (the card's figures): {facts_wall:.1f} s, {facts_cpu:.1f} s CPU; "
            f"peak RSS so far {peak_rss():.0f} MB"
        )

        folder_cpu = time.process_time()
        db_cpu = backend_cpu()
        started = time.perf_counter()
        result = hf_folder_write(campaign=campaign, target=work / "hf")
        folder_wall = time.perf_counter() - started
        folder_cpu = time.process_time() - folder_cpu
        db_cpu = backend_cpu() - db_cpu
        size = sum(p.stat().st_size for p in (work / "hf").rglob("*") if p.is_file())
        print(
            f"hf_folder_write: {result.contents.rows:,} rows, card and Croissant in "
            f"{folder_wall:.1f} s = {result.contents.rows / folder_wall:,.0f} rows/s "
            f"({folder_cpu:.1f} s CPU, PostgreSQL backend {db_cpu:.1f} s CPU; load average "
            f"{os.getloadavg()[0]:.1f}); folder {size / 2**20:.1f} MB"
        )
        if args.memory:
            tracemalloc.start()
            hf_folder_write(campaign=campaign, target=work / "hf-memory")
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            print(f"hf_folder_write under tracemalloc: peak Python memory {peak / 2**20:.1f} MB")
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"SUMMARY {shape.name}: {rows:,} rows, parquet_write {rows / elapsed:,.0f} rows/s "
            f"wall, {rows / cpu:,.0f} rows/s CPU (target >= 20,000); folder {folder_wall:.1f} s "
            f"wall, {folder_cpu:.1f} s CPU; load {load:.1f}; process peak RSS {rss:.0f} MB; "
            f"fingerprint {fingerprint}"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def facts_only(campaign: object) -> None:
    """``campaign_facts`` alone, its wall and CPU time and the process's peak RSS (the
    import baseline printed first): the card's share of the folder's memory, without
    building the rows first."""
    from campaigns.exports.card_facts import campaign_facts

    baseline = peak_rss()
    db_cpu = backend_cpu()
    cpu = time.process_time()
    started = time.perf_counter()
    facts = campaign_facts(campaign=campaign)  # type: ignore[arg-type]
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu
    db_cpu = backend_cpu() - db_cpu
    stored = sum(s.quality.assignments for s in facts.stages if s.quality)
    print(
        f"SUMMARY facts: {stored:,} stored assignments in {len(facts.stages)} stages; "
        f"campaign_facts {wall:.1f} s wall, {cpu:.1f} s CPU, PostgreSQL backend "
        f"{db_cpu:.1f} s CPU; load {os.getloadavg()[0]:.1f}; peak RSS {peak_rss():.0f} MB "
        f"(before the figures {baseline:.0f} MB)"
    )


if __name__ == "__main__":
    main()
