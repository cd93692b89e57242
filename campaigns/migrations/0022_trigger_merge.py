# ruff: noqa: S608 (constant SQL built from the constants of this file and the catalogue)
"""One trigger per write on the assignments and HITs, and a one-row path (PostgreSQL).

Migrations 0017-0019 put three statement-level triggers on each write of
``campaigns_assignment`` (the assignment counters' deltas, held work with the
submission minutes, the per-worker counts) and one on each of ``campaigns_hit``.
Each counted its transition table (0021), joined ``old_rows`` with ``new_rows`` and
the HITs again, and ran an ``INSERT … SELECT … GROUP BY`` even when the statement
changed no counted column (an answer saved, a review note): a worker's accept and
submit paid for nine such calls and about a dozen statements.

Now each write of ``campaigns_assignment`` fires one function
(``campaigns_assignment_summaries_<op>``) and an update of ``campaigns_hit`` one
(``campaigns_hit_summaries_update``). It counts the transition table once, then:

- no row: nothing;
- one row (a worker's accept, page or submit; a single decision): it reads the row (old
  and new) once, returns at once when no counted column changed, else reads its HIT(s)
  once and inserts each summary's delta from PL/pgSQL values: the rows the set-based
  statements would insert (same groups, same sums), without their joins;
- more rows (assignments): one statement reads the changed rows with their HITs once
  and inserts every summary's deltas from that read (data-modifying CTEs), instead of
  four statements each joining ``old_rows``, ``new_rows`` and the HITs again; planned
  once up to ``SMALL`` rows, through ``EXECUTE`` above (0021). HITs keep 0018's
  statements (read back from the catalogue).

One correction: held work moved between two HITs of one stage with different rewards
(its count unchanged) lost the reward's difference, 0018 keeping a group only when its
count moved; here a group is kept when its count or its reward moves.

The old triggers are dropped; their functions stay (unused) so that reversing
recreates the triggers exactly as they were.
"""

import re
from importlib import import_module

from django.db import migrations

SMALL = 8
HELD = "('accepted', 'submitted')"
HANDED_IN = "('submitted', 'approved', 'rejected')"
TABLES = {
    "insert": "NEW TABLE AS new_rows",
    "update": "OLD TABLE AS old_rows NEW TABLE AS new_rows",
    "delete": "OLD TABLE AS old_rows",
}
OLD_ASSIGNMENT = ("counts", "held", "workers")  # campaigns_assignment_<name>_<op>
NO_ENTRY = "NOT EXISTS (SELECT 1 FROM campaigns_ledgerentry e WHERE e.assignment_id = {id})"

# One row inserted or deleted: ``v`` is the row with its HIT's stage and reward, ``s``
# the sign. The statements of 0017-0019 for such a row, reduced.
_ONE_ROW = """
    IF one_.stage_id IS NULL THEN
        RETURN NULL;
    END IF;
    INSERT INTO campaigns_stageassignmentcountdelta (stage_id, status, n, changes)
    VALUES (one_.stage_id, one_.status, sign_, 1);
    INSERT INTO campaigns_stageworkercount (stage_id, worker_id, status, n, folded)
    VALUES (one_.stage_id, one_.worker_id, one_.status, sign_, false);
    IF one_.status IN {held} AND {no_entry} THEN
        INSERT INTO campaigns_stageheldwork (stage_id, n, reward)
        VALUES (one_.stage_id, sign_, sign_ * one_.reward);
    END IF;
    IF one_.status IN {handed_in} AND one_.submitted_at IS NOT NULL THEN
        INSERT INTO campaigns_stagesubmissionminute (stage_id, minute, n)
        VALUES (one_.stage_id, date_trunc('minute', one_.submitted_at), sign_);
    END IF;
    RETURN NULL;
""".format(held=HELD, handed_in=HANDED_IN, no_entry=NO_ENTRY.format(id="one_.id"))

_ONE_ROW_READ = """
    SELECT t.id, t.status, t.worker_id, t.submitted_at, h.stage_id, h.reward INTO one_
    FROM {table} t LEFT JOIN campaigns_hit h ON h.id = t.hit_id;
"""

