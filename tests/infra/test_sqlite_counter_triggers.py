"""The embedded default (SQLite) keeps its assignment counters' triggers to the last
migration (0023): 0020 remade ``campaigns_assignment`` on SQLite, which dropped 0016's
triggers, and the campaign page, the progress API and the review queue showed no work.

A fresh SQLite file migrated as ``make run`` migrates it, in a child process (this suite's
own database is PostgreSQL); then assignments made, moved and deleted through the ORM,
and the counters read as the pages read them.
"""

from __future__ import annotations

import json
import sqlite3
from importlib import import_module
from pathlib import Path

import pytest

from tests.infra.conftest import clean_env, run_in_repo

wave_three = import_module("campaigns.migrations.0016_wave_three")

SCRIPT = """
import json
import django
django.setup()
from campaigns.work.selectors.counts import (
    stage_assignment_counts, stage_assignment_counts_full,
)
from django.utils import timezone
from tests.factories import AssignmentFactory, HITFactory, StageFactory

stage = StageFactory()
hits = [HITFactory(stage=stage) for _ in range(3)]
made = [AssignmentFactory(hit=hit) for hit in hits for _ in range(2)]
for one, status in ((made[0], "submitted"), (made[1], "approved")):
    one.status, one.submitted_at = status, timezone.now()
    one.save(update_fields=["status", "submitted_at"])
made[2].delete()
print(json.dumps([
    stage_assignment_counts(stage_ids=[stage.pk]).get(stage.pk, {}),
    stage_assignment_counts_full(stage_ids=[stage.pk]).get(stage.pk, {}),
]))
"""


def _names(wanted: list[str]) -> set[str]:
    return {sql.split()[2] for sql in wanted}


@pytest.mark.slow(seconds=20)
def test_a_fresh_sqlite_database_counts_its_assignments(tmp_path: Path) -> None:
    database = tmp_path / "embedded.sqlite3"
    env = clean_env(DEBUG="1", DATABASE_URL=f"sqlite:///{database}")
    migrate = run_in_repo("manage.py", "migrate", "--no-input", "-v", "0", env=env, timeout=300)
    assert migrate.returncode == 0, migrate.stderr[-3000:]
    with sqlite3.connect(database) as db:
        present = {
            row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        }
    assert _names(wave_three.SQLITE) <= present, present

    env["DJANGO_SETTINGS_MODULE"] = "qaportal.settings"
    counted = run_in_repo("-c", SCRIPT, env=env, timeout=300)
    assert counted.returncode == 0, counted.stderr[-3000:]
    kept, full = json.loads(counted.stdout.strip().splitlines()[-1])
    assert kept == full
    assert sum(full.values()) == 5
