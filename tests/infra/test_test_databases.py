"""The suite's own test databases (tests/pgbackend): each is a copy of one migrated
template, and the flush after a transactional test (DELETE, no trigger) empties every
table as Django's TRUNCATE did, then Django's post_migrate refills what it always did;
between tests (tests/flush) content types and permissions are kept when they are as
post_migrate made them, and made again by it when a test changed them."""

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
from tests.factories import UserFactory
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


def _flush_between_tests() -> None:
    """The flush as pytest-django's TransactionTestCase runs it after each test."""
    call_command(
        "flush",
        verbosity=0,
        interactive=False,
        reset_sequences=False,
        allow_cascade=False,
        inhibit_post_migrate=False,
    )


def _made_rows() -> tuple[list[tuple], list[tuple]]:
    content_types = list(ContentType.objects.order_by("pk").values_list("pk", "app_label", "model"))
    permissions = list(
        Permission.objects.order_by("pk").values_list("pk", "content_type_id", "codename", "name")
    )
    return content_types, permissions


def _filled_tables() -> list[str]:
    filled = []
    with connection.cursor() as cursor:
        for table in connection.introspection.django_table_names(
            only_existing=True, include_views=False
        ):
            cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {connection.ops.quote_name(table)})")
            if cursor.fetchone()[0]:
                filled.append(table)
    return sorted(filled)


@pytest.mark.django_db(transaction=True)
def test_between_tests_intact_content_types_and_permissions_are_kept_not_made_again() -> None:
    _flush_between_tests()  # whatever the earlier tests left: Django's post_migrate made these
    made = _made_rows()
    ContentType.objects.clear_cache()
    requester = UserFactory.create(username="alice")
    requester.user_permissions.add(Permission.objects.get(codename="view_campaign"))
    _campaign, writing, _ = local_pipeline(requester, slug="kept")
    submitted_assignment(writing)

    _flush_between_tests()

    assert _filled_tables() == ["auth_permission", "django_content_type"]
    assert _made_rows() == made  # the same rows, ids included: not deleted and made again


@pytest.mark.django_db(transaction=True)
def test_between_tests_changed_content_types_or_permissions_are_made_again() -> None:
    _flush_between_tests()
    made_content_types, made_permissions = _made_rows()
    kinds = {(app, model) for _pk, app, model in made_content_types}
    codenames = sorted(codename for _pk, _ct, codename, _name in made_permissions)
    campaign = ContentType.objects.get(app_label="campaigns", model="campaign")

    # A test added a permission, renamed one and removed a content type (with its
    # permissions): the flush after it is Django's, and post_migrate makes them again.
    Permission.objects.create(content_type=campaign, codename="fly_campaign", name="Can fly")
    Permission.objects.filter(codename="view_campaign").update(name="Can peek at campaign")
    ContentType.objects.filter(app_label="linking").first().delete()  # type: ignore[union-attr]
    ContentType.objects.clear_cache()

    _flush_between_tests()

    content_types, permissions = _made_rows()
    assert _filled_tables() == ["auth_permission", "django_content_type"]
    assert {(app, model) for _pk, app, model in content_types} == kinds
    assert sorted(codename for _pk, _ct, codename, _name in permissions) == codenames
    assert Permission.objects.get(codename="view_campaign").name == "Can view campaign"

    # The rows made again are the new reference: the next flush keeps them.
    _flush_between_tests()
    assert _made_rows() == (content_types, permissions)