# One row updated: ``o``/``r`` its old and new versions. Each summary's condition is
# the ``WHERE`` of its 0017-0019 statement; a side whose HIT is missing (a deferred
# foreign key) is dropped as the statement's join drops it.
_ONE_UPDATE = """
    SELECT o.id, o.status AS os, r.status AS rs, o.hit_id AS oh, r.hit_id AS rh,
           o.worker_id AS ow, r.worker_id AS rw, o.submitted_at AS osub,
           r.submitted_at AS rsub
    INTO one_ FROM old_rows o JOIN new_rows r ON r.id = o.id;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    moved_ := one_.os <> one_.rs OR one_.oh <> one_.rh;
    workers_ := moved_ OR one_.ow <> one_.rw;
    held_in_ := one_.rs IN {held} AND (one_.os NOT IN {held} OR one_.oh <> one_.rh);
    held_out_ := one_.os IN {held} AND (one_.rs NOT IN {held} OR one_.oh <> one_.rh);
    counted_o_ := one_.os IN {handed_in} AND one_.osub IS NOT NULL;
    counted_r_ := one_.rs IN {handed_in} AND one_.rsub IS NOT NULL;
    minutes_ := counted_o_ <> counted_r_ OR one_.oh <> one_.rh
        OR one_.osub IS DISTINCT FROM one_.rsub;
    IF NOT (workers_ OR held_in_ OR held_out_ OR minutes_) THEN
        RETURN NULL;
    END IF;
    SELECT h.stage_id, h.reward INTO r_stage_, r_reward_ FROM campaigns_hit h WHERE h.id = one_.rh;
    IF one_.oh = one_.rh THEN
        o_stage_ := r_stage_;
        o_reward_ := r_reward_;
    ELSE
        SELECT h.stage_id, h.reward INTO o_stage_, o_reward_ FROM campaigns_hit h
        WHERE h.id = one_.oh;
    END IF;
    IF moved_ THEN
        INSERT INTO campaigns_stageassignmentcountdelta (stage_id, status, n, changes)
        SELECT d.stage_id, d.status, sum(d.n), count(*)
        FROM (VALUES (r_stage_, one_.rs, 1), (o_stage_, one_.os, -1)) d (stage_id, status, n)
        WHERE d.stage_id IS NOT NULL GROUP BY 1, 2;
    END IF;
    IF workers_ THEN
        INSERT INTO campaigns_stageworkercount (stage_id, worker_id, status, n, folded)
        SELECT d.stage_id, d.worker_id, d.status, sum(d.n), false
        FROM (VALUES (r_stage_, one_.rw, one_.rs, 1), (o_stage_, one_.ow, one_.os, -1))
            d (stage_id, worker_id, status, n)
        WHERE d.stage_id IS NOT NULL GROUP BY 1, 2, 3 HAVING sum(d.n) <> 0;
    END IF;
    IF (held_in_ OR held_out_) AND {no_entry} THEN
        INSERT INTO campaigns_stageheldwork (stage_id, n, reward)
        SELECT d.stage_id, sum(d.n), sum(d.n * d.reward)
        FROM (VALUES (r_stage_, r_reward_, CASE WHEN held_in_ THEN 1 END),
                     (o_stage_, o_reward_, CASE WHEN held_out_ THEN -1 END))
            d (stage_id, reward, n)
        WHERE d.stage_id IS NOT NULL AND d.n IS NOT NULL GROUP BY 1
        HAVING sum(d.n) <> 0 OR sum(d.n * d.reward) <> 0;
    END IF;
    IF minutes_ AND (counted_o_ OR counted_r_) THEN
        INSERT INTO campaigns_stagesubmissionminute (stage_id, minute, n)
        SELECT d.stage_id, d.minute, sum(d.n)
        FROM (VALUES (r_stage_, date_trunc('minute', one_.rsub), CASE WHEN counted_r_ THEN 1 END),
                     (o_stage_, date_trunc('minute', one_.osub), CASE WHEN counted_o_ THEN -1 END))
            d (stage_id, minute, n)
        WHERE d.stage_id IS NOT NULL AND d.n IS NOT NULL GROUP BY 1, 2 HAVING sum(d.n) <> 0;
    END IF;
    RETURN NULL;
""".format(held=HELD, handed_in=HANDED_IN, no_entry=NO_ENTRY.format(id="one_.id"))

