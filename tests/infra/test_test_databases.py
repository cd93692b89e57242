"""The suite's own test databases (tests/pgbackend): each is a copy of one migrated
template, and the flush after a transactional test (DELETE, no trigger) empties every
table as Django's TRUNCATE did, then Django's post_migrate refills what it always did."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import connection, connections
from django.db.migrations.executor import MigrationExecutor

from campaigns.models import (
    Assignment,
    StageAssignmentCount,
    StageAssignmentCountDelta,
    StageAssignmentJournal,
)
from tests.helpers import local_pipeline, submitted_assignment


@pytest.mark.django_db(databases=["default", "replica"])
def test_both_aliases_are_migrated_to_the_latest_migration() -> None:
    for alias in ("default", "replica"):
        executor = MigrationExecutor(connections[alias])
        targets = executor.loader.graph.leaf_nodes()
        assert executor.migration_plan(targets) == [], alias
        assert connections[alias].settings_dict["NAME"].startswith("test_")
    assert (
        connections["default"].settings_dict["NAME"] != connections["replica"].settings_dict["NAME"]
    )


@pytest.mark.django_db(transaction=True)
def test_the_flush_empties_every_table_and_post_migrate_refills_its_own(requester) -> None:
    _campaign, writing, _ = local_pipeline(requester, slug="flushed")
    submitted_assignment(writing)
    assert Assignment.objects.exists()
    # Rows the counters' triggers wrote (a journal row, a delta, or a compacted count).
    assert (
        StageAssignmentJournal.objects.exists()
        or StageAssignmentCountDelta.objects.exists()
        or StageAssignmentCount.objects.exists()
    )
    content_types = ContentType.objects.count()
    permissions = Permission.objects.count()

    call_command("flush", verbosity=0, interactive=False, reset_sequences=False)

    with connection.cursor() as cursor:
        filled = []
        for table in connection.introspection.django_table_names(
            only_existing=True, include_views=False
        ):
            cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {connection.ops.quote_name(table)})")
            if cursor.fetchone()[0]:
                filled.append(table)
        # Triggers are on again after the flush's transaction.
        cursor.execute("SHOW session_replication_role")
        assert cursor.fetchone()[0] == "origin"
    assert sorted(filled) == ["auth_permission", "django_content_type"]
    assert ContentType.objects.count() == content_types
    assert Permission.objects.count() == permissions
