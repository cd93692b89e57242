"""The assignment counters append deltas on PostgreSQL (``StageAssignmentCountDelta``).

Migration 0016's triggers upserted one row per (stage, status): concurrent accepts,
submits, returns, expiries and decisions updated the same few rows, each holding its
row locks to the end of its transaction, and met the HIT and worker locks in opposite
orders (deadlocks; CI saw 500s). The same three triggers (their functions replaced)
now insert one delta row per (stage, status) a statement moved, and update nothing
shared. ``campaigns.work.counts.stage_assignment_counts_compact`` folds the deltas into
the counter rows; reads sum both (``campaigns.work.selectors.counts``).

The deltas have no foreign key in the database (its check would share-lock the stage's
row in every accept and submit): a fourth trigger, after a delete on ``campaigns_stage``,
deletes the deleted stages' counters and deltas (Django deletes a stage's assignments,
whose trigger appends deltas, before the stage itself).

SQLite keeps 0016's row-level triggers, which update the counter rows: it runs one
writer at a time, so there is no contention to avoid, and a direct update is the
cheapest. Its delta table stays empty.

Reversing folds the pending deltas into the counter rows (assignments locked against
writes meanwhile) and restores 0016's functions.
"""

from importlib import import_module

from django.db import migrations, models

shared = import_module("campaigns.migrations._shared")

DELTAS = "campaigns_stageassignmentcountdelta"

POSTGRESQL = [
    f"""
CREATE OR REPLACE FUNCTION campaigns_assignment_counts_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {DELTAS} (stage_id, status, n, changes)
    SELECT h.stage_id, r.status, count(*), count(*)
    FROM new_rows r JOIN campaigns_hit h ON h.id = r.hit_id
    GROUP BY h.stage_id, r.status;
    RETURN NULL;
END $$""",
    f"""
CREATE OR REPLACE FUNCTION campaigns_assignment_counts_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
{shared.ASSIGNMENTS_MOVED}
    INSERT INTO {DELTAS} (stage_id, status, n, changes)
    SELECT stage_id, status, sum(d), count(*) FROM delta GROUP BY stage_id, status;
    RETURN NULL;
END $$""",
    f"""
CREATE OR REPLACE FUNCTION campaigns_assignment_counts_delete() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {DELTAS} (stage_id, status, n, changes)
    SELECT h.stage_id, r.status, -count(*), count(*)
    FROM old_rows r JOIN campaigns_hit h ON h.id = r.hit_id
    GROUP BY h.stage_id, r.status;
    RETURN NULL;
END $$""",
    f"""
CREATE FUNCTION campaigns_stage_counts_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM campaigns_stageassignmentcount c USING old_rows s WHERE c.stage_id = s.id;
    DELETE FROM {DELTAS} d USING old_rows s WHERE d.stage_id = s.id;
    RETURN NULL;
END $$""",
    """CREATE TRIGGER campaigns_stage_counts_delete AFTER DELETE ON campaigns_stage
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION campaigns_stage_counts_delete()""",
]

FOLD = f"""
INSERT INTO campaigns_stageassignmentcount AS c (stage_id, status, n, changes)
SELECT d.stage_id, d.status, sum(d.n), sum(d.changes) FROM {DELTAS} d
WHERE EXISTS (SELECT 1 FROM campaigns_stage s WHERE s.id = d.stage_id)
GROUP BY d.stage_id, d.status ORDER BY 1, 2
ON CONFLICT (stage_id, status) DO UPDATE
SET n = c.n + EXCLUDED.n, changes = c.changes + EXCLUDED.changes
"""


def _upserting() -> list[str]:
    """0016's three trigger functions, as ``CREATE OR REPLACE``."""
    wave_three = import_module("campaigns.migrations.0016_wave_three")
    return [
        sql.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)
        for sql in wave_three.POSTGRESQL
        if "CREATE FUNCTION campaigns_assignment_counts_" in sql
    ]


POSTGRESQL_REVERSE = [
    "LOCK TABLE campaigns_assignment IN SHARE MODE",
    FOLD,
    f"DELETE FROM {DELTAS}",
    "DROP TRIGGER IF EXISTS campaigns_stage_counts_delete ON campaigns_stage",
    "DROP FUNCTION IF EXISTS campaigns_stage_counts_delete()",
]


def deltas_on(apps, schema_editor) -> None:
    shared.run_on_postgresql(POSTGRESQL, schema_editor)


def deltas_off(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        shared.run([*POSTGRESQL_REVERSE, *_upserting()], schema_editor)


class Migration(migrations.Migration):
    dependencies = [
        ("campaigns", "0016_wave_three"),
    ]

    operations = [
        shared.counter_model(
            "StageAssignmentCountDelta",
            [
                ("status", models.CharField(max_length=16)),
                ("n", models.BigIntegerField()),
                ("changes", models.BigIntegerField()),
            ],
            indexes=[models.Index(fields=["stage"], name="countdelta_stage")],
        ),
        migrations.RunPython(deltas_on, deltas_off),
    ]