# Many rows inserted or deleted: one pass over the rows joined with their HITs, each
# summary grouped from it (``sign`` 1 or -1), in one statement. The same groups and sums
# as 0017-0019's four statements (each group has at least one row, so their
# ``HAVING sum(…) <> 0`` holds for all).
_MANY_ROWS = (
    "WITH s AS MATERIALIZED (SELECT t.id, t.status, t.worker_id, t.submitted_at, h.stage_id, "
    "h.reward FROM {table} t JOIN campaigns_hit h ON h.id = t.hit_id), "
    "counts AS (INSERT INTO campaigns_stageassignmentcountdelta (stage_id, status, n, changes) "
    "SELECT stage_id, status, {sign} * count(*), count(*) FROM s GROUP BY 1, 2), "
    "workers AS (INSERT INTO campaigns_stageworkercount (stage_id, worker_id, status, n, folded) "
    "SELECT stage_id, worker_id, status, {sign} * count(*), false FROM s GROUP BY 1, 2, 3), "
    "held AS (INSERT INTO campaigns_stageheldwork (stage_id, n, reward) "
    "SELECT stage_id, {sign} * count(*), {sign} * sum(reward) FROM s "
    f"WHERE status IN {HELD} AND {NO_ENTRY.format(id='s.id')} GROUP BY 1) "
    "INSERT INTO campaigns_stagesubmissionminute (stage_id, minute, n) "
    "SELECT stage_id, date_trunc('minute', submitted_at), {sign} * count(*) FROM s "
    f"WHERE status IN {HANDED_IN} AND submitted_at IS NOT NULL GROUP BY 1, 2"
)

# Many rows updated: the rows whose counted columns changed (old and new versions side by
# side, with their HITs' stages and rewards), read once; each summary's two sides from
# them with its 0017-0019 condition, grouped and filtered as there; one statement.
_SIDES = (
    "SELECT {a} FROM m WHERE {cond} AND m.r_stage IS NOT NULL "
    "UNION ALL SELECT {b} FROM m WHERE {cond} AND m.o_stage IS NOT NULL"
)
_COUNTED = "m.{t}s IN " + HANDED_IN + " AND m.{t}sub IS NOT NULL"
_MANY_UPDATES = (
    "WITH c AS (SELECT o.id, o.status AS os, r.status AS rs, o.hit_id AS oh, r.hit_id AS rh, "
    "o.worker_id AS ow, r.worker_id AS rw, o.submitted_at AS osub, r.submitted_at AS rsub "
    "FROM old_rows o JOIN new_rows r ON r.id = o.id WHERE o.status <> r.status "
    "OR o.hit_id <> r.hit_id OR o.worker_id <> r.worker_id "
    "OR o.submitted_at IS DISTINCT FROM r.submitted_at), "
    "m AS MATERIALIZED (SELECT c.*, h.stage_id AS r_stage, h.reward AS r_reward, "
    "g.stage_id AS o_stage, g.reward AS o_reward FROM c "
    "LEFT JOIN campaigns_hit h ON h.id = c.rh LEFT JOIN campaigns_hit g ON g.id = c.oh), "
    "counts AS (INSERT INTO campaigns_stageassignmentcountdelta (stage_id, status, n, changes) "
    "SELECT stage_id, status, sum(d), count(*) FROM ("
    + _SIDES.format(
        a="m.r_stage, m.rs, 1", b="m.o_stage, m.os, -1", cond="(m.os <> m.rs OR m.oh <> m.rh)"
    )
    + ") x (stage_id, status, d) GROUP BY 1, 2), "
    "workers AS (INSERT INTO campaigns_stageworkercount (stage_id, worker_id, status, n, folded) "
    "SELECT stage_id, worker_id, status, sum(d), false FROM ("
    + _SIDES.format(
        a="m.r_stage, m.rw, m.rs, 1",
        b="m.o_stage, m.ow, m.os, -1",
        cond="(m.os <> m.rs OR m.oh <> m.rh OR m.ow <> m.rw)",
    )
    + ") x (stage_id, worker_id, status, d) GROUP BY 1, 2, 3 HAVING sum(d) <> 0), "
    "held AS (INSERT INTO campaigns_stageheldwork (stage_id, n, reward) "
    "SELECT stage_id, sum(d), sum(d * reward) FROM ("
    + _SIDES.format(
        a="m.id, m.r_stage, m.r_reward, 1", b="m.id, m.o_stage, m.o_reward, -1", cond="{cond}"
    )
    .replace(
        "{cond} AND m.r_stage",
        f"m.rs IN {HELD} AND (m.os NOT IN {HELD} OR m.oh <> m.rh) AND m.r_stage",
    )
    .replace(
        "{cond} AND m.o_stage",
        f"m.os IN {HELD} AND (m.rs NOT IN {HELD} OR m.oh <> m.rh) AND m.o_stage",
    )
    + f") x (id, stage_id, reward, d) WHERE {NO_ENTRY.format(id='x.id')} "
    "GROUP BY 1 HAVING sum(d) <> 0 OR sum(d * reward) <> 0) "
    "INSERT INTO campaigns_stagesubmissionminute (stage_id, minute, n) "
    "SELECT stage_id, minute, sum(d) FROM ("
    + _SIDES.format(
        a="m.r_stage, date_trunc('minute', m.rsub), 1",
        b="m.o_stage, date_trunc('minute', m.osub), -1",
        cond="{cond}",
    )
    .replace(
        "{cond} AND m.r_stage",
        "((" + _COUNTED.format(t="o") + ") IS DISTINCT FROM (" + _COUNTED.format(t="r") + ") "
        "OR m.oh <> m.rh OR m.osub IS DISTINCT FROM m.rsub) AND "
        + _COUNTED.format(t="r")
        + " AND m.r_stage",
    )
    .replace(
        "{cond} AND m.o_stage",
        "((" + _COUNTED.format(t="o") + ") IS DISTINCT FROM (" + _COUNTED.format(t="r") + ") "
        "OR m.oh <> m.rh OR m.osub IS DISTINCT FROM m.rsub) AND "
        + _COUNTED.format(t="o")
        + " AND m.o_stage",
    )
    + ") x (stage_id, minute, d) GROUP BY 1, 2 HAVING sum(d) <> 0"
)
_MANY = {
    "insert": _MANY_ROWS.format(table="new_rows", sign=1),
    "update": _MANY_UPDATES,
    "delete": _MANY_ROWS.format(table="old_rows", sign=-1),
}


