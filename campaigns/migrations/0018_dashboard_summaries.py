# ruff: noqa: S608 (constant SQL built from the constants of this file)
"""Dashboard summaries (issue 39, item 2): counters for the reads of the campaign page,
the progress API, the costs page and the workers table that would otherwise read a
campaign's items, HITs, assignments or ledger entries.

All are append-only deltas: a writer INSERTs a row saying what changed, readers sum the
rows of the stages or campaign they show, and compaction (``campaigns.work.counts``,
``campaigns.payments.totals``) folds them, so no two writers ever update the same row.

- ``StageItemCount``, ``StageHITCount``, ``StageHeldWork``: written by statement-level
  PostgreSQL triggers with transition tables on ``campaigns_item``, ``campaigns_hit``,
  ``campaigns_assignment`` and ``campaigns_ledgerentry``. SQLite has no triggers here:
  its readers count the rows.
- ``LedgerStageTotal``, ``LedgerWorkerTotal``: written by ``campaigns.payments.ledger``
  (the ledger's one writer) on both databases.

Every table is filled from the rows already there.
"""

from importlib import import_module

import django.db.models.deletion
from django.db import migrations, models

shared = import_module("campaigns.migrations._shared")

HELD = "('accepted', 'submitted')"
NO_ENTRY = "NOT EXISTS (SELECT 1 FROM campaigns_ledgerentry e WHERE e.assignment_id = d.id)"


def _triggers(table: str, function: str, ops: tuple[str, ...]) -> list[str]:
    return [shared.statement_trigger(table, function, op) for op in ops]


# Items: n by (stage, status).
def _items(rows: str) -> str:
    return (
        "INSERT INTO campaigns_stageitemcount (stage_id, status, n) "
        f"SELECT stage_id, status, sum(d) FROM ({rows}) m GROUP BY 1, 2 HAVING sum(d) <> 0;"
    )


ITEMS_NEW = "SELECT stage_id, status, 1 AS d FROM new_rows"
ITEMS_OLD = "SELECT stage_id, status, -1 AS d FROM old_rows"
ITEMS_MOVED = (
    "SELECT {side}.stage_id, {side}.status, {d} AS d FROM old_rows o JOIN new_rows r "
    "ON r.id = o.id WHERE o.status <> r.status OR o.stage_id <> r.stage_id"
)


# HITs: n, places, free places, HITs with a free place by (stage, status).
def _hits(rows: str) -> str:
    return (
        "INSERT INTO campaigns_stagehitcount "
        "(stage_id, status, n, places, free, open, free_reward) "
        "SELECT stage_id, status, sum(n), sum(places), sum(free), sum(open), sum(free_reward) "
        f"FROM ({rows}) m GROUP BY 1, 2 "
        "HAVING sum(n) <> 0 OR sum(places) <> 0 OR sum(free) <> 0 OR sum(open) <> 0 "
        "OR sum(free_reward) <> 0;"
    )


HITS_SIDE = (
    "SELECT {t}.stage_id, {t}.status, {s} AS n, {s} * {t}.max_assignments AS places, "
    "{s} * {t}.places_left AS free, {s} * ({t}.places_left > 0)::int AS open, "
    "{s} * {t}.places_left * {t}.reward AS free_reward"
)
HITS_NEW = HITS_SIDE.format(t="new_rows", s=1) + " FROM new_rows"
HITS_OLD = HITS_SIDE.format(t="old_rows", s=-1) + " FROM old_rows"
HITS_CHANGED = (
    " FROM old_rows o JOIN new_rows r ON r.id = o.id WHERE o.status <> r.status "
    "OR o.stage_id <> r.stage_id OR o.max_assignments <> r.max_assignments "
    "OR o.places_left <> r.places_left OR o.reward <> r.reward"
)
HITS_MOVED = (
    HITS_SIDE.format(t="r", s=1)
    + HITS_CHANGED
    + " UNION ALL "
    + HITS_SIDE.format(t="o", s=-1)
    + HITS_CHANGED
)


# Held work: accepted or submitted assignments without a ledger entry, by stage.
def _held(rows: str) -> str:
    return (
        "INSERT INTO campaigns_stageheldwork (stage_id, n, reward) "
        "SELECT h.stage_id, sum(d.sign), sum(d.sign * h.reward) "
        f"FROM ({rows}) d JOIN campaigns_hit h ON h.id = d.hit_id WHERE {NO_ENTRY} "
        "GROUP BY h.stage_id HAVING sum(d.sign) <> 0;"
    )


