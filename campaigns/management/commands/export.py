"""``python manage.py export SLUG --format F --output FILE``: a campaign's dataset."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from campaigns.exports import FORMATS
from campaigns.exports.hub import (
    REPO_ID,
    HubNotConfigured,
    hub_dataset_url,
    hub_push,
    hub_token,
)
from campaigns.exports.mintaka import DEFAULT_RATIOS, SPLITS, parse_ratios
from campaigns.exports.services import campaign_export, campaign_hf_export
from campaigns.models import Campaign
from qaportal.progress import ProgressBar

# Options of the hf and croissant formats (the hf folder and its Croissant file).
HF_FORMATS = ("hf", "croissant")


class Command(BaseCommand):
    help = (
        "Export a campaign's dataset: mintaka (JSON; with --split, one file per split "
        "in the --output folder), jsonl, csv, collection-metadata, mturk-csv, hf (a "
        "Hugging Face datasets folder with card, croissant.json and datasheet; "
        "--push-to-hub with HF_TOKEN set) or croissant. Worker ids are pseudonyms unless "
        "--reveal-worker-ids. Every export is recorded in the export audit."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--format", required=True, choices=sorted(FORMATS))
        parser.add_argument(
            "--output", required=True, help="A file; a folder for hf, and for mintaka with --split."
        )
        parser.add_argument(
            "--split", help="mintaka, hf, croissant: train,dev,test ratios, e.g. 0.7,0.1,0.2"
        )
        parser.add_argument("--seed", type=int, default=0, help="the split's seed")
        parser.add_argument(
            "--dataset-version",
            default="",
            help="hf, croissant: the version (default: from the data's checksum)",
        )
        parser.add_argument("--license", default="unknown", help="hf, croissant: e.g. cc-by-4.0")
        parser.add_argument(
            "--push-to-hub", metavar="OWNER/NAME", help="hf: push the folder (needs HF_TOKEN)"
        )
        parser.add_argument("--public", action="store_true", help="with --push-to-hub")
        parser.add_argument("--reveal-worker-ids", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = Campaign.objects.filter(slug=options["slug"]).first()
        if campaign is None:
            raise CommandError(f"No campaign with slug {options['slug']!r}.")
        name = options["format"]
        reveal = options["reveal_worker_ids"]
        output = Path(options["output"])
        ratios = DEFAULT_RATIOS
        if options["split"]:
            if name not in ("mintaka", *HF_FORMATS):
                raise CommandError("--split applies to the mintaka, hf and croissant formats only.")
            try:
                ratios = parse_ratios(options["split"])
            except ValueError as exc:
                raise CommandError(str(exc)) from None
        if options["push_to_hub"] and name != "hf":
            raise CommandError("--push-to-hub applies to the hf format only.")
        if options["push_to_hub"] and hub_token() is None:
            raise CommandError("Set HF_TOKEN to push to the Hugging Face Hub.")
        if options["push_to_hub"] and not REPO_ID.match(options["push_to_hub"]):
            raise CommandError("A Hub repository id is 'owner/name'.")
        hf_options = {
            "ratios": ratios,
            "seed": options["seed"],
            "version": options["dataset_version"],
            "license": options["license"],
        }
        report: dict[str, Any] = {"format": name, "output": str(output)}
        # A progress bar on a terminal (rows so far); nothing in logs or pipes.
        with ProgressBar(label=f"export {name}", stream=options.get("stderr")) as bar:
            written = self._export(
                campaign, name, output, reveal, ratios, hf_options, bar, report, options
            )
        report["rows"] = written
        self.stdout.write(json.dumps(report))

    def _export(
        self,
        campaign: Campaign,
        name: str,
        output: Path,
        reveal: bool,
        ratios: Any,
        hf_options: dict[str, Any],
        bar: ProgressBar,
        report: dict[str, Any],
        options: dict[str, Any],
    ) -> dict[str, int]:
        written: dict[str, int] = {}
        if name == "hf":
            repo = options["push_to_hub"]
            result = campaign_hf_export(
                campaign=campaign,
                target=output,
                reveal=reveal,
                url=hub_dataset_url(repo) if repo else "",
                progress=bar.update,
                **hf_options,
            )
            written = dict(result.contents.split_rows)
            report |= {"version": result.contents.version, "checksum": result.contents.checksum}
            if options["push_to_hub"]:
                try:
                    pushed = hub_push(
                        folder=output,
                        repo_id=options["push_to_hub"],
                        private=not options["public"],
                        commit_message=f"{campaign.name}: version {result.contents.version}",
                    )
                except (HubNotConfigured, ValueError) as exc:
                    raise CommandError(str(exc)) from None
                report["hub"] = {"repo": pushed.repo_url, "commit": pushed.commit_url}
        elif options["split"] and name == "mintaka":
            output.mkdir(parents=True, exist_ok=True)
            for i, split in enumerate(SPLITS):
                before = sum(written.values())
                with (output / f"mintaka_{split}.json").open("w", encoding="utf-8") as out:
                    written[split] = campaign_export(
                        campaign=campaign,
                        export_format=name,
                        out=out,
                        reveal=reveal and i == 0,  # one audit entry with real ids for the run
                        split=split,
                        ratios=ratios,
                        seed=options["seed"],
                        progress=functools.partial(_offset, bar, before),
                    )
        else:
            with output.open("w", encoding="utf-8", newline="") as out:
                written[name] = campaign_export(
                    campaign=campaign,
                    export_format=name,
                    out=out,
                    reveal=reveal,
                    progress=bar.update,
                    **(hf_options if name in HF_FORMATS else {}),
                )
        return written


def _offset(bar: ProgressBar, before: int, rows: int) -> None:
    """The bar at ``rows`` of this file after ``before`` rows of the earlier ones."""
    bar.update(before + rows)
