"""Campaign overview, review queue and exports over a large campaign: time, queries,
export rows per second and peak memory.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/qaportal_export_bench \\
        .venv/bin/python bench/dashboard_export_bench.py            # 1,000,000 assignments
    .venv/bin/python bench/dashboard_export_bench.py --quick        # 20,000 assignments

Builds the campaign of ``money_workers_bench`` (three stages, 3 assignments per HIT,
85 % approved, 5 % rejected, 10 % submitted; ``--reuse`` measures an earlier build),
then measures: ``campaign_progress`` (the overview's live section) and the whole
campaign page, the review queue's first page (server time, queries), and each
streaming export written to /dev/null: rows per second, and peak memory in a second
pass under ``tracemalloc`` (Python allocations) with the process's peak RSS.
Targets (issue 9): overview < 500 ms with bounded queries, queue first page < 300 ms,
export >= 20,000 rows/s with peak memory < 300 MB.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
import tracemalloc
from pathlib import Path
from typing import IO, cast

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/qaportal_export_bench")

import money_workers_bench as base  # noqa: E402 - after the path and the environment


class _Sink:
    def write(self, text: str) -> int:
        return len(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assignments", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=5000)
    parser.add_argument("--quick", action="store_true", help="20,000 assignments, 500 workers")
    parser.add_argument("--reuse", action="store_true", help="measure an earlier build")
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
            cursor.execute("VACUUM ANALYZE")

    from django.test import Client

    from campaigns.exports import FORMATS, export_write
    from campaigns.insights.progress import campaign_progress
    from campaigns.models import Campaign

    campaign = Campaign.objects.get(slug="bench")
    base.measure("campaign_progress", lambda: f"{campaign_progress(campaign=campaign).done} done")
    client = Client()
    client.force_login(campaign.owner)
    base.measure(
        "GET campaign page",
        lambda: client.get(f"/campaigns/{campaign.slug}/", HTTP_HOST="127.0.0.1").status_code,
    )
    base.measure(
        "GET review queue, first page",
        lambda: (
            client.get(f"/campaigns/{campaign.slug}/review/", HTTP_HOST="127.0.0.1").status_code
        ),
    )
    for name in ("collection-metadata", "jsonl", "csv"):
        assert name in FORMATS
        started = time.perf_counter()
        rows = export_write(campaign=campaign, name=name, out=cast(IO[str], _Sink()))
        elapsed = time.perf_counter() - started
        tracemalloc.start()
        export_write(campaign=campaign, name=name, out=cast(IO[str], _Sink()))
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"export {name}: {rows:,} rows in {elapsed:.1f} s = {rows / elapsed:,.0f} rows/s; "
            f"peak Python memory {peak / 2**20:.1f} MB, process peak RSS {rss:.0f} MB"
        )


if __name__ == "__main__":
    main()
