"""What the counter migrations (0016-0019) build alike: the statement-level trigger
functions and triggers, the tables those triggers append to (an id, a stage with no
database foreign key, not dumped), and running a list of statements.

Django's migration loader skips this module (its name starts with ``_``). The migrations
using it were applied with what it builds: a change here must leave every statement
they run and every operation they declare as it is (compare ``sqlmigrate`` and the
statements their functions execute, before and after).
"""

from django.db import migrations, models
from django.db.models.deletion import DO_NOTHING

# The transition tables a statement-level trigger after each operation references.
TRANSITION_TABLES = {
    "INSERT": "NEW TABLE AS new_rows",
    "UPDATE": "OLD TABLE AS old_rows NEW TABLE AS new_rows",
    "DELETE": "OLD TABLE AS old_rows",
}

# 0016's and 0017's assignment counters: the assignments a statement moved to another
# status or HIT, as one row per (stage, status) and direction (``d``: 1 or -1).
ASSIGNMENTS_MOVED = """    WITH moved AS (
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
    )"""


def trigger_function(name: str, body: str) -> str:
    """``CREATE FUNCTION name()`` returning a trigger: ``body``, then ``RETURN NULL``."""
    return (
        f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$\n"
        f"BEGIN\n{body}\nRETURN NULL;\nEND $$"
    )


def statement_trigger(table: str, function: str, op: str) -> str:
    """The trigger ``<function>_<op>`` after ``op`` (INSERT, UPDATE or DELETE) on
    ``table``, once per statement with its transition tables, running the function of
    the same name."""
    name = f"{function}_{op.lower()}"
    return (
        f"CREATE TRIGGER {name} AFTER {op} ON {table} "
        f"REFERENCING {TRANSITION_TABLES[op]} FOR EACH STATEMENT EXECUTE FUNCTION {name}()"
    )


def run(statements: list[str], schema_editor) -> None:
    for sql in statements:
        schema_editor.execute(sql, params=None)


def run_on_postgresql(statements: list[str], schema_editor) -> None:
    """``statements`` on PostgreSQL; nothing on another database."""
    if schema_editor.connection.vendor == "postgresql":
        run(statements, schema_editor)


def big_id() -> models.BigAutoField:
    return models.BigAutoField(
        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
    )


def unconstrained_key(to: str) -> models.ForeignKey:
    """A key to ``to`` without a database constraint or index (a trigger writes it)."""
    return models.ForeignKey(
        db_constraint=False,
        db_index=False,
        on_delete=DO_NOTHING,
        related_name="+",
        to=to,
    )


def counter_model(
    name: str,
    fields: list[tuple[str, models.Field]],
    *,
    indexes: list[models.Index],
    keys: tuple[str, ...] = ("stage",),
) -> migrations.CreateModel:
    """A counter table the triggers append to: an id, ``fields``, then an unconstrained
    key to ``campaigns.<key>`` for each of ``keys``; its default manager ``not_dumped``
    (the rows are derived, not data)."""
    return migrations.CreateModel(
        name=name,
        fields=[
            ("id", big_id()),
            *fields,
            *((key, unconstrained_key(f"campaigns.{key}")) for key in keys),
        ],
        options={"default_manager_name": "not_dumped", "indexes": indexes},
        managers=[("not_dumped", models.Manager())],
    )
