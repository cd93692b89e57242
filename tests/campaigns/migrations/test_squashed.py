"""The squashed 0001-0013: a database migrated with the old files has only 0014 left to do."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.recorder import MigrationRecorder

pytestmark = pytest.mark.django_db

SQUASHED = ("campaigns", "0001_squashed_0013")
LATEST = ("campaigns", "0014_provider_choices_from_registry")
# The released files the squash replaces, as django_migrations names them in running databases.
RELEASED = [
    "0001_initial",
    "0002_local_workforce",
    "0003_detached_answers",
    "0004_hit_places_left",
    "0005_provider_credentials",
    "0006_api",
    "0007_export_audit",
    "0008_provider_sync_cursor",
    "0009_background_jobs",
    "0010_campaign_bonus_max",
    "0011_datasheet_and_export_contents",
    "0012_stage_show_reward_to_local_workers",
    "0013_assignment_no_single_column_fk_indexes",
]


def _record_as_released_at_0013() -> None:
    """Make django_migrations say what a database migrated with the old files says."""
    recorder = MigrationRecorder(connection)
    recorder.migration_qs.filter(app="campaigns").delete()
    for name in RELEASED:
        recorder.record_applied("campaigns", name)


def test_the_squash_replaces_the_released_files():
    executor = MigrationExecutor(connection)
    squash = executor.loader.disk_migrations[SQUASHED]
    assert squash.replaces == [("campaigns", name) for name in RELEASED]
    assert executor.loader.disk_migrations[LATEST].dependencies == [SQUASHED]


def test_a_database_at_0013_has_only_0014_to_do():
    _record_as_released_at_0013()
    executor = MigrationExecutor(connection)
    assert SQUASHED in executor.loader.applied_migrations
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    after = [(m.app_label, m.name, backwards) for m, backwards in plan]
    # What came after the released 0013: 0014 first, then any later migration.
    assert after[0] == (*LATEST, False)
    assert all(label == "campaigns" and name > LATEST[1] for label, name, _ in after[1:])


def test_migrate_records_the_squash_for_a_database_at_0013():
    _record_as_released_at_0013()
    recorder = MigrationRecorder(connection)
    # The test database has every later migration's tables: record them applied too.
    later = MigrationExecutor(connection).loader.disk_migrations
    for (label, name), migration in later.items():
        if label == "campaigns" and name >= LATEST[1]:
            # A later squash counts as applied only when the files it replaces are recorded.
            for replaced_label, replaced_name in [*migration.replaces, (label, name)]:
                recorder.record_applied(replaced_label, replaced_name)
    call_command("migrate", "campaigns", interactive=False, verbosity=0, stdout=io.StringIO())
    applied = set(recorder.applied_migrations())
    assert SQUASHED in applied
    assert {("campaigns", name) for name in RELEASED} <= applied


def test_the_models_need_no_new_migration(settings):
    # With routers, makemigrations checks every database a router migrates: the tests'
    # replica copy (tests/dbrouter.py) is created only for the tests that ask for it.
    settings.DATABASE_ROUTERS = []
    out = io.StringIO()
    call_command("makemigrations", "campaigns", check=True, dry_run=True, stdout=out)
    assert "No changes detected" in out.getvalue()
