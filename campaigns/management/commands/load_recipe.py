"""Put a published protocol's stages into a campaign, and show its cost at the paper's scale.

    manage.py load_recipe mintaka --campaign mintaka-2026 --owner alice
    manage.py load_recipe whyqa --campaign why --owner alice --provider prolific --no-sample
    manage.py load_recipe nangia --campaign nangia-2 --owner alice --name "Nangia, second run"

The campaign is created (as a draft owned by ``--owner``, named ``--name`` or the
recipe's title) when it does not exist; an existing one must be a draft without stages.
A campaign's name is unique per owner, so a second campaign of one recipe takes
``--name``. Prints a JSON summary: the stages made,
sample items loaded, and the recipe's cost at the paper's scale on the provider.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from campaigns.design.platform import platform_names
from campaigns.design.services import campaign_create
from campaigns.models import Campaign, Provider
from campaigns.recipes import recipe_get, recipe_names
from campaigns.recipes.base import PILOT, SCALES
from campaigns.recipes.services import recipe_apply, recipe_cost, recipe_paper_cost
from qaportal.errors import DomainError


class Command(BaseCommand):
    help = "Load a recipe (mintaka, whyqa, graphquestions) into a draft campaign."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("recipe", choices=recipe_names())
        parser.add_argument("--campaign", required=True, help="Slug of the campaign.")
        parser.add_argument("--owner", help="Username owning a campaign created here.")
        parser.add_argument(
            "--name",
            help="Name of a campaign created here (default: the recipe's title; unique per "
            "owner, so a second campaign of one recipe needs its own).",
        )
        parser.add_argument(
            "--provider", choices=platform_names(), help="For a new campaign (default local)."
        )
        parser.add_argument(
            "--no-sample", action="store_true", help="Make the stages without sample items."
        )
        parser.add_argument(
            "--scale",
            choices=SCALES,
            default=PILOT,
            help="A small pilot (default) or the paper's sizes.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        recipe = recipe_get(options["recipe"])
        slug: str = options["campaign"]
        try:
            with transaction.atomic():
                campaign = Campaign.objects.filter(slug=slug).first()
                if campaign is None:
                    campaign = self._new_campaign(recipe.title, slug, options)
                elif options.get("name") and options["name"] != campaign.name:
                    raise CommandError(
                        f"Campaign {slug!r} exists and is called {campaign.name!r}; --name "
                        "only applies to a campaign this command creates."
                    )
                elif options["provider"] and options["provider"] != campaign.provider:
                    raise CommandError(
                        f"Campaign {slug!r} runs on {campaign.provider}; --provider only "
                        "applies to a campaign this command creates."
                    )
                stages = recipe_apply(
                    campaign=campaign,
                    name=recipe.name,
                    sample=not options["no_sample"],
                    scale=options["scale"],
                )
        except DomainError as exc:
            hint = ""
            if isinstance(exc.errors, dict) and exc.errors.get("name") == ["taken"]:
                hint = " Give this campaign its own --name."
            raise CommandError(f"{exc}{hint} {exc.errors or ''}".strip()) from exc
        cost = recipe_paper_cost(name=recipe.name, provider=campaign.provider)
        pilot = recipe_cost(name=recipe.name, provider=campaign.provider, scale=PILOT)
        summary = {
            "campaign": campaign.slug,
            "recipe": recipe.name,
            "provider": campaign.provider,
            "stages": [
                {
                    "name": s.name,
                    "task_type": s.task_type,
                    "items": s.items.count(),
                    "reward": str(s.reward),
                    "estimated_minutes": (s.config or {}).get("estimated_minutes"),
                    # The paper's amount was under the platform's hourly minimum: raised.
                    **(
                        {"reward_raised_from": s.config["reward_raised"]["paper"]}
                        if "reward_raised" in (s.config or {})
                        else {}
                    ),
                }
                for s in stages
            ],
            "scale": options["scale"],
            "pilot_scale": recipe.pilot_scale,
            "pilot_cost": {
                "currency": pilot.currency,
                "rewards": str(pilot.total_rewards),
                "fees": str(pilot.total_fees),
                "total": str(pilot.total),
            },
            "paper_scale": recipe.paper_scale,
            "paper_cost": {
                "currency": cost.currency,
                "rewards": str(cost.total_rewards),
                "fees": str(cost.total_fees),
                "total": str(cost.total),
            },
        }
        self.stdout.write(json.dumps(summary, indent=2, ensure_ascii=False))

    def _new_campaign(self, title: str, slug: str, options: dict[str, Any]) -> Campaign:
        if not options["owner"]:
            raise CommandError(f"No campaign {slug!r}: give --owner to create it.")
        owner = get_user_model().objects.filter(username=options["owner"]).first()
        if owner is None:
            raise CommandError(f"No user {options['owner']!r}.")
        return campaign_create(
            owner=owner,
            name=options.get("name") or title,
            slug=slug,
            provider=options["provider"] or Provider.LOCAL,
        )
