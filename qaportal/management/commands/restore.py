"""``manage.py restore FOLDER``: a backup put back into an empty database and storage,
every checksum checked first (qaportal/backup.py; docs/deployment.md, "Backups")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from qaportal.backup import BackupError, backup_restore


class Command(BaseCommand):
    help = "Restore a backup (manage.py backup) into an empty database and storage."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("folder", type=Path, help="a folder written by manage.py backup")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            manifest = backup_restore(directory=options["folder"])
        except BackupError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"restored: the {manifest['database']} database of {manifest['created_at']} and "
            f"{len(manifest['objects'])} files"
        )