HELD_NEW = f"SELECT id, hit_id, 1 AS sign FROM new_rows WHERE status IN {HELD}"
HELD_OLD = f"SELECT id, hit_id, -1 AS sign FROM old_rows WHERE status IN {HELD}"
HELD_MOVED = (
    f"SELECT r.id, r.hit_id, 1 AS sign FROM old_rows o JOIN new_rows r ON r.id = o.id "
    f"WHERE r.status IN {HELD} AND (o.status NOT IN {HELD} OR o.hit_id <> r.hit_id) "
    f"UNION ALL SELECT o.id, o.hit_id, -1 FROM old_rows o JOIN new_rows r ON r.id = o.id "
    f"WHERE o.status IN {HELD} AND (r.status NOT IN {HELD} OR o.hit_id <> r.hit_id)"
)
# A HIT's reward (or stage) changed: its held assignments move with it.
HELD_HIT_MOVED = (
    "INSERT INTO campaigns_stageheldwork (stage_id, n, reward) "
    "SELECT c.stage_id, sum(c.sign), sum(c.sign * c.reward) FROM ("
    "SELECT r.id, r.stage_id, r.reward, 1 AS sign FROM old_rows o JOIN new_rows r ON r.id = o.id "
    "WHERE o.reward <> r.reward OR o.stage_id <> r.stage_id UNION ALL "
    "SELECT o.id, o.stage_id, o.reward, -1 FROM old_rows o JOIN new_rows r ON r.id = o.id "
    "WHERE o.reward <> r.reward OR o.stage_id <> r.stage_id) c "
    f"JOIN campaigns_assignment d ON d.hit_id = c.id AND d.status IN {HELD} WHERE {NO_ENTRY} "
    "GROUP BY c.stage_id HAVING sum(c.sign) <> 0 OR sum(c.sign * c.reward) <> 0;"
)
# A ledger entry for an assignment that had none takes it out of the held work; the last
# one deleted puts it back. (``payments.ledger`` never moves an entry to another
# assignment.)
HELD_LEDGER = (
    "INSERT INTO campaigns_stageheldwork (stage_id, n, reward) "
    "SELECT h.stage_id, {sign} * count(*), {sign} * sum(h.reward) "
    "FROM (SELECT DISTINCT assignment_id FROM {rows} WHERE assignment_id IS NOT NULL) x "
    f"JOIN campaigns_assignment a ON a.id = x.assignment_id AND a.status IN {HELD} "
    "JOIN campaigns_hit h ON h.id = a.hit_id "
    "WHERE NOT EXISTS (SELECT 1 FROM campaigns_ledgerentry e "
    "WHERE e.assignment_id = x.assignment_id{others}) GROUP BY h.stage_id;"
)

# Handed-in work by (stage, minute submitted): the progress estimate's recent rate.
HANDED_IN = "('submitted', 'approved', 'rejected')"
MINUTE = "date_trunc('minute', {t}.submitted_at)"


def _minutes(rows: str) -> str:
    return (
        "INSERT INTO campaigns_stagesubmissionminute (stage_id, minute, n) "
        "SELECT h.stage_id, d.minute, sum(d.sign) "
        f"FROM ({rows}) d JOIN campaigns_hit h ON h.id = d.hit_id "
        "GROUP BY 1, 2 HAVING sum(d.sign) <> 0;"
    )


def _counted(t: str) -> str:
    return f"{t}.status IN {HANDED_IN} AND {t}.submitted_at IS NOT NULL"


MINUTES_NEW = (
    f"SELECT hit_id, {MINUTE.format(t='new_rows')} AS minute, 1 AS sign FROM new_rows "
    f"WHERE {_counted('new_rows')}"
)
MINUTES_OLD = (
    f"SELECT hit_id, {MINUTE.format(t='old_rows')} AS minute, -1 AS sign FROM old_rows "
    f"WHERE {_counted('old_rows')}"
)
MINUTES_CHANGED = (
    "FROM old_rows o JOIN new_rows r ON r.id = o.id WHERE "
    f"(({_counted('o')}) IS DISTINCT FROM ({_counted('r')}) OR o.hit_id <> r.hit_id "
    "OR o.submitted_at IS DISTINCT FROM r.submitted_at)"
)
MINUTES_MOVED = (
    f"SELECT r.hit_id, {MINUTE.format(t='r')} AS minute, 1 AS sign {MINUTES_CHANGED} "
    f"AND {_counted('r')} UNION ALL "
    f"SELECT o.hit_id, {MINUTE.format(t='o')}, -1 {MINUTES_CHANGED} AND {_counted('o')}"
)

