"""Approve or reject a campaign's assignments from a batch results file.

    manage.py review_mturk_results reviewed.csv --campaign mintaka

``x`` in the ``Approve`` column approves, a text in ``Reject`` rejects with that
feedback; rows with neither are skipped. Paid assignments are decided through
provider operations. Prints a JSON summary: ``counts`` by result, ``skipped`` and
one result per decided row.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from campaigns.management.commands.import_mturk_results import (
    campaign_by_slug,
    command_error,
    read_file,
)
from campaigns.platforms.mturk.csv.review import mturk_results_review
from qaportal.errors import DomainError


class Command(BaseCommand):
    help = "Approve / reject assignments from the Approve and Reject columns of a batch CSV."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="A batch results CSV with Approve / Reject filled.")
        parser.add_argument("--campaign", required=True, help="Slug of the campaign.")

    def handle(self, *args: Any, **options: Any) -> None:
        content = read_file(options["file"])
        campaign = campaign_by_slug(options["campaign"])
        try:
            result = mturk_results_review(
                campaign=campaign, content=content, filename=Path(options["file"]).name
            )
        except DomainError as exc:
            raise command_error(exc) from exc
        self.stdout.write(json.dumps(result.as_dict(), sort_keys=True))
