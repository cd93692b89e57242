"""``python manage.py export SLUG --format F --output FILE``: a campaign's dataset."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from campaigns.exports import FORMATS
from campaigns.exports.mintaka import SPLITS, parse_ratios
from campaigns.exports.services import campaign_export
from campaigns.models import Campaign


class Command(BaseCommand):
    help = (
        "Export a campaign's dataset: mintaka (JSON; with --split, one file per split "
        "in the --output folder), jsonl, csv or collection-metadata. Worker ids are "
        "pseudonyms unless --reveal-worker-ids (recorded in the export audit)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--format", required=True, choices=sorted(FORMATS))
        parser.add_argument(
            "--output", required=True, help="A file; a folder for mintaka with --split."
        )
        parser.add_argument("--split", help="mintaka: train,dev,test ratios, e.g. 0.7,0.1,0.2")
        parser.add_argument("--seed", type=int, default=0, help="mintaka: the split's seed")
        parser.add_argument("--reveal-worker-ids", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = Campaign.objects.filter(slug=options["slug"]).first()
        if campaign is None:
            raise CommandError(f"No campaign with slug {options['slug']!r}.")
        name = options["format"]
        reveal = options["reveal_worker_ids"]
        output = Path(options["output"])
        written: dict[str, int] = {}
        if options["split"]:
            if name != "mintaka":
                raise CommandError("--split applies to the mintaka format only.")
            try:
                ratios = parse_ratios(options["split"])
            except ValueError as exc:
                raise CommandError(str(exc)) from None
            output.mkdir(parents=True, exist_ok=True)
            for i, split in enumerate(SPLITS):
                with (output / f"mintaka_{split}.json").open("w", encoding="utf-8") as out:
                    written[split] = campaign_export(
                        campaign=campaign,
                        export_format=name,
                        out=out,
                        reveal=reveal and i == 0,  # one audit entry for the run
                        split=split,
                        ratios=ratios,
                        seed=options["seed"],
                    )
        else:
            with output.open("w", encoding="utf-8", newline="") as out:
                written[name] = campaign_export(
                    campaign=campaign, export_format=name, out=out, reveal=reveal
                )
        self.stdout.write(json.dumps({"format": name, "output": str(output), "rows": written}))
