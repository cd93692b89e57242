"""Per-stage assignment counts by status, kept by triggers on ``campaigns_assignment``.

PostgreSQL: three statement-level triggers with transition tables, so a statement that
decides 100,000 assignments writes each counter row once (a row-level trigger would
update the same row 100,000 times in one transaction). SQLite: row-level triggers.
A delete only decrements rows that exist: Django may delete a stage's counters before
its assignments, and nothing is to be re-created then. The rows are filled from the
assignments already there.
"""

from django.db import migrations, models

POSTGRESQL = [
    """
CREATE FUNCTION campaigns_assignment_counts_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO campaigns_stageassignmentcount (stage_id, status, n, changes)
    SELECT h.stage_id, r.status, count(*), count(*)
    FROM new_rows r JOIN campaigns_hit h ON h.id = r.hit_id
    GROUP BY h.stage_id, r.status ORDER BY 1, 2
    ON CONFLICT (stage_id, status) DO UPDATE SET n = campaigns_stageassignmentcount.n + EXCLUDED.n,
        changes = campaigns_stageassignmentcount.changes + EXCLUDED.changes;
    RETURN NULL;
END $$""",
    """
CREATE FUNCTION campaigns_assignment_counts_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH moved AS (
        SELECT o.hit_id AS old_hit, o.status AS old_status, r.hit_id AS new_hit,
               r.status AS new_status
        FROM old_rows o JOIN new_rows r ON r.id = o.id
        WHERE o.status <> r.status OR o.hit_id <> r.hit_id
    ), delta AS (
        SELECT h.stage_id, m.new_status AS status, 1 AS d
        FROM moved m JOIN campaigns_hit h ON h.id = m.new_hit
        UNION ALL
        SELECT h.stage_id, m.old_status, -1
        FROM moved m JOIN campaigns_hit h ON h.id = m.old_hit
    )
    INSERT INTO campaigns_stageassignmentcount (stage_id, status, n, changes)
    SELECT stage_id, status, sum(d), count(*) FROM delta
    GROUP BY stage_id, status ORDER BY 1, 2
    ON CONFLICT (stage_id, status) DO UPDATE SET n = campaigns_stageassignmentcount.n + EXCLUDED.n,
        changes = campaigns_stageassignmentcount.changes + EXCLUDED.changes;
    RETURN NULL;
END $$""",
    """
CREATE FUNCTION campaigns_assignment_counts_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE campaigns_stageassignmentcount c SET n = c.n - g.n, changes = c.changes + g.n
    FROM (
        SELECT h.stage_id, r.status, count(*) AS n
        FROM old_rows r JOIN campaigns_hit h ON h.id = r.hit_id
        GROUP BY h.stage_id, r.status
    ) g
    WHERE c.stage_id = g.stage_id AND c.status = g.status;
    RETURN NULL;
END $$""",
    """CREATE TRIGGER campaigns_assignment_counts_insert AFTER INSERT ON campaigns_assignment
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION campaigns_assignment_counts_insert()""",
    """CREATE TRIGGER campaigns_assignment_counts_update AFTER UPDATE ON campaigns_assignment
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION campaigns_assignment_counts_update()""",
    """CREATE TRIGGER campaigns_assignment_counts_delete AFTER DELETE ON campaigns_assignment
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION campaigns_assignment_counts_delete()""",
]
POSTGRESQL_REVERSE = [
    "DROP TRIGGER IF EXISTS campaigns_assignment_counts_insert ON campaigns_assignment",
    "DROP TRIGGER IF EXISTS campaigns_assignment_counts_update ON campaigns_assignment",
    "DROP TRIGGER IF EXISTS campaigns_assignment_counts_delete ON campaigns_assignment",
    "DROP FUNCTION IF EXISTS campaigns_assignment_counts_insert()",
    "DROP FUNCTION IF EXISTS campaigns_assignment_counts_update()",
    "DROP FUNCTION IF EXISTS campaigns_assignment_counts_delete()",
]


SQLITE_ADD = (
    "INSERT INTO campaigns_stageassignmentcount (stage_id, status, n, changes) "
    "SELECT stage_id, NEW.status, 1, 1 FROM campaigns_hit WHERE id = NEW.hit_id "
    "ON CONFLICT (stage_id, status) DO UPDATE SET n = n + 1, changes = changes + 1;"
)
SQLITE_TAKE = (
    "UPDATE campaigns_stageassignmentcount SET n = n - 1, changes = changes + 1 "
    "WHERE status = OLD.status "
    "AND stage_id = (SELECT stage_id FROM campaigns_hit WHERE id = OLD.hit_id);"
)


SQLITE = [
    "CREATE TRIGGER campaigns_assignment_counts_insert AFTER INSERT ON campaigns_assignment "
    f"BEGIN {SQLITE_ADD} END",
    "CREATE TRIGGER campaigns_assignment_counts_update AFTER UPDATE OF status, hit_id "
    "ON campaigns_assignment WHEN OLD.status <> NEW.status OR OLD.hit_id <> NEW.hit_id "
    f"BEGIN {SQLITE_TAKE} {SQLITE_ADD} END",
    "CREATE TRIGGER campaigns_assignment_counts_delete AFTER DELETE ON campaigns_assignment "
    f"BEGIN {SQLITE_TAKE} END",
]
SQLITE_REVERSE = [
    "DROP TRIGGER IF EXISTS campaigns_assignment_counts_insert",
    "DROP TRIGGER IF EXISTS campaigns_assignment_counts_update",
    "DROP TRIGGER IF EXISTS campaigns_assignment_counts_delete",
]

BACKFILL = (
    "INSERT INTO campaigns_stageassignmentcount (stage_id, status, n, changes) "
    "SELECT h.stage_id, a.status, count(*), count(*) FROM campaigns_assignment a "
    "JOIN campaigns_hit h ON h.id = a.hit_id GROUP BY h.stage_id, a.status"
)


def _run(statements: list[str], schema_editor) -> None:
    for sql in statements:
        schema_editor.execute(sql, params=None)


def triggers_create(apps, schema_editor) -> None:
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        _run(POSTGRESQL, schema_editor)
    elif vendor == "sqlite":
        _run(SQLITE, schema_editor)
    else:
        raise NotImplementedError(f"No assignment counter triggers for {vendor}.")
    schema_editor.execute(BACKFILL, params=None)


def triggers_drop(apps, schema_editor) -> None:
    vendor = schema_editor.connection.vendor
    _run(POSTGRESQL_REVERSE if vendor == "postgresql" else SQLITE_REVERSE, schema_editor)


class Migration(migrations.Migration):
    dependencies = [
        ("campaigns", "0017_instructions_follow_settings"),
    ]

    operations = [
        migrations.CreateModel(
            name="StageAssignmentCount",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("status", models.CharField(max_length=16)),
                ("n", models.BigIntegerField(default=0)),
                ("changes", models.BigIntegerField(default=0)),
                (
                    "stage",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=models.deletion.CASCADE,
                        related_name="assignment_counts",
                        to="campaigns.stage",
                    ),
                ),
            ],
            options={
                "default_manager_name": "not_dumped",
                "constraints": [
                    models.UniqueConstraint(
                        fields=("stage", "status"), name="stageassignmentcount_unique"
                    )
                ],
            },
        ),
        migrations.AlterModelManagers(
            name="stageassignmentcount",
            managers=[("not_dumped", models.Manager())],
        ),
        migrations.RunPython(triggers_create, triggers_drop),
    ]