_HIT_DECLARE = """
    one_ record;
"""
# One HIT updated: its counts as 0018's ``HITS_MOVED``; its held work moves with a new
# reward or stage (0018's ``HELD_HIT_MOVED``, run as it is).
_ONE_HIT = """
    SELECT o.status AS os, r.status AS rs, o.stage_id AS ost, r.stage_id AS rst,
           o.max_assignments AS om, r.max_assignments AS rm, o.places_left AS op,
           r.places_left AS rp, o.reward AS orw, r.reward AS rrw
    INTO one_ FROM old_rows o JOIN new_rows r ON r.id = o.id;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF NOT (one_.os <> one_.rs OR one_.ost <> one_.rst OR one_.om <> one_.rm OR one_.op <> one_.rp
            OR one_.orw <> one_.rrw) THEN
        RETURN NULL;
    END IF;
    INSERT INTO campaigns_stagehitcount (stage_id, status, n, places, free, open, free_reward)
    SELECT d.stage_id, d.status, sum(d.n), sum(d.places), sum(d.free), sum(d.open),
           sum(d.free_reward)
    FROM (VALUES (one_.rst, one_.rs, 1, one_.rm, one_.rp, (one_.rp > 0)::int, one_.rp * one_.rrw),
                 (one_.ost, one_.os, -1, -1 * one_.om, -1 * one_.op, -1 * (one_.op > 0)::int,
                  -1 * one_.op * one_.orw))
        d (stage_id, status, n, places, free, open, free_reward)
    GROUP BY 1, 2
    HAVING sum(d.n) <> 0 OR sum(d.places) <> 0 OR sum(d.free) <> 0 OR sum(d.open) <> 0
        OR sum(d.free_reward) <> 0;
    IF one_.orw <> one_.rrw OR one_.ost <> one_.rst THEN
        {held_moved};
    END IF;
    RETURN NULL;
"""

_DECLARE = {
    "insert": "    one_ record;\n    sign_ int := 1;\n",
    "update": (
        "    one_ record;\n    moved_ boolean;\n    workers_ boolean;\n    held_in_ boolean;\n"
        "    held_out_ boolean;\n    counted_o_ boolean;\n    counted_r_ boolean;\n"
        "    minutes_ boolean;\n    r_stage_ bigint;\n    o_stage_ bigint;\n"
        "    r_reward_ numeric;\n    o_reward_ numeric;\n"
    ),
    "delete": "    one_ record;\n    sign_ int := -1;\n",
}
_ONE = {
    "insert": _ONE_ROW_READ.format(table="new_rows") + _ONE_ROW,
    "update": _ONE_UPDATE,
    "delete": _ONE_ROW_READ.format(table="old_rows") + _ONE_ROW,
}


