"""Subscribe qaportal to Prolific's webhooks (study and submission status changes).

    manage.py prolific_hooks                # subscriptions only (idempotent)
    manage.py prolific_hooks --new-secret   # also the workspace's signing secret

Uses ``PROLIFIC_API_TOKEN`` and ``PROLIFIC_WORKSPACE_ID``; the target is
``SITE_URL/work/prolific/hooks/`` (https, reachable by Prolific) unless ``--target-url``.
With ``--new-secret``, or when the workspace has no secret yet, the secret is created
and printed once: put it in ``PROLIFIC_WEBHOOK_SECRET`` (the workspace has one active
secret; a new one stops the old one verifying). An unconfirmed subscription left by an
earlier run is replaced, never doubled. Polling stays on
either way (``campaigns.platform_sync`` on beat).
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError, CommandParser

from campaigns.platforms.testing import prolific_hooks_setup
from qaportal.errors import DomainError


class Command(BaseCommand):
    help = "Subscribe qaportal's hook endpoint to Prolific's status events."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--new-secret", action="store_true", help="Create the signing secret.")
        parser.add_argument(
            "--target-url", default="", help="Default: SITE_URL/work/prolific/hooks/"
        )

    def handle(self, *args: object, **options: object) -> None:
        try:
            out = prolific_hooks_setup(
                new_secret=bool(options["new_secret"]), target_url=str(options["target_url"] or "")
            )
        except DomainError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(json.dumps(out, indent=2, sort_keys=True))
