"""Counters the database keeps for reads that would otherwise count a growing table."""

from __future__ import annotations

from typing import Generic, TypeVar

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
