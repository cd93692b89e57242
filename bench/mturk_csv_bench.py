"""MTurk batch results CSV: import, re-import and streamed export of a large batch.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/qaportal_mturk_bench \\
        .venv/bin/python bench/mturk_csv_bench.py                 # 5,000 HITs x 3 assignments
    .venv/bin/python bench/mturk_csv_bench.py --hits 50000        # 150,000 rows

Migrates the database named in ``DATABASE_URL`` (default above; it must exist), builds
a batch file in MTurk's layout from the test fixture's first row (``--hits`` HITs,
``--per-hit`` assignments each, over 2,000 workers), then times with the number of
queries: the import, the same import again (adds nothing) and the export written to
a null sink, and measures the export's peak Python memory with ``tracemalloc``
(which slows it; the time is taken on a separate run). The campaign is deleted at
the end; its workers stay.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import sys
import time
import tracemalloc
from pathlib import Path
from typing import TextIO, cast

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/qaportal_mturk_bench")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "qaportal.settings")
os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("CELERY_TASK_ALWAYS_EAGER", "1")
os.environ.setdefault("LOG_LEVEL", "WARNING")

FIXTURE = Path(__file__).resolve().parent.parent / (
    "tests/campaigns/platforms/mturk/csv/fixtures/Batch_4242_batch_results.csv"
)


class _Null:
    def write(self, text: str) -> int:
        return len(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hits", type=int, default=5000)
    parser.add_argument("--per-hit", type=int, default=3)
    args = parser.parse_args()

    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from campaigns.models import Campaign, Stage
    from campaigns.platforms.mturk.csv.results import mturk_results_import
    from campaigns.platforms.mturk.csv.selectors import mturk_csv_write

    call_command("migrate", verbosity=0)
    rows = list(csv.reader(io.StringIO(FIXTURE.read_text(encoding="utf-8-sig"))))
    header, template = rows[0], rows[1]
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    for h in range(args.hits):
        for a in range(args.per_hit):
            row = list(template)
            row[header.index("HITId")] = f"BENCHHIT{h:022d}"
            row[header.index("AssignmentId")] = f"BENCHASG{h:016d}X{a:05d}"
            row[header.index("WorkerId")] = f"BENCHW{(h * args.per_hit + a) % 2000:08d}"
            writer.writerow(row)
    content = out.getvalue().encode()
    owner, _ = User.objects.get_or_create(username="bench-mturk-csv")
    Campaign.objects.filter(slug="bench-mturk-csv").delete()
    campaign = Campaign.objects.create(
        slug="bench-mturk-csv", name="Bench", owner=owner, provider="mturk"
    )
    Stage.objects.create(campaign=campaign, name="Write", task_type="question_writing")
    try:
        for label in ("import", "re-import"):
            started = time.perf_counter()
            with CaptureQueriesContext(connection) as queries:
                result = mturk_results_import(campaign=campaign, content=content)
            print(
                f"{label}: {len(content) / 1e6:.1f} MB, {args.hits * args.per_hit} rows, "
                f"{time.perf_counter() - started:.2f} s, {len(queries)} queries, "
                f"created {result.created}"
            )
        started = time.perf_counter()
        with CaptureQueriesContext(connection) as queries:
            written = mturk_csv_write(campaign_id=campaign.pk, out=cast(TextIO, _Null()))
        print(
            f"export: {written} rows, {time.perf_counter() - started:.2f} s, {len(queries)} queries"
        )
        tracemalloc.start()
        mturk_csv_write(campaign_id=campaign.pk, out=cast(TextIO, _Null()))
        print(f"export peak Python memory: {tracemalloc.get_traced_memory()[1] / 1e6:.1f} MB")
        tracemalloc.stop()
    finally:
        campaign.delete()


if __name__ == "__main__":
    main()
