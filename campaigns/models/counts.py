"""Counters the database keeps for reads that would otherwise count a growing table."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from django.db import models

M = TypeVar("M", bound=models.Model)


class _NotDumped(models.Manager[M], Generic[M]):
    """The default manager, empty: ``dumpdata`` leaves the counters out, and ``loaddata``
    rebuilds them through the triggers as it loads the assignments (a dumped counter
    loaded on top would count them twice)."""

    def get_queryset(self) -> models.QuerySet[M]:
        return super().get_queryset().none()


class StageAssignmentCount(models.Model):
    """How many assignments of a stage are in one status, and how many times that number
    changed: the compacted part. The number is this row plus the stage's pending
    ``StageAssignmentCountDelta`` rows for the status.

    Kept by database triggers on ``campaigns_assignment`` in the transaction of every
    insert, status change and delete, whoever writes: the work services,
    ``work.decisions`` (one at a time or in one statement for a batch), the platforms'
    syncs, the MTurk CSV import. On PostgreSQL the triggers only append deltas
    (migration 0017), which ``campaigns.work.counts.stage_assignment_counts_compact``
    folds into these rows; on SQLite (one writer at a time) they update these rows
    directly (migration 0016). Nothing else in Python writes them but
    ``campaigns.work.counts.stage_assignment_counts_rebuild``, which recomputes them
    from the assignments (``manage.py counters_rebuild``).
    ``changes`` only grows: with ``n`` it fingerprints a stage's work for caches (a
    flip there and back changes it, a count alone would not).
    """

    # No index of its own: the unique (stage, status) leads with it.
    stage = models.ForeignKey(
        "campaigns.Stage",
        on_delete=models.CASCADE,
        related_name="assignment_counts",
        db_index=False,
    )
    status = models.CharField(max_length=16)
    n = models.BigIntegerField(default=0)
    changes = models.BigIntegerField(default=0)

    objects = models.Manager()
    not_dumped = _NotDumped["StageAssignmentCount"]()

    class Meta:
        default_manager_name = "not_dumped"
        constraints = [
            models.UniqueConstraint(fields=["stage", "status"], name="stageassignmentcount_unique"),
        ]

    def __str__(self) -> str:
        return f"stage {self.stage_id} {self.status}: {self.n}"


def _stage_ref(related_name: str) -> Any:
    # No constraint and no cascade: a trigger may write a delta while Django deletes a
    # stage's rows in an order of its own; compaction drops deltas of stages gone.
    return models.ForeignKey(
        "campaigns.Stage",
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        related_name=related_name,
    )


class StageItemCount(models.Model):
    """A change in the number of a stage's items in one status: append-only deltas that
    readers sum (``campaigns.work.selectors.counts.stage_item_counts``).

    Written only by PostgreSQL triggers on ``campaigns_item`` (migration 0018), one row
    per (stage, status) a statement moves, in that statement's transaction: writers never
    update a shared row, so they never wait on each other here. ``campaigns.work.counts``
    folds them (``stage_counters_compact``, every minute from beat) and rebuilds them.
    SQLite keeps none: its readers count the items.
    """

    stage = _stage_ref("+")
    status = models.CharField(max_length=16)
    n = models.BigIntegerField(default=0)

    objects = models.Manager()
    not_dumped: _NotDumped[Any] = _NotDumped()

    class Meta:
        default_manager_name = "not_dumped"
        indexes = [models.Index(fields=["stage", "status"], name="stageitemcount_stage")]

    def __str__(self) -> str:
        return f"stage {self.stage_id} {self.status}: {self.n:+d}"


class StageHITCount(models.Model):
    """A change in a stage's HITs in one status: how many (``n``), their places
    (``places``: Σ max_assignments), free places (``free``: Σ places_left), how many
    have a free place (``open``) and what the free places pay (``free_reward``: Σ
    places_left * reward). Append-only deltas like ``StageItemCount`` (triggers on
    ``campaigns_hit``, PostgreSQL only)."""

    stage = _stage_ref("+")
    status = models.CharField(max_length=16)
    n = models.BigIntegerField(default=0)
    places = models.BigIntegerField(default=0)
    free = models.BigIntegerField(default=0)
    open = models.BigIntegerField(default=0)
    free_reward = models.DecimalField(max_digits=14, decimal_places=2, default=0)

    objects = models.Manager()
    not_dumped: _NotDumped[Any] = _NotDumped()

    class Meta:
        default_manager_name = "not_dumped"
        indexes = [models.Index(fields=["stage", "status"], name="stagehitcount_stage")]

    def __str__(self) -> str:
        return f"stage {self.stage_id} {self.status}: {self.n:+d}"


class StageHeldWork(models.Model):
    """A change in a stage's held work: accepted or submitted assignments without a
    ledger entry (``n``) and their HITs' rewards (``reward``), what the budget counts as
    held beside open places (``payments.budget``). Append-only deltas written by
    PostgreSQL triggers on ``campaigns_assignment``, ``campaigns_ledgerentry`` and
    ``campaigns_hit`` (a reward changed). Exact when, as ``payments.ledger`` requires, an
    entry for an assignment is written holding the assignment's row."""

    stage = _stage_ref("+")
    n = models.BigIntegerField(default=0)
    reward = models.DecimalField(max_digits=14, decimal_places=2, default=0)

    objects = models.Manager()
    not_dumped: _NotDumped[Any] = _NotDumped()

    class Meta:
        default_manager_name = "not_dumped"
        indexes = [models.Index(fields=["stage"], name="stageheldwork_stage")]

    def __str__(self) -> str:
        return f"stage {self.stage_id}: {self.n:+d} held ({self.reward:+})"


