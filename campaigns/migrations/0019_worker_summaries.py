# ruff: noqa: S608 (constant SQL built from the constants of this file)
"""Per-worker counters (issue 39, item 2): a worker's assignments per stage and status,
for the review queue's history beside each submission (it read the page's workers'
assignments in the campaign: 0.8 s at 1 M).

Append-only deltas (``StageWorkerCount``) written by statement-level PostgreSQL triggers
on ``campaigns_assignment``, like migration 0018's; SQLite has none (its reader counts).
New rows are unfolded; compaction folds the groups that have one. Filled from the
assignments already there (folded).
"""

from importlib import import_module

from django.db import migrations, models

shared = import_module("campaigns.migrations._shared")

SIDE = "SELECT {t}.hit_id, {t}.worker_id, {t}.status, {s} AS sign"
CHANGED = (
    " FROM old_rows o JOIN new_rows r ON r.id = o.id WHERE o.status <> r.status "
    "OR o.hit_id <> r.hit_id OR o.worker_id <> r.worker_id"
)


def _counts(rows: str) -> str:
    return (
        "INSERT INTO campaigns_stageworkercount (stage_id, worker_id, status, n, folded) "
        "SELECT h.stage_id, d.worker_id, d.status, sum(d.sign), false "
        f"FROM ({rows}) d JOIN campaigns_hit h ON h.id = d.hit_id "
        "GROUP BY 1, 2, 3 HAVING sum(d.sign) <> 0;"
    )


BODIES = {
    "insert": _counts(SIDE.format(t="new_rows", s=1) + " FROM new_rows"),
    "update": _counts(
        SIDE.format(t="r", s=1) + CHANGED + " UNION ALL " + SIDE.format(t="o", s=-1) + CHANGED
    ),
    "delete": _counts(SIDE.format(t="old_rows", s=-1) + " FROM old_rows"),
}
POSTGRESQL = [
    statement
    for op, body in BODIES.items()
    for statement in (
        shared.trigger_function(f"campaigns_assignment_workers_{op}", body),
        shared.statement_trigger(
            "campaigns_assignment", "campaigns_assignment_workers", op.upper()
        ),
    )
] + [
    "INSERT INTO campaigns_stageworkercount (stage_id, worker_id, status, n, folded) "
    "SELECT h.stage_id, a.worker_id, a.status, count(*), true FROM campaigns_assignment a "
    "JOIN campaigns_hit h ON h.id = a.hit_id GROUP BY 1, 2, 3"
]
POSTGRESQL_REVERSE = [
    statement
    for op in BODIES
    for statement in (
        f"DROP TRIGGER IF EXISTS campaigns_assignment_workers_{op} ON campaigns_assignment",
        f"DROP FUNCTION IF EXISTS campaigns_assignment_workers_{op}()",
    )
]


def counters_create(apps, schema_editor) -> None:
    shared.run_on_postgresql(POSTGRESQL, schema_editor)


def counters_drop(apps, schema_editor) -> None:
    shared.run_on_postgresql(POSTGRESQL_REVERSE, schema_editor)


class Migration(migrations.Migration):
    dependencies = [
        ("campaigns", "0018_dashboard_summaries"),
    ]

    operations = [
        shared.counter_model(
            "StageWorkerCount",
            [
                ("status", models.CharField(max_length=16)),
                ("n", models.BigIntegerField(default=0)),
                ("folded", models.BooleanField(default=False)),
            ],
            keys=("stage", "worker"),
            indexes=[
                models.Index(fields=["worker", "stage", "status"], name="stageworkercount_worker"),
                models.Index(
                    condition=models.Q(("folded", False)),
                    fields=["stage", "worker", "status"],
                    name="stageworkercount_unfolded",
                ),
            ],
        ),
        migrations.RunPython(counters_create, counters_drop),
    ]
