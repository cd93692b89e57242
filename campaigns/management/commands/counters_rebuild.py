"""Recompute the assignment counters from the assignments.

    manage.py counters_rebuild               # every stage
    manage.py counters_rebuild --stage 12 --stage 13

The database keeps the counters itself (triggers, migration 0016); this is for a
restore that skipped triggers, a bulk load with triggers off, or a check
(``--check`` prints the stages whose counters differ from a full count, changes
nothing, and exits 1 if any does).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from campaigns.models import Stage
from campaigns.work.counts import stage_assignment_counts_rebuild
from campaigns.work.selectors.counts import (
    stage_assignment_counts,
    stage_assignment_counts_full,
)


class Command(BaseCommand):
    help = "Recompute the per-stage assignment counters from the assignments."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--stage", type=int, action="append", help="a stage id (repeat)")
        parser.add_argument("--check", action="store_true", help="compare only")

    def handle(self, *args: Any, **options: Any) -> None:
        ids = options["stage"]
        if options["check"]:
            stage_ids = ids or list(Stage.objects.values_list("pk", flat=True))
            kept = stage_assignment_counts(stage_ids=stage_ids)
            full = stage_assignment_counts_full(stage_ids=stage_ids)
            wrong = sorted(s for s in stage_ids if kept.get(s, {}) != full.get(s, {}))
            for stage_id in wrong:
                self.stdout.write(
                    f"stage {stage_id}: kept {kept.get(stage_id)} full {full.get(stage_id)}"
                )
            self.stdout.write(f"{len(stage_ids)} stages checked, {len(wrong)} differ")
            if wrong:
                raise SystemExit(1)
            return
        rows = stage_assignment_counts_rebuild(stage_ids=ids)
        self.stdout.write(f"{rows} counter rows rebuilt")
