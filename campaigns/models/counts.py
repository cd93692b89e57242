"""Counters the database keeps for reads that would otherwise count a growing table."""

from __future__ import annotations

from django.db import models


class _NotDumped(models.Manager["StageAssignmentCount"]):
    """The default manager, empty: ``dumpdata`` leaves the counters out, and ``loaddata``
    rebuilds them through the triggers as it loads the assignments (a dumped counter
    loaded on top would count them twice)."""

    def get_queryset(self) -> models.QuerySet[StageAssignmentCount]:
        return super().get_queryset().none()


class StageAssignmentCount(models.Model):
    """How many assignments of a stage are in one status, and how many times that number
    changed.

    Kept by database triggers on ``campaigns_assignment`` (migration 0016: statement-level
    on PostgreSQL, row-level on SQLite) in the transaction of every insert, status change
    and delete, whoever writes: the work services, ``work.decisions`` (one at a time or
    in one statement for a batch), the platforms' syncs, the MTurk CSV import. Nothing in
    Python writes these rows except ``campaigns.work.counts.stage_assignment_counts_rebuild``,
    which recomputes them from the assignments (``manage.py counters_rebuild``).
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
    not_dumped = _NotDumped()

    class Meta:
        default_manager_name = "not_dumped"
        constraints = [
            models.UniqueConstraint(fields=["stage", "status"], name="stageassignmentcount_unique"),
        ]

    def __str__(self) -> str:
        return f"stage {self.stage_id} {self.status}: {self.n}"
