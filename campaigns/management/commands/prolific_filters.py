"""Read Prolific's filters catalogue again (``get-filters``) and show its countries.

    manage.py prolific_filters             # refresh the cached catalogue, list countries

Stage requirements name countries by ISO code; publishing on Prolific sends them as the
``current-country-of-residence`` filter's choice ids from this catalogue, cached for
``PROLIFIC_FILTERS_CACHE_SECONDS`` (a day). Run this after Prolific changes its filters.
Uses ``PROLIFIC_API_TOKEN`` and ``PROLIFIC_WORKSPACE_ID``.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from campaigns.platforms.base import ProviderError
from campaigns.platforms.prolific.rules import ProlificRules
from campaigns.platforms.prolific.studies import prolific_filters_refresh


class Command(BaseCommand):
    help = "Refresh Prolific's filters catalogue and list the countries it offers."

    def handle(self, *args: object, **options: object) -> None:
        try:
            catalogue = prolific_filters_refresh()
        except ProviderError as exc:
            raise CommandError(str(exc)) from exc
        countries = ProlificRules(catalogue=catalogue).requirement_choices()["countries"]
        self.stdout.write(f"{len(catalogue)} filters; countries qaportal can name:")
        for c in countries:
            self.stdout.write(f"  {c['code']}  {c['name']} (choice {c['choice']})")
