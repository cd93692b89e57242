"""The assignments' update trigger reads only the HITs of the rows it counts (PostgreSQL).

Migration 0022's ``campaigns_assignment_summaries_update``, for more than one row, joins
the changed rows with ``campaigns_hit`` twice (the new and the old HIT of each row). For
a batch of decisions (1,000 rows of ~200 HITs) the planner hashed the whole HIT table
for each join: two sequential scans of every HIT of every campaign per statement, about
a third of the trigger's time in the review rules' bench (20,000 HITs), and growing with
the HIT table, not with the rows updated. Now the statement reads the HITs named by the
changed rows once, by their primary key (``id = ANY (ARRAY(…))``), and joins both sides
with that: the same rows, so the same sums.

Only the function's text changes (read back from the catalogue, its HIT join replaced);
reversing puts 0022's text back.
"""

from django.db import migrations

FUNCTION = "campaigns_assignment_summaries_update"
OLD = (
    "m AS MATERIALIZED (SELECT c.*, h.stage_id AS r_stage, h.reward AS r_reward, "
    "g.stage_id AS o_stage, g.reward AS o_reward FROM c "
    "LEFT JOIN campaigns_hit h ON h.id = c.rh LEFT JOIN campaigns_hit g ON g.id = c.oh)"
)
NEW = (
    "hits AS MATERIALIZED (SELECT h.id, h.stage_id, h.reward FROM campaigns_hit h "
    "WHERE h.id = ANY (ARRAY(SELECT c.rh FROM c UNION SELECT c.oh FROM c))), "
    "m AS MATERIALIZED (SELECT c.*, h.stage_id AS r_stage, h.reward AS r_reward, "
    "g.stage_id AS o_stage, g.reward AS o_reward FROM c "
    "LEFT JOIN hits h ON h.id = c.rh LEFT JOIN hits g ON g.id = c.oh)"
)


def _replace(schema_editor, old: str, new: str) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT prosrc FROM pg_proc WHERE proname = %s", [FUNCTION])
        row = cursor.fetchone()
    if row is None:
        raise LookupError(FUNCTION)
    (source,) = row
    # The statement is in the body twice: run through EXECUTE above 0021's size, planned
    # once below it.
    if source.count(old) != 2 or "$fn$" in source:
        raise ValueError(f"unexpected body of {FUNCTION}()")
    schema_editor.execute(
        f"CREATE OR REPLACE FUNCTION {FUNCTION}() RETURNS trigger LANGUAGE plpgsql "
        f"AS $fn${source.replace(old, new)}$fn$",
        params=None,
    )


def forward(apps, schema_editor) -> None:
    _replace(schema_editor, OLD, NEW)


def backward(apps, schema_editor) -> None:
    _replace(schema_editor, NEW, OLD)


class Migration(migrations.Migration):
    dependencies = [
        ("campaigns", "0024_workers_table"),
    ]

    operations = [
        migrations.RunPython(forward, backward, elidable=False),
    ]
