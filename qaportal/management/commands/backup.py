"""``manage.py backup FOLDER``: the database and every job file, with checksums
(qaportal/backup.py; docs/deployment.md, "Backups")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from qaportal.backup import BackupError, backup_write


class Command(BaseCommand):
    help = "Back up the database and the stored job files into a new folder."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("folder", type=Path, help="a new (or empty) folder")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            manifest = backup_write(directory=options["folder"])
        except BackupError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"backup: {manifest['database']} database and {len(manifest['objects'])} "
            f"files in {options['folder']}"
        )
