"""Wave three (never released before it was folded into one file): the model in the loop
(``ModelEndpoint``, ``ModelCall``, ``Assignment.llm_flag``), recipe notes that follow the
stage settings, the per-stage assignment counters, the review queue's indexes and
adversarial writing's tries (``AdversarialTry``).

Recipe notes: stages made from a recipe before the notes followed the settings name the
number in their recipe sentences as a placeholder, so that the worker pages read the
stage's current value (``campaigns.tasktypes.instructions``); other text is left alone.

Assignment counters: per-stage assignment counts by status, kept by triggers on
``campaigns_assignment``.

PostgreSQL: three statement-level triggers with transition tables, so a statement that
decides 100,000 assignments writes each counter row once (a row-level trigger would
update the same row 100,000 times in one transaction). SQLite: row-level triggers.
A delete only decrements rows that exist: Django may delete a stage's counters before
its assignments, and nothing is to be re-created then. The rows are filled from the
assignments already there.
"""

from decimal import Decimal
from importlib import import_module

import django.core.validators
from django.conf import settings
from django.db import migrations, models
from django.db.models.deletion import CASCADE, PROTECT, SET_NULL

shared = import_module("campaigns.migrations._shared")

# (task type, the recipe's old words, the same words with the placeholder)
RECIPE_SENTENCES = [
    (
        "question_writing",
        "Write five different questions about the topic,",
        "Write {questions_per_hit} different questions about the topic,",
    ),
    (
        "sentence_selection_answer",
        "Select the one to three sentences of the article",
        "Select the one to {max_sentences} sentences of the article",
    ),
    (
        "quiz",
        "then answer the five scored questions.",
        "then answer the {question_count} scored questions.",
    ),
    (
        "quiz",
        "Answer five questions about short passages; three right answers qualify you.",
        "Answer {question_count} questions about short passages; {pass_points} right answers "
        "qualify you.",
    ),
    (
        "mc_question_writing",
        "Read the passage and write two multiple-choice questions about it,",
        "Read the passage and write {questions_per_passage} multiple-choice questions about it,",
    ),
]


