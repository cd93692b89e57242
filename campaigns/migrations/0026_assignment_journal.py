# ruff: noqa: S608 (constant SQL built from the constants of this file and 0022's)
"""A worker's write appends one summary row, not up to five (PostgreSQL; issues 31, 39
items 4-5).

Migration 0022's one-row path of the assignments' triggers inserted a delta into each
summary the write moved: an accept three rows (``StageAssignmentCountDelta``,
``StageWorkerCount``, ``StageHeldWork``), a submission five (the counts' and the
worker's counts' two sides each, ``StageSubmissionMinute``), each with its index entries
(ten and fourteen): most of what the triggers cost a worker cycle. Now a one-row insert
or delete, and a one-row update that keeps the assignment's HIT and worker (every worker
request, a single decision), append one ``StageAssignmentJournal`` row saying what moved
(status left and entered, held work, handed-in minutes), with two index entries. Readers
add the journal rows of their stages to the summaries in the same statement
(``campaigns.work.selectors.counts``); compaction folds them into the summaries
(``campaigns.work.counts.stage_assignment_journal_fold``). A one-row update that moves an
assignment to another HIT or worker, and every statement of many rows, write the
summaries as before.

Only the trigger functions' one-row branches change (read back from the catalogue, the
block replaced); a trigger after a delete on ``campaigns_stage`` deletes the deleted
stages' journal rows. Reversing locks the assignments against writes, folds the journal
into the summaries, and puts 0022's blocks back.
"""

from importlib import import_module

from django.db import migrations, models

shared = import_module("campaigns.migrations._shared")
plans = import_module("campaigns.migrations.0021_trigger_plans")
merge = import_module("campaigns.migrations.0022_trigger_merge")

JOURNAL = "campaigns_stageassignmentjournal"
COLUMNS = "stage_id, worker_id, old_status, new_status, held, reward, old_minute, new_minute"
NO_ENTRY = merge.NO_ENTRY.format(id="one_.id")
COUNTED = f"one_.status IN {merge.HANDED_IN} AND one_.submitted_at IS NOT NULL"

# One row inserted (``sign_`` 1) or deleted (-1): ``one_`` the row with its HIT's stage
# and reward, as 0022 reads it. Replaces 0022's ``_ONE_ROW``.
ONE_ROW = f"""
    IF one_.stage_id IS NULL THEN
        RETURN NULL;
    END IF;
    INSERT INTO {JOURNAL} ({COLUMNS})
    VALUES (one_.stage_id, one_.worker_id,
            CASE WHEN sign_ < 0 THEN one_.status END, CASE WHEN sign_ > 0 THEN one_.status END,
            CASE WHEN one_.status IN {merge.HELD} AND {NO_ENTRY} THEN sign_ ELSE 0 END,
            one_.reward,
            CASE WHEN sign_ < 0 AND {COUNTED} THEN date_trunc('minute', one_.submitted_at) END,
            CASE WHEN sign_ > 0 AND {COUNTED} THEN date_trunc('minute', one_.submitted_at) END);
    RETURN NULL;
"""

# One row updated, its HIT and worker kept: inserted into 0022's ``_ONE_UPDATE`` after
# its flags and the HIT's read, before its first summary. Each column says what 0022's
# inserts would (their sides meet in one stage, so they are one row's two sides).
UPDATE_ANCHOR = "    IF moved_ THEN\n        INSERT INTO campaigns_stageassignmentcountdelta"
ONE_UPDATE = f"""    IF one_.oh = one_.rh AND one_.ow = one_.rw THEN
        IF r_stage_ IS NOT NULL THEN
            INSERT INTO {JOURNAL} ({COLUMNS})
            VALUES (r_stage_, one_.rw,
                    CASE WHEN moved_ THEN one_.os END, CASE WHEN moved_ THEN one_.rs END,
                    CASE WHEN (held_in_ OR held_out_) AND {NO_ENTRY}
                         THEN CASE WHEN held_in_ THEN 1 ELSE -1 END ELSE 0 END,
                    r_reward_,
                    CASE WHEN minutes_ AND counted_o_ THEN date_trunc('minute', one_.osub) END,
                    CASE WHEN minutes_ AND counted_r_ THEN date_trunc('minute', one_.rsub) END);
        END IF;
        RETURN NULL;
    END IF;
"""