def _static(source: str) -> list[str]:
    """The statements of a 0021-sized trigger body (its small branch, planned once)."""
    match = re.search(r"\nELSE\n(.*?)\nEND IF;", source, re.S)
    if match is None:
        raise ValueError(f"unexpected trigger body: {source[:200]!r}")
    plans = import_module("campaigns.migrations.0021_trigger_plans")
    return plans._statements(f"BEGIN {match.group(1)} RETURN NULL; END")


def _body(declare: str, table: str, one: str, statements: list[str]) -> str:
    for s in statements:
        if "$q$" in s:
            raise ValueError("a statement holds the quote mark $q$")
    dynamic = "\n".join(f"    EXECUTE $q${s}$q$;" for s in statements)
    static = "\n".join(f"    {s};" for s in statements)
    return (
        f"\n#variable_conflict use_column\nDECLARE\n    rows bigint;\n{declare}BEGIN\n"
        f"SELECT count(*) INTO rows FROM {table};\n"
        "IF rows = 0 THEN\n    RETURN NULL;\nEND IF;\n"
        f"IF rows = 1 THEN\n{one}\nEND IF;\n"
        f"IF rows > {SMALL} THEN\n{dynamic}\nELSE\n{static}\nEND IF;\n"
        "RETURN NULL;\nEND "
    )


def _source(cursor, name: str) -> str:
    cursor.execute("SELECT prosrc FROM pg_proc WHERE proname = %s", [name])
    row = cursor.fetchone()
    if row is None:
        raise LookupError(name)
    (source,) = row
    return source


def _function(name: str, body: str) -> str:
    return f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $fn${body}$fn$"


def _trigger(table: str, name: str, op: str) -> str:
    return (
        f"CREATE TRIGGER {name} AFTER {op.upper()} ON {table} REFERENCING {TABLES[op]} "
        f"FOR EACH STATEMENT EXECUTE FUNCTION {name}()"
    )


def merge(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    statements: list[str] = []
    with schema_editor.connection.cursor() as cursor:
        for op in TABLES:
            old = [f"campaigns_assignment_{kind}_{op}" for kind in OLD_ASSIGNMENT]
            merged = [_MANY[op]]
            table = "old_rows" if op == "delete" else "new_rows"
            name = f"campaigns_assignment_summaries_{op}"
            statements += [
                _function(name, _body(_DECLARE[op], table, _ONE[op], merged)),
                *(f"DROP TRIGGER {o} ON campaigns_assignment" for o in old),
                _trigger("campaigns_assignment", name, op),
            ]
        hits = _static(_source(cursor, "campaigns_hit_counts_update"))
    (held_moved,) = [s for s in hits if "campaigns_stageheldwork" in s]
    statements += [
        _function(
            "campaigns_hit_summaries_update",
            _body(_HIT_DECLARE, "new_rows", _ONE_HIT.format(held_moved=held_moved), hits),
        ),
        "DROP TRIGGER campaigns_hit_counts_update ON campaigns_hit",
        _trigger("campaigns_hit", "campaigns_hit_summaries_update", "update"),
    ]
    for sql in statements:
        schema_editor.execute(sql, params=None)


def unmerge(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    statements = [
        "DROP TRIGGER IF EXISTS campaigns_hit_summaries_update ON campaigns_hit",
        "DROP FUNCTION IF EXISTS campaigns_hit_summaries_update()",
        _trigger("campaigns_hit", "campaigns_hit_counts_update", "update"),
    ]
    for op in TABLES:
        name = f"campaigns_assignment_summaries_{op}"
        statements += [
            f"DROP TRIGGER IF EXISTS {name} ON campaigns_assignment",
            f"DROP FUNCTION IF EXISTS {name}()",
            *(
                _trigger("campaigns_assignment", f"campaigns_assignment_{kind}_{op}", op)
                for kind in OLD_ASSIGNMENT
            ),
        ]
    for sql in statements:
        schema_editor.execute(sql, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("campaigns", "0021_trigger_plans"),
    ]

    operations = [
        migrations.RunPython(merge, unmerge, elidable=False),
    ]