def instructions_follow_settings(apps, schema_editor):
    Stage = apps.get_model("campaigns", "Stage")
    for task_type, old, new in RECIPE_SENTENCES:
        for stage in Stage.objects.filter(task_type=task_type, instructions__contains=old):
            stage.instructions = stage.instructions.replace(old, new)
            stage.save(update_fields=["instructions"])


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
    f"""
CREATE FUNCTION campaigns_assignment_counts_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
{shared.ASSIGNMENTS_MOVED}
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


def triggers_create(apps, schema_editor) -> None:
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        shared.run(POSTGRESQL, schema_editor)
    elif vendor == "sqlite":
        shared.run(SQLITE, schema_editor)
    else:
        raise NotImplementedError(f"No assignment counter triggers for {vendor}.")
    schema_editor.execute(BACKFILL, params=None)


def triggers_drop(apps, schema_editor) -> None:
    vendor = schema_editor.connection.vendor
    shared.run(POSTGRESQL_REVERSE if vendor == "postgresql" else SQLITE_REVERSE, schema_editor)


def _fk(to, related_name, on_delete=CASCADE, **options):
    return models.ForeignKey(on_delete=on_delete, related_name=related_name, to=to, **options)


def _choice(choices, max_length=16, **options):
    return models.CharField(choices=choices, max_length=max_length, **options)


def _money(decimal_places, max_digits, **options):
    return models.DecimalField(decimal_places=decimal_places, max_digits=max_digits, **options)


class Migration(migrations.Migration):
    replaces = [
        ("campaigns", "0016_model_in_the_loop"),
        ("campaigns", "0017_instructions_follow_settings"),
        ("campaigns", "0018_stage_assignment_counts"),
        ("campaigns", "0019_assignment_review_indexes"),
        ("campaigns", "0020_assignment_llm_flag"),
        ("campaigns", "0021_adversarial_tries"),
    ]

    dependencies = [
        ("campaigns", "0015_stage_publish_added"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        # The model in the loop (was 0016_model_in_the_loop).
        migrations.AlterField(
            model_name="ledgerentry",
            name="kind",
            field=_choice(
                [
                    ("reward", "Reward"),
                    ("platform_fee", "Platform fee"),
                    ("bonus", "Bonus"),
                    ("bonus_fee", "Platform fee on a bonus"),
                    ("quiz_payment", "Quiz payment"),
                    ("model_usage", "Model usage"),
                ]
            ),
        ),
        migrations.CreateModel(
            name="ModelEndpoint",
            fields=[
                ("id", shared.big_id()),
                ("name", models.CharField(max_length=120)),
                (
                    "kind",
                    _choice(
                        [
                            ("openai", "OpenAI-compatible chat completions"),
                            ("baseline_bm25", "Built-in baseline (BM25 sentence retrieval)"),
                        ]
                    ),
                ),
                ("base_url", models.URLField(blank=True, max_length=500)),
                ("model", models.CharField(blank=True, max_length=200)),
                ("key_ciphertext", models.TextField(blank=True)),
                ("key_hint", models.CharField(blank=True, max_length=8)),
                ("prompt_templates", models.JSONField(blank=True, default=dict)),
                (
                    "timeout_seconds",
                    _money(
                        2,
                        6,
                        default=Decimal("10"),
                        validators=[django.core.validators.MinValueValidator(0)],
                    ),
                ),
                ("concurrency", models.PositiveIntegerField(default=4)),
                ("price_in_per_1k", _money(6, 12, default=Decimal("0"))),
                ("price_out_per_1k", _money(6, 12, default=Decimal("0"))),
                ("currency", models.CharField(default="USD", max_length=3)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                ("owner", _fk(settings.AUTH_USER_MODEL, "model_endpoints")),
            ],
            options={"ordering": ["name", "id"]},
        ),
        migrations.CreateModel(
            name="ModelCall",
            fields=[
                ("id", shared.big_id()),
                (
                    "purpose",
                    _choice(
                        [
                            ("adversarial", "Adversarial writing"),
                            ("llm_flag", "Answers a model wrote"),
                        ]
                    ),
                ),
                ("try_number", models.PositiveIntegerField(default=1)),
                ("idempotency_key", models.CharField(max_length=200, unique=True)),
                (
                    "status",
                    _choice(
                        [
                            ("pending", "Pending"),
                            ("running", "Running"),
                            ("done", "Done"),
                            ("unavailable", "Model unavailable"),
                        ],
                        default="pending",
                    ),
                ),
                ("prompt", models.JSONField(default=dict)),
                ("answer", models.TextField(blank=True)),
                ("model_id", models.CharField(blank=True, max_length=200)),
                ("model_version", models.CharField(blank=True, max_length=200)),
                ("prompt_tokens", models.PositiveIntegerField(blank=True, null=True)),
                ("completion_tokens", models.PositiveIntegerField(blank=True, null=True)),
                ("cost", _money(6, 14, blank=True, null=True)),
                ("currency", models.CharField(blank=True, max_length=3)),
                ("error", models.TextField(blank=True)),
                ("attempts", models.PositiveIntegerField(default=0)),
                ("next_attempt_at", models.DateTimeField(blank=True, null=True)),
                ("started_at", models.DateTimeField(blank=True, null=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("finished_at", models.DateTimeField(blank=True, null=True)),
                ("assignment", _fk("campaigns.assignment", "model_calls", blank=True, null=True)),
                ("campaign", _fk("campaigns.campaign", "model_calls")),
                ("item", _fk("campaigns.item", "model_calls")),
                ("stage", _fk("campaigns.stage", "model_calls")),
                ("endpoint", _fk("campaigns.modelendpoint", "calls", on_delete=PROTECT)),
            ],
            options={"ordering": ["-created_at", "-id"]},
        ),
        migrations.AddConstraint(
            model_name="modelendpoint",
            constraint=models.UniqueConstraint(
                fields=("owner", "name"), name="modelendpoint_name_per_owner"
            ),
        ),
        *(
            migrations.AddConstraint(
                model_name="modelendpoint",
                constraint=models.CheckConstraint(condition=condition, name=name),
            )
            for condition, name in [
                (models.Q(("timeout_seconds__gt", 0)), "modelendpoint_timeout_positive"),
                (models.Q(("concurrency__gte", 1)), "modelendpoint_concurrency_positive"),
                (
                    models.Q(("price_in_per_1k__gte", 0), ("price_out_per_1k__gte", 0)),
                    "modelendpoint_prices_non_negative",
                ),
            ]
        ),
        migrations.AddIndex(
            model_name="modelcall",
            index=models.Index(
                fields=["endpoint", "status"], name="campaigns_m_endpoin_4a9149_idx"
            ),
        ),
        migrations.AddIndex(
            model_name="modelcall",
            index=models.Index(
                fields=["status", "next_attempt_at"], name="campaigns_m_status_423d2c_idx"
            ),
        ),
        migrations.AddConstraint(
            model_name="modelcall",
            constraint=models.CheckConstraint(
                condition=models.Q(("cost__isnull", True), ("cost__gte", 0), _connector="OR"),
                name="modelcall_cost_non_negative",
            ),
        ),
        # Recipe notes follow the settings (was 0017_instructions_follow_settings).
        migrations.RunPython(instructions_follow_settings, migrations.RunPython.noop),
        # Assignment counters (was 0018_stage_assignment_counts).
        migrations.CreateModel(
            name="StageAssignmentCount",
            fields=[
                ("id", shared.big_id()),
                ("status", models.CharField(max_length=16)),
                ("n", models.BigIntegerField(default=0)),
                ("changes", models.BigIntegerField(default=0)),
                ("stage", _fk("campaigns.stage", "assignment_counts", db_index=False)),
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
        # The review queue's indexes (was 0019_assignment_review_indexes).
        migrations.AddIndex(
            model_name="assignment",
            index=models.Index(fields=["submitted_at"], name="assignment_submitted_at"),
        ),
        migrations.AddIndex(
            model_name="assignment",
            index=models.Index(
                condition=models.Q(("status", "submitted")),
                fields=["submitted_at", "id"],
                name="assignment_awaiting_review",
            ),
        ),
        # Answers a model wrote (was 0020_assignment_llm_flag).
        migrations.AddField(
            model_name="assignment",
            name="llm_flag",
            field=models.JSONField(blank=True, null=True),
        ),
        # Adversarial writing's tries (was 0021_adversarial_tries).
        migrations.CreateModel(
            name="AdversarialTry",
            fields=[
                ("id", shared.big_id()),
                ("try_number", models.PositiveIntegerField()),
                ("question", models.TextField()),
                ("entry", models.JSONField(default=dict)),
                ("model_answer", models.TextField(blank=True)),
                ("model_unavailable", models.BooleanField(default=False)),
                (
                    "judged_by",
                    _choice(
                        [
                            ("auto", "the app"),
                            ("worker", "the worker"),
                            ("none", "nobody: the model was unavailable"),
                        ],
                        max_length=8,
                        blank=True,
                    ),
                ),
                ("fooled", models.BooleanField(blank=True, null=True)),
                ("verified", models.BooleanField(blank=True, null=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("judged_at", models.DateTimeField(blank=True, null=True)),
                ("verified_at", models.DateTimeField(blank=True, null=True)),
                ("assignment", _fk("campaigns.assignment", "adversarial_tries")),
                ("item", _fk("campaigns.item", "adversarial_tries")),
                (
                    "model_call",
                    models.OneToOneField(
                        blank=True,
                        null=True,
                        on_delete=SET_NULL,
                        related_name="adversarial_try",
                        to="campaigns.modelcall",
                    ),
                ),
                ("stage", _fk("campaigns.stage", "adversarial_tries")),
                ("worker", _fk("campaigns.worker", "adversarial_tries")),
            ],
            options={
                "ordering": ["assignment_id", "item_id", "try_number"],
                "indexes": [
                    models.Index(
                        fields=["stage", "created_at"], name="campaigns_a_stage_i_92c173_idx"
                    ),
                    models.Index(fields=["stage", "worker"], name="campaigns_a_stage_i_b2b197_idx"),
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("assignment", "item", "try_number"),
                        name="adversarialtry_once_per_try",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("try_number__gte", 1)),
                        name="adversarialtry_numbered_from_1",
                    ),
                ],
            },
        ),
    ]
