"""What the model-in-the-loop benches share (issue 38): their PostgreSQL database made
anew, and the process's CPU seconds. Imported by the scripts beside it (a script's own
folder is on ``sys.path``); nothing in qaportal imports it."""

from __future__ import annotations

import os
import resource
from urllib.parse import urlparse


def database_recreate() -> None:
    """Drop and create the database named in ``DATABASE_URL`` (PostgreSQL)."""
    import psycopg2

    url = urlparse(os.environ["DATABASE_URL"])
    name = url.path.lstrip("/")
    admin = psycopg2.connect(url._replace(path="/postgres").geturl())
    admin.autocommit = True
    with admin.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        cursor.execute(f'CREATE DATABASE "{name}"')
    admin.close()


def cpu_seconds() -> float:
    """This process's user + system CPU seconds so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
