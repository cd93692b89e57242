"""Run simulated crowd workers through a campaign's real worker pages.

    manage.py simulate_crowd CAMPAIGN_SLUG --workers 10 --seed 1 \
        [--profiles good=0.6,sloppy=0.25,spammer=0.15] [--base-url URL] \
        [--approve-all] [--max-seconds T] [--concurrency K] [--json] \
        [--entry auto|invite|prolific]

A Prolific campaign's workers enter each published study through its URL parameters
(PROLIFIC_PID, STUDY_ID, SESSION_ID) and are sent back to Prolific's completion URL,
which is recorded, not followed. Against the real Prolific the sessions are made up:
a later sync flags them unconfirmed (never paid).

Prints a summary; exits non-zero when any request failed (any 5xx, any
unexpected status) or the time ran out.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from campaigns.models import Campaign
from campaigns.simulate import DEFAULT_PROFILES, parse_profiles, simulate_crowd
from qaportal.errors import DomainError
from qaportal.progress import ProgressBar


class Command(BaseCommand):
    help = (
        "Simulate crowd workers (good / sloppy / spammer) working on a pilot or live "
        "campaign through its worker pages over HTTP (local: invite links; Prolific: the "
        "study URL parameters), until no stage has work left."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        default_mix = ",".join(f"{k}={v}" for k, v in DEFAULT_PROFILES.items())
        parser.add_argument("campaign", help="The campaign's slug.")
        parser.add_argument("--workers", type=int, default=10, help="How many workers (10).")
        parser.add_argument("--seed", type=int, default=0, help="Random seed (0).")
        parser.add_argument(
            "--profiles", default=default_mix, help=f"Profile shares ({default_mix})."
        )
        parser.add_argument(
            "--base-url",
            default="",
            help=(
                "A running qaportal on the same database; default: call the app in "
                "process (the whole WSGI stack, no socket)."
            ),
        )
        parser.add_argument(
            "--approve-all",
            action="store_true",
            help="After each round, approve every submitted assignment (the requester's side), "
            "so approved answers hand off to the next stage.",
        )
        parser.add_argument(
            "--max-seconds", type=float, default=None, help="Stop after this long (an error)."
        )
        parser.add_argument(
            "--concurrency", type=int, default=1, help="Workers taking turns at once (1)."
        )
        parser.add_argument(
            "--llm-share",
            type=float,
            default=0.0,
            help="Share of workers who paste the stage's model's output into free-text "
            "fields, on stages with the llm_flag setting (0).",
        )
        parser.add_argument("--json", action="store_true", help="Print the summary as JSON.")
        parser.add_argument(
            "--entry",
            choices=["auto", "invite", "prolific"],
            default="auto",
            help="How workers arrive: invite links (local campaigns) or Prolific's study URL "
            "parameters (Prolific campaigns); auto picks by the campaign's provider.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = Campaign.objects.filter(slug=options["campaign"]).first()
        if campaign is None:
            raise CommandError(f"No campaign with the slug {options['campaign']!r}.")
        bar = ProgressBar(
            label=f"simulate {campaign.slug}", unit="submissions", stream=options.get("stderr")
        )
        try:
            with bar:
                result = simulate_crowd(
                    campaign=campaign,
                    workers=options["workers"],
                    seed=options["seed"],
                    shares=parse_profiles(options["profiles"]),
                    base_url=options["base_url"] or None,
                    approve_all=options["approve_all"],
                    max_seconds=options["max_seconds"],
                    concurrency=options["concurrency"],
                    entry=options["entry"],
                    progress=bar.update,
                    llm_share=options["llm_share"],
                )
        except DomainError as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps(result.as_dict(), indent=2, sort_keys=True))
        else:
            for line in result.lines():
                self.stdout.write(line)
        if not result.ok:
            raise CommandError(
                f"The simulation met {len(result.errors)} error(s); see the summary above."
            )