POSTGRESQL = [
    shared.trigger_function("campaigns_item_counts_insert", _items(ITEMS_NEW)),
    shared.trigger_function(
        "campaigns_item_counts_update",
        _items(
            ITEMS_MOVED.format(side="r", d=1) + " UNION ALL " + ITEMS_MOVED.format(side="o", d=-1)
        ),
    ),
    shared.trigger_function("campaigns_item_counts_delete", _items(ITEMS_OLD)),
    *_triggers("campaigns_item", "campaigns_item_counts", ("INSERT", "UPDATE", "DELETE")),
    shared.trigger_function("campaigns_hit_counts_insert", _hits(HITS_NEW)),
    shared.trigger_function(
        "campaigns_hit_counts_update", _hits(HITS_MOVED) + "\n" + HELD_HIT_MOVED
    ),
    shared.trigger_function("campaigns_hit_counts_delete", _hits(HITS_OLD)),
    *_triggers("campaigns_hit", "campaigns_hit_counts", ("INSERT", "UPDATE", "DELETE")),
    shared.trigger_function(
        "campaigns_assignment_held_insert", _held(HELD_NEW) + "\n" + _minutes(MINUTES_NEW)
    ),
    shared.trigger_function(
        "campaigns_assignment_held_update", _held(HELD_MOVED) + "\n" + _minutes(MINUTES_MOVED)
    ),
    shared.trigger_function(
        "campaigns_assignment_held_delete", _held(HELD_OLD) + "\n" + _minutes(MINUTES_OLD)
    ),
    *_triggers("campaigns_assignment", "campaigns_assignment_held", ("INSERT", "UPDATE", "DELETE")),
    shared.trigger_function(
        "campaigns_ledger_held_insert",
        HELD_LEDGER.format(
            sign=-1,
            rows="new_rows",
            others=" AND NOT EXISTS (SELECT 1 FROM new_rows n WHERE n.id = e.id)",
        ),
    ),
    shared.trigger_function(
        "campaigns_ledger_held_delete", HELD_LEDGER.format(sign=1, rows="old_rows", others="")
    ),
    *_triggers("campaigns_ledgerentry", "campaigns_ledger_held", ("INSERT", "DELETE")),
]
POSTGRESQL_REVERSE = [
    f"DROP TRIGGER IF EXISTS {function}_{op} ON {table}"
    for table, function, ops in (
        ("campaigns_item", "campaigns_item_counts", ("insert", "update", "delete")),
        ("campaigns_hit", "campaigns_hit_counts", ("insert", "update", "delete")),
        ("campaigns_assignment", "campaigns_assignment_held", ("insert", "update", "delete")),
        ("campaigns_ledgerentry", "campaigns_ledger_held", ("insert", "delete")),
    )
    for op in ops
] + [
    f"DROP FUNCTION IF EXISTS {function}_{op}()"
    for function, ops in (
        ("campaigns_item_counts", ("insert", "update", "delete")),
        ("campaigns_hit_counts", ("insert", "update", "delete")),
        ("campaigns_assignment_held", ("insert", "update", "delete")),
        ("campaigns_ledger_held", ("insert", "delete")),
    )
    for op in ops
]

