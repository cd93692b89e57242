"""The assignment counters' triggers again on SQLite, and the counters recounted there.

Migration 0016 put three row-level triggers on ``campaigns_assignment`` on SQLite (0017
kept them). Migration 0020 then altered the table (a constraint removed and added, a
foreign key's index dropped), which on SQLite Django does by making a new table, copying
the rows and dropping the old one; dropping a table drops its triggers. So every SQLite
database migrated past 0020, the embedded default of ``make run`` included, kept counters
that no longer moved: the campaign page, the progress API and the review queue read
``StageAssignmentCount`` and showed no work.

On SQLite this migration creates 0016's triggers anew (whatever is there of them dropped
first) and recounts the counters from the rows; each row's ``changes`` (the version the
dashboard's caches are keyed by) only grows, so no cache entry of an earlier count is
read again. PostgreSQL is left as it is (its statement-level triggers were never
dropped). ``tests/infra/test_sqlite_counter_triggers.py`` migrates a fresh
SQLite file and checks that every trigger named in 0016 is there after the last
migration: a later migration that remakes the table on SQLite has to do the same.
"""

from importlib import import_module

from django.db import migrations

shared = import_module("campaigns.migrations._shared")
wave_three = import_module("campaigns.migrations.0016_wave_three")

RECOUNT = [
    "UPDATE campaigns_stageassignmentcount SET n = 0, changes = changes + 1",
    "INSERT INTO campaigns_stageassignmentcount (stage_id, status, n, changes) "
    "SELECT h.stage_id, a.status, count(*), count(*) FROM campaigns_assignment a "
    "JOIN campaigns_hit h ON h.id = a.hit_id WHERE true GROUP BY h.stage_id, a.status "
    "ON CONFLICT (stage_id, status) DO UPDATE SET n = excluded.n, "
    "changes = campaigns_stageassignmentcount.changes + excluded.changes",
]


def triggers_again(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "sqlite":
        return
    shared.run([*wave_three.SQLITE_REVERSE, *wave_three.SQLITE, *RECOUNT], schema_editor)


class Migration(migrations.Migration):
    dependencies = [
        ("campaigns", "0022_trigger_merge"),
    ]

    operations = [
        migrations.RunPython(triggers_again, migrations.RunPython.noop),
    ]
