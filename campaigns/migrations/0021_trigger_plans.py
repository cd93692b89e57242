"""The counters' triggers plan a statement of many rows for its size (PostgreSQL).

The statement-level triggers of migrations 0017-0019 join their transition tables
(``old_rows``, ``new_rows``) with each other and with the HITs. PL/pgSQL plans such a
statement once per connection and keeps the plan, and the planner sizes a transition
table by the rows it held at that first call. A web or Celery process's first call is a
worker's accept or submit (one row), so its nested loops were kept for every later call:
a bulk decision of 1,541 assignments on a connection that had submitted one first spent
2.6 s in the triggers (349 ms, 1,378 ms and 808 ms for the three on assignments) instead
of ~11 ms, growing with the square of the batch.

Each trigger function now counts its transition table first: up to ``SMALL`` rows it
runs its statements as before (planned once, for a few rows: the worker's requests pay
nothing more than the count); above, it runs the same statements through ``EXECUTE``,
planned for the rows at hand. The statements are the functions' own, read back from the
catalogue, so what they write is unchanged.
"""

import re

from django.db import migrations

SMALL = 8
MARK = "-- qaportal: sized plans"

_FUNCTIONS = """
SELECT DISTINCT p.proname, p.prosrc, bool_or(t.tgnewtable IS NOT NULL)
FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
WHERE NOT t.tgisinternal AND (t.tgoldtable IS NOT NULL OR t.tgnewtable IS NOT NULL)
  AND p.proname LIKE 'campaigns%%'
GROUP BY p.proname, p.prosrc
"""


def _statements(source: str) -> list[str]:
    """The statements of a body ``BEGIN <statements> RETURN NULL; END``."""
    match = re.search(r"BEGIN\s*(.*?)\s*RETURN NULL;\s*END\s*$", source, re.S)
    if match is None:
        raise ValueError(f"unexpected trigger body: {source[:200]!r}")
    return [s.strip() for s in match.group(1).split(";") if s.strip()]


def _sized(statements: list[str], table: str) -> str:
    for s in statements:
        if "$q$" in s:
            raise ValueError("a statement holds the quote mark $q$")
    dynamic = "\n".join(f"    EXECUTE $q${s}$q$;" for s in statements)
    static = "\n".join(f"    {s};" for s in statements)
    return (
        f"\n{MARK}\nDECLARE\n    rows bigint;\nBEGIN\n"
        f"SELECT count(*) INTO rows FROM {table};\n"
        f"IF rows > {SMALL} THEN\n{dynamic}\nELSE\n{static}\nEND IF;\n"
        "RETURN NULL;\nEND "
    )


def _unsized(source: str) -> str:
    match = re.search(r"\nELSE\n(.*?)\nEND IF;", source, re.S)
    if match is None:
        raise ValueError(f"unexpected trigger body: {source[:200]!r}")
    return f"\nBEGIN\n{match.group(1)}\nRETURN NULL;\nEND "


def _rewrite(forward: bool):
    def apply(apps, schema_editor) -> None:
        if schema_editor.connection.vendor != "postgresql":
            return
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(_FUNCTIONS)
            functions = cursor.fetchall()
        for name, source, has_new in functions:
            sized = MARK in source
            if forward == sized:
                continue
            if forward:
                body = _sized(_statements(source), "new_rows" if has_new else "old_rows")
            else:
                body = _unsized(source)
            schema_editor.execute(
                f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql "
                f"AS $fn${body}$fn$"
            )

    return apply


class Migration(migrations.Migration):
    dependencies = [
        ("campaigns", "0020_rules_indexes"),
    ]

    operations = [
        migrations.RunPython(_rewrite(True), _rewrite(False), elidable=False),
    ]