# The journal's rows (all, or ``{where}``) deleted and added to the summaries, grouped,
# in one statement: ``campaigns.work.counts``' fold, as it was when this was written.
FOLD = f"""
WITH j AS (DELETE FROM {JOURNAL} d {{where}} RETURNING d.*),
s AS MATERIALIZED (SELECT j.* FROM j WHERE j.stage_id IN (SELECT id FROM campaigns_stage)),
sides AS MATERIALIZED (
    SELECT stage_id, worker_id, new_status AS status, 1 AS n FROM s WHERE new_status IS NOT NULL
    UNION ALL
    SELECT stage_id, worker_id, old_status, -1 FROM s WHERE old_status IS NOT NULL),
counts AS (INSERT INTO campaigns_stageassignmentcountdelta (stage_id, status, n, changes)
    SELECT stage_id, status, sum(n), count(*) FROM sides GROUP BY 1, 2 ORDER BY 1, 2),
workers AS (INSERT INTO campaigns_stageworkercount (stage_id, worker_id, status, n, folded)
    SELECT stage_id, worker_id, status, sum(n), false FROM sides GROUP BY 1, 2, 3
    HAVING sum(n) <> 0),
held AS (INSERT INTO campaigns_stageheldwork (stage_id, n, reward)
    SELECT stage_id, sum(held), sum(held * reward) FROM s WHERE held <> 0 GROUP BY 1
    HAVING sum(held) <> 0 OR sum(held * reward) <> 0),
minutes AS (INSERT INTO campaigns_stagesubmissionminute (stage_id, minute, n)
    SELECT stage_id, minute, sum(n) FROM (
        SELECT stage_id, new_minute AS minute, 1 AS n FROM s WHERE new_minute IS NOT NULL
        UNION ALL
        SELECT stage_id, old_minute, -1 FROM s WHERE old_minute IS NOT NULL) m
    GROUP BY 1, 2 HAVING sum(n) <> 0)
SELECT count(*) FROM j
"""

# Sized as 0021 sizes every transition-table trigger (planned for the rows at hand
# above a few).
STAGE_DELETE = [
    "CREATE FUNCTION campaigns_stage_journal_delete() RETURNS trigger LANGUAGE plpgsql AS $fn$"
    + plans._sized(
        [f"DELETE FROM {JOURNAL} j USING old_rows s WHERE j.stage_id = s.id"], "old_rows"
    )
    + "$fn$",
    shared.statement_trigger("campaigns_stage", "campaigns_stage_journal", "DELETE"),
]
STAGE_DELETE_REVERSE = [
    "DROP TRIGGER IF EXISTS campaigns_stage_journal_delete ON campaigns_stage",
    "DROP FUNCTION IF EXISTS campaigns_stage_journal_delete()",
]


def _replace(schema_editor, name: str, old: str, new: str) -> None:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT prosrc FROM pg_proc WHERE proname = %s", [name])
        row = cursor.fetchone()
    if row is None:
        raise LookupError(name)
    (source,) = row
    if source.count(old) != 1 or "$fn$" in source:
        raise ValueError(f"unexpected body of {name}()")
    schema_editor.execute(
        f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql "
        f"AS $fn${source.replace(old, new)}$fn$",
        params=None,
    )


def _blocks(forward: bool) -> list[tuple[str, str, str]]:
    """(function, old text, new text) for each replacement, in the given direction."""
    pairs = [
        ("campaigns_assignment_summaries_insert", merge._ONE_ROW, ONE_ROW),
        ("campaigns_assignment_summaries_delete", merge._ONE_ROW, ONE_ROW),
        ("campaigns_assignment_summaries_update", UPDATE_ANCHOR, ONE_UPDATE + UPDATE_ANCHOR),
    ]
    return [(name, old, new) if forward else (name, new, old) for name, old, new in pairs]


def journal_on(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for name, old, new in _blocks(forward=True):
        _replace(schema_editor, name, old, new)
    shared.run(STAGE_DELETE, schema_editor)


def journal_off(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    # No write may append to the journal between the fold and the functions' change.
    schema_editor.execute("LOCK TABLE campaigns_assignment IN SHARE MODE", params=None)
    for name, old, new in _blocks(forward=False):
        _replace(schema_editor, name, old, new)
    shared.run([FOLD.format(where=""), *STAGE_DELETE_REVERSE], schema_editor)


class Migration(migrations.Migration):
    dependencies = [
        ("campaigns", "0025_trigger_hits"),
    ]

    operations = [
        shared.counter_model(
            "StageAssignmentJournal",
            [
                ("old_status", models.CharField(max_length=16, null=True)),
                ("new_status", models.CharField(max_length=16, null=True)),
                ("held", models.SmallIntegerField(default=0)),
                ("reward", models.DecimalField(decimal_places=2, default=0, max_digits=14)),
                ("old_minute", models.DateTimeField(null=True)),
                ("new_minute", models.DateTimeField(null=True)),
            ],
            keys=("stage", "worker"),
            indexes=[models.Index(fields=["stage", "worker"], name="assignmentjournal_stage")],
        ),
        migrations.RunPython(journal_on, journal_off, elidable=False),
    ]