BACKFILL_POSTGRESQL = [
    "INSERT INTO campaigns_stageitemcount (stage_id, status, n) "
    "SELECT stage_id, status, count(*) FROM campaigns_item GROUP BY 1, 2",
    "INSERT INTO campaigns_stagehitcount "
    "(stage_id, status, n, places, free, open, free_reward) "
    "SELECT stage_id, status, count(*), sum(max_assignments), sum(places_left), "
    "count(*) FILTER (WHERE places_left > 0), sum(places_left * reward) "
    "FROM campaigns_hit GROUP BY 1, 2",
    "INSERT INTO campaigns_stageheldwork (stage_id, n, reward) "
    "SELECT h.stage_id, count(*), sum(h.reward) FROM campaigns_assignment d "
    f"JOIN campaigns_hit h ON h.id = d.hit_id WHERE d.status IN {HELD} AND {NO_ENTRY} "
    "GROUP BY h.stage_id",
]
BACKFILL_POSTGRESQL.append(
    "INSERT INTO campaigns_stagesubmissionminute (stage_id, minute, n) "
    "SELECT h.stage_id, date_trunc('minute', a.submitted_at), count(*) "
    "FROM campaigns_assignment a JOIN campaigns_hit h ON h.id = a.hit_id "
    f"WHERE a.submitted_at >= now() - interval '1 day' AND {_counted('a')} GROUP BY 1, 2"
)
BACKFILL_LEDGER = [
    "INSERT INTO campaigns_ledgerstagetotal (campaign_id, stage_id, kind, status, n, amount) "
    "SELECT campaign_id, stage_id, kind, status, count(*), sum(amount) "
    "FROM campaigns_ledgerentry GROUP BY 1, 2, 3, 4",
    "INSERT INTO campaigns_ledgerworkertotal (campaign_id, worker_id, kind, status, n, amount) "
    "SELECT campaign_id, worker_id, kind, status, count(*), sum(amount) "
    "FROM campaigns_ledgerentry WHERE worker_id IS NOT NULL GROUP BY 1, 2, 3, 4",
]


def summaries_create(apps, schema_editor) -> None:
    shared.run_on_postgresql(POSTGRESQL + BACKFILL_POSTGRESQL, schema_editor)
    shared.run(BACKFILL_LEDGER, schema_editor)


def summaries_drop(apps, schema_editor) -> None:
    shared.run_on_postgresql(POSTGRESQL_REVERSE, schema_editor)


def _ledger_total(name: str, key: str, *, index: list[str], **key_options):
    """A ledger total by campaign, ``key`` (a stage or a worker), kind and status."""
    return migrations.CreateModel(
        name=name,
        fields=[
            ("id", shared.big_id()),
            ("kind", models.CharField(max_length=16)),
            ("status", models.CharField(max_length=16)),
            ("n", models.BigIntegerField(default=0)),
            ("amount", models.DecimalField(decimal_places=2, default=0, max_digits=14)),
            *(
                (
                    field,
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to=f"campaigns.{field}",
                        **options,
                    ),
                )
                for field, options in (("campaign", {}), (key, key_options))
            ),
        ],
        options={
            "indexes": [models.Index(fields=index, name=f"{name.lower()}_campaign")],
        },
    )


class Migration(migrations.Migration):
    dependencies = [
        ("campaigns", "0017_counter_deltas"),
    ]

    operations = [
        _ledger_total("LedgerStageTotal", "stage", index=["campaign"], null=True),
        _ledger_total("LedgerWorkerTotal", "worker", index=["campaign", "worker"]),
        shared.counter_model(
            "StageHeldWork",
            [
                ("n", models.BigIntegerField(default=0)),
                ("reward", models.DecimalField(decimal_places=2, default=0, max_digits=14)),
            ],
            indexes=[models.Index(fields=["stage"], name="stageheldwork_stage")],
        ),
        shared.counter_model(
            "StageHITCount",
            [
                ("status", models.CharField(max_length=16)),
                ("n", models.BigIntegerField(default=0)),
                ("places", models.BigIntegerField(default=0)),
                ("free", models.BigIntegerField(default=0)),
                ("open", models.BigIntegerField(default=0)),
                ("free_reward", models.DecimalField(decimal_places=2, default=0, max_digits=14)),
            ],
            indexes=[models.Index(fields=["stage", "status"], name="stagehitcount_stage")],
        ),
        shared.counter_model(
            "StageItemCount",
            [
                ("status", models.CharField(max_length=16)),
                ("n", models.BigIntegerField(default=0)),
            ],
            indexes=[models.Index(fields=["stage", "status"], name="stageitemcount_stage")],
        ),
        shared.counter_model(
            "StageSubmissionMinute",
            [
                ("minute", models.DateTimeField()),
                ("n", models.BigIntegerField(default=0)),
            ],
            indexes=[models.Index(fields=["stage", "minute"], name="stagesubmissionminute_stage")],
        ),
        migrations.RunPython(summaries_create, summaries_drop),
    ]
