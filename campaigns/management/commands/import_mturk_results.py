"""Import an MTurk batch results file into an MTurk campaign.

    manage.py import_mturk_results Batch_4242_batch_results.csv --campaign mintaka --stage 0

All or nothing; importing the same file again adds nothing. Prints a JSON summary:
``hits``, ``assignments``, ``workers`` (in the file), ``work_time_seconds`` (sum of
``WorkTimeInSeconds``), ``created`` (assignments this run added) and what else was new.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from campaigns.models import Campaign
from campaigns.platforms.mturk.csv.results import mturk_import_stage, mturk_results_import
from qaportal.errors import DomainError
from qaportal.progress import ProgressBar


def command_error(exc: DomainError) -> CommandError:
    """A domain error as the commands print it: the message, then each row's problem."""
    lines = [str(exc)]
    if isinstance(exc.errors, list):
        lines += [
            f"  row {e.get('row') or '-'}, column {e.get('field') or '-'}: {e.get('message')}"
            for e in exc.errors
            if isinstance(e, dict)
        ]
    return CommandError("\n".join(lines))


def read_file(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise CommandError(f"Cannot read {path}: {exc.strerror or exc}") from exc


def campaign_by_slug(slug: str) -> Campaign:
    campaign = Campaign.objects.filter(slug=slug).first()
    if campaign is None:
        raise CommandError(f"No campaign with the slug {slug!r}.")
    return campaign


class Command(BaseCommand):
    help = "Import an MTurk batch results CSV (HITs, items, workers, assignments)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="The Batch_<id>_batch_results.csv file.")
        parser.add_argument("--campaign", required=True, help="Slug of an MTurk campaign.")
        parser.add_argument(
            "--stage",
            type=int,
            help="Position of the stage new HITs go to (default: the first stage).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        content = read_file(options["file"])
        campaign = campaign_by_slug(options["campaign"])
        bar = ProgressBar(label="import MTurk results", stream=options.get("stderr"))
        try:
            stage = mturk_import_stage(campaign=campaign, position=options["stage"])
            with bar:
                result = mturk_results_import(
                    campaign=campaign,
                    content=content,
                    stage=stage,
                    filename=Path(options["file"]).name,
                    progress=bar.update,
                )
        except DomainError as exc:
            raise command_error(exc) from exc
        self.stdout.write(json.dumps(result.as_dict(), sort_keys=True))
