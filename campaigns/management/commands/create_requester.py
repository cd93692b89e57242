"""Create a requester account and print its API token.

    manage.py create_requester alice --email alice@example.org --password-from-env ALICE_PW
    manage.py create_requester alice --reset-token

The password is printed only when the command generated it, and then once: a
password given on the command line or in the environment is the caller's secret.
Prefer ``--password-from-env``: ``--password`` ends up in the shell history and
in the process list.
"""

from __future__ import annotations

import os
import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from rest_framework.authtoken.models import Token


class Command(BaseCommand):
    help = "Create a requester (a login for the pages and an API token); print the token."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--email", default="")
        secret = parser.add_mutually_exclusive_group()
        secret.add_argument("--password", help="Visible in the process list; prefer the env.")
        secret.add_argument(
            "--password-from-env", metavar="VAR", help="Read the password from this variable."
        )
        parser.add_argument("--staff", action="store_true", help="Allow the admin site.")
        parser.add_argument(
            "--reset-token",
            action="store_true",
            help="The user exists: replace their API token (the old one stops working).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        username: str = options["username"]
        password = self._given_password(options)
        user_model = get_user_model()
        with transaction.atomic():
            user = user_model.objects.select_for_update().filter(username=username).first()
            generated = ""
            if user is None:
                user = user_model(username=username, email=options["email"])
                if password is None:
                    generated = password = secrets.token_urlsafe(16)
                self._check_password(password, user)
                user.set_password(password)
                user.is_staff = options["staff"]
                user.save()
                self.stdout.write(f"created requester {username}")
            elif not options["reset_token"]:
                raise CommandError(
                    f"The user {username!r} exists already. "
                    "Use --reset-token to issue a new API token."
                )
            else:
                # Only what was asked for changes; a missing --staff does not demote.
                if password is not None:
                    self._check_password(password, user)
                    user.set_password(password)
                if options["email"]:
                    user.email = options["email"]
                if options["staff"]:
                    user.is_staff = True
                user.save()
                Token.objects.filter(user=user).delete()
                self.stdout.write(f"new API token for requester {username}")
            token = Token.objects.create(user=user)
        self.stdout.write(f"token: {token.key}")
        if generated:
            self.stdout.write(f"password: {generated}  (generated; it is not shown again)")

    def _given_password(self, options: dict[str, Any]) -> str | None:
        if options["password"] is not None:
            return str(options["password"])
        var = options["password_from_env"]
        if var is None:
            return None
        value = os.environ.get(var, "")
        if not value:
            raise CommandError(f"The environment variable {var} is not set or empty.")
        return value

    def _check_password(self, password: str, user: Any) -> None:
        try:
            validate_password(password, user=user)
        except ValidationError as exc:
            raise CommandError("The password is refused: " + " ".join(exc.messages)) from exc
