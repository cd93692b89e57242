"""Backups of everything qaportal keeps: the database and the job files in storage.

``backup_write`` writes a folder: ``database.dump`` (PostgreSQL: ``pg_dump`` in its
custom format; SQLite: a consistent copy through SQLite's backup API), ``objects/``
(every file of Django's default storage: the S3 bucket or MEDIA_ROOT) and
``manifest.json`` (what it holds, each file's SHA-256). ``backup_restore`` puts such a
folder back into an empty database and storage, checking every checksum.

Redis is not backed up: it holds the queues and the cache, never the record of work
(the outbox and platform operations live in the database).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import connection
from django.utils import timezone

MANIFEST = "manifest.json"
DUMP = "database.dump"
OBJECTS = "objects"
BLOCK = 1024 * 1024


class BackupError(Exception):
    """The backup cannot be written or restored; the message says why."""


def _database() -> dict[str, Any]:
    db: dict[str, Any] = dict(settings.DATABASES["default"])
    return db


def _postgres() -> bool:
    # The backend's vendor, not its module's name: any PostgreSQL backend (Django's,
    # qaportal's, the test suite's subclass in tests/pgbackend) takes pg_dump.
    return connection.vendor == "postgresql"


def _pg_args() -> tuple[list[str], dict[str, str]]:
    db = _database()
    args = ["--host", str(db.get("HOST") or "127.0.0.1"), "--port", str(db.get("PORT") or 5432)]
    args += ["--username", str(db.get("USER") or "postgres")]
    env = dict(os.environ)
    if db.get("PASSWORD"):
        env["PGPASSWORD"] = str(db["PASSWORD"])
    return args, env


def _run(command: list[str], env: dict[str, str]) -> None:
    if shutil.which(command[0]) is None:
        raise BackupError(f"{command[0]} is not installed (Debian: postgresql-client)")
    # The command is ours (pg_dump or pg_restore) and its arguments come from settings.
    result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)  # noqa: S603
    if result.returncode != 0:
        raise BackupError(f"{command[0]} failed: {result.stderr.strip()[-2000:]}")


def _storage_files(prefix: str = "") -> list[str]:
    try:
        folders, files = default_storage.listdir(prefix)
    except FileNotFoundError:  # a local storage nothing was ever written to
        return []
    names = [f"{prefix}{name}" for name in files]
    for folder in folders:
        names += _storage_files(f"{prefix}{folder}/")
    return names


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(BLOCK):
            digest.update(block)
    return digest.hexdigest()


def backup_write(*, directory: Path) -> dict[str, Any]:
    """Write a backup into ``directory`` (new or empty); its manifest."""
    if directory.exists() and any(directory.iterdir()):
        raise BackupError(f"{directory} is not empty")
    (directory / OBJECTS).mkdir(parents=True)
    if _postgres():
        args, env = _pg_args()
        command = ["pg_dump", *args, "--format=custom", "--no-owner", "--no-privileges"]
        _run([*command, "--file", str(directory / DUMP), str(_database()["NAME"])], env)
    else:
        connection.ensure_connection()
        target = sqlite3.connect(directory / DUMP)
        try:
            connection.connection.backup(target)
        finally:
            target.close()
    objects: dict[str, str] = {}
    for name in _storage_files():
        path = directory / OBJECTS / name
        path.parent.mkdir(parents=True, exist_ok=True)
        with default_storage.open(name, "rb") as source, path.open("wb") as out:
            shutil.copyfileobj(source, out, BLOCK)
        objects[name] = _sha256(path)
    manifest = {
        "created_at": timezone.now().isoformat(),
        "database": "postgresql" if _postgres() else "sqlite",
        "database_sha256": _sha256(directory / DUMP),
        "objects": objects,
    }
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True))
    return manifest


def backup_restore(*, directory: Path) -> dict[str, Any]:
    """Restore the backup in ``directory`` into this configuration's database (empty:
    a fresh one) and storage; its manifest. Checksums are checked first."""
    manifest: dict[str, Any] = json.loads((directory / MANIFEST).read_text())
    kind = "postgresql" if _postgres() else "sqlite"
    if manifest["database"] != kind:
        raise BackupError(f"the backup is of {manifest['database']}, this database is {kind}")
    if _sha256(directory / DUMP) != manifest["database_sha256"]:
        raise BackupError(f"{DUMP} does not match its checksum")
    for name, sha in manifest["objects"].items():
        if _sha256(directory / OBJECTS / name) != sha:
            raise BackupError(f"{OBJECTS}/{name} does not match its checksum")
    if connection.introspection.table_names():
        raise BackupError("the database is not empty: restore into a fresh one")
    if _postgres():
        args, env = _pg_args()
        command = ["pg_restore", *args, "--no-owner", "--no-privileges", "--exit-on-error"]
        _run([*command, "--dbname", str(_database()["NAME"]), str(directory / DUMP)], env)
    else:
        connection.close()
        source = sqlite3.connect(directory / DUMP)
        target = sqlite3.connect(str(_database()["NAME"]))
        try:
            source.backup(target)
        finally:
            source.close()
            target.close()
    for name in manifest["objects"]:
        if default_storage.exists(name):
            raise BackupError(f"{name} is already in storage: restore into empty storage")
        with (directory / OBJECTS / name).open("rb") as handle:
            saved = default_storage.save(name, File(handle))
        if saved != name:
            raise BackupError(f"{name} was stored as {saved}")
    return manifest