class LedgerStageTotal(models.Model):
    """A change in the ledger of a campaign's stage for one kind and status: entries
    (``n``) and their ``amount``. Append-only deltas written by ``payments.ledger`` (the
    ledger's one writer) in the transaction of the entries they count; summed by
    ``payments.selectors.ledger_stage_totals``, folded by ``payments.totals``."""

    campaign = models.ForeignKey(
        "campaigns.Campaign", on_delete=models.CASCADE, related_name="+", db_index=False
    )
    stage = models.ForeignKey(
        "campaigns.Stage", null=True, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    kind = models.CharField(max_length=16)
    status = models.CharField(max_length=16)
    n = models.BigIntegerField(default=0)
    amount = models.DecimalField(max_digits=14, decimal_places=2, default=0)

    class Meta:
        indexes = [models.Index(fields=["campaign"], name="ledgerstagetotal_campaign")]

    def __str__(self) -> str:
        return f"campaign {self.campaign_id} stage {self.stage_id} {self.kind} {self.status}"


class LedgerWorkerTotal(models.Model):
    """The same deltas per (campaign, worker, kind, status), for entries with a worker
    (the workers table's earnings)."""

    campaign = models.ForeignKey(
        "campaigns.Campaign", on_delete=models.CASCADE, related_name="+", db_index=False
    )
    worker = models.ForeignKey(
        "campaigns.Worker", on_delete=models.CASCADE, related_name="+", db_index=False
    )
    kind = models.CharField(max_length=16)
    status = models.CharField(max_length=16)
    n = models.BigIntegerField(default=0)
    amount = models.DecimalField(max_digits=14, decimal_places=2, default=0)

    class Meta:
        indexes = [models.Index(fields=["campaign", "worker"], name="ledgerworkertotal_campaign")]

    def __str__(self) -> str:
        return f"campaign {self.campaign_id} worker {self.worker_id} {self.kind} {self.status}"


class StageSubmissionMinute(models.Model):
    """A change in the number of a stage's handed-in assignments (submitted, approved,
    rejected) submitted within one minute (``minute``: ``submitted_at`` truncated).
    Append-only deltas written by PostgreSQL triggers on ``campaigns_assignment``; the
    progress estimate sums the last hour's minutes instead of reading that hour's
    assignments. Compaction folds them and drops minutes older than a day."""

    stage = _stage_ref("+")
    minute = models.DateTimeField()
    n = models.BigIntegerField(default=0)

    objects = models.Manager()
    not_dumped: _NotDumped[Any] = _NotDumped()

    class Meta:
        default_manager_name = "not_dumped"
        indexes = [models.Index(fields=["stage", "minute"], name="stagesubmissionminute_stage")]

    def __str__(self) -> str:
        return f"stage {self.stage_id} {self.minute:%Y-%m-%d %H:%M}: {self.n:+d}"


class StageWorkerCount(models.Model):
    """A change in the number of a worker's assignments of a stage in one status:
    append-only deltas written by PostgreSQL triggers on ``campaigns_assignment``
    (migration 0019), summed for the review queue's per-worker history. New deltas are
    ``folded=False``; compaction folds only the groups that have one (a partial index
    finds them), so its cost follows the writes since the last run, not the table."""

    stage = _stage_ref("+")
    worker = models.ForeignKey(
        "campaigns.Worker",
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        related_name="+",
    )
    status = models.CharField(max_length=16)
    n = models.BigIntegerField(default=0)
    folded = models.BooleanField(default=False)

    objects = models.Manager()
    not_dumped: _NotDumped[Any] = _NotDumped()

    class Meta:
        default_manager_name = "not_dumped"
        indexes = [
            models.Index(fields=["worker", "stage", "status"], name="stageworkercount_worker"),
            # The workers table: a campaign's stages, every worker (migration 0023).
            models.Index(fields=["stage", "worker", "status"], name="stageworkercount_stage"),
            models.Index(
                fields=["stage", "worker", "status"],
                name="stageworkercount_unfolded",
                condition=models.Q(folded=False),
            ),
        ]

    def __str__(self) -> str:
        return f"stage {self.stage_id} worker {self.worker_id} {self.status}: {self.n:+d}"


class StageAssignmentCountDelta(models.Model):
    """A change to a stage's assignment count in one status not yet folded into its
    ``StageAssignmentCount`` row: ``n`` (+k, -k) and ``changes`` (the moves it counts).

    Appended by the PostgreSQL triggers on ``campaigns_assignment`` (migration 0017),
    one row per (stage, status) a statement moved: a writer inserts a row of its own
    and never updates a shared one, so concurrent accepts, submits, returns, expiries
    and decisions take no lock on the counters and cannot deadlock on them. Folded
    into the counter rows and deleted by
    ``campaigns.work.counts.stage_assignment_counts_compact`` (beat, and a read that
    finds many pending). Empty on SQLite, whose triggers update the counters.

    No foreign-key constraint in the database: the check would take a share lock on
    the stage's row in every worker's accept and submit. A stage's deletion deletes its
    deltas (a trigger on ``campaigns_stage``); the compaction drops any left over.
    """

    stage = models.ForeignKey(
        "campaigns.Stage",
        on_delete=models.DO_NOTHING,
        related_name="+",
        db_constraint=False,
        db_index=False,
    )
    status = models.CharField(max_length=16)
    n = models.BigIntegerField()
    changes = models.BigIntegerField()

    objects = models.Manager()
    not_dumped = _NotDumped["StageAssignmentCountDelta"]()

    class Meta:
        default_manager_name = "not_dumped"
        indexes = [models.Index(fields=["stage"], name="countdelta_stage")]

    def __str__(self) -> str:
        return f"stage {self.stage_id} {self.status}: {self.n:+d}"


class StageAssignmentJournal(models.Model):
    """One worker write's change to the assignment summaries, not yet folded into them
    (PostgreSQL, migration 0026): a one-row insert, delete or update of
    ``campaigns_assignment`` that keeps its HIT and worker appends this one row where it
    appended up to five (``StageAssignmentCountDelta`` x 2, ``StageWorkerCount`` x 2,
    ``StageSubmissionMinute``, ``StageHeldWork``).

    ``old_status`` -> ``new_status``: the status left and the status entered (None for
    an insert's old side, a delete's new side, or both when the status did not move),
    for the stage's and the worker's counts; ``held`` (+1, -1, 0) with the HIT's
    ``reward``: held work; ``old_minute`` / ``new_minute``: the handed-in minute left
    and entered (None when not counted or unchanged). Readers add the rows of the
    stages they show to the summaries (``campaigns.work.selectors.counts``);
    ``campaigns.work.counts.stage_assignment_journal_fold`` moves them into the
    summaries, grouped (compaction, and a read that finds many pending). Many-row
    statements (batches of decisions) keep writing the summaries directly. Empty on
    SQLite. No foreign-key constraint (as the deltas); a stage's deletion deletes its
    rows (a trigger on ``campaigns_stage``)."""

    stage = _stage_ref("+")
    worker = models.ForeignKey(
        "campaigns.Worker",
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        related_name="+",
    )
    old_status = models.CharField(max_length=16, null=True)  # noqa: DJ001 (None: no side)
    new_status = models.CharField(max_length=16, null=True)  # noqa: DJ001
    held = models.SmallIntegerField(default=0)
    reward = models.DecimalField(max_digits=14, decimal_places=2, default=0)
    old_minute = models.DateTimeField(null=True)
    new_minute = models.DateTimeField(null=True)

    objects = models.Manager()
    not_dumped: _NotDumped[Any] = _NotDumped()

    class Meta:
        default_manager_name = "not_dumped"
        # The readers' stages (and the review queue's workers): one index, so that a
        # write adds two index entries (this and the key).
        indexes = [models.Index(fields=["stage", "worker"], name="assignmentjournal_stage")]

    def __str__(self) -> str:
        return (
            f"stage {self.stage_id} worker {self.worker_id}: "
            f"{self.old_status or '-'} -> {self.new_status or '-'}"
        )


class CampaignWorkerQuality(models.Model):
    """A worker's slow numbers in one campaign, as of ``computed_at``: gold accuracy and
    agreement (``validation.selectors.stage_quality`` over every stage), the median work
    time and the paste share of their handed-in work. What the workers table sorts and
    pages by in SQL beside the live counters (``StageWorkerCount``, ``LedgerWorkerTotal``).

    A snapshot, rewritten whole per campaign by ``campaigns.worker_quality_refresh`` (a
    Celery task the table's reader schedules when its ``fingerprint``, the stages' work
    versions, is behind, or when it is older than ``QUALITY_CACHE_SECONDS``); the request
    never computes it (the task runs inline only in eager mode). ``seconds``: how long the
    computation took (the next one waits a multiple of it)."""

    campaign = models.ForeignKey(
        "campaigns.Campaign", on_delete=models.CASCADE, related_name="+", db_index=False
    )
    worker = models.ForeignKey(
        "campaigns.Worker", on_delete=models.CASCADE, related_name="+", db_index=False
    )
    gold_correct = models.IntegerField(default=0)
    gold_total = models.IntegerField(default=0)
    gold_accuracy = models.FloatField(null=True, blank=True)
    agreement = models.FloatField(null=True, blank=True)
    median_work_seconds = models.FloatField(null=True, blank=True)
    paste_share = models.FloatField(null=True, blank=True)
    fingerprint = models.CharField(max_length=64)
    computed_at = models.DateTimeField()
    seconds = models.FloatField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "worker"], name="campaignworkerquality_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"campaign {self.campaign_id} worker {self.worker_id} as of {self.computed_at}"
