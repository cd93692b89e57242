"""Published work: HITs and the assignments workers take on them."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from campaigns.models.choices import (
    ASSIGNMENT_HOLDING_STATES,
    AssignmentStatus,
    HITStatus,
    provider_choices,
)


class HIT(models.Model):
    """A published unit of work holding one or more items."""

    stage = models.ForeignKey("campaigns.Stage", on_delete=models.CASCADE, related_name="hits")
    provider = models.CharField(max_length=16, choices=provider_choices)
    provider_hit_id = models.CharField(max_length=100, null=True, blank=True)  # noqa: DJ001 - NULL until published; unique only when set
    provider_group_id = models.CharField(max_length=100, blank=True)
    items = models.ManyToManyField("campaigns.Item", through="HITItem", related_name="hits")
    max_assignments = models.PositiveIntegerField(default=1)
    # Free places: max_assignments minus the assignments holding one. Kept by the work
    # services in the transaction that takes or frees a place (accept, return, expiry),
    # so allocation reads one row instead of counting assignments.
    places_left = models.IntegerField(default=1)
    reward = models.DecimalField(max_digits=8, decimal_places=2)
    status = models.CharField(max_length=16, choices=HITStatus.choices, default=HITStatus.PENDING)
    created_at = models.DateTimeField(auto_now_add=True)
    published_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "HIT"
        ordering = ["stage_id", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["provider", "provider_hit_id"], name="hit_provider_id_unique"
            ),
            models.CheckConstraint(
                condition=Q(max_assignments__gte=1), name="hit_max_assignments_positive"
            ),
            models.CheckConstraint(condition=Q(reward__gte=0), name="hit_reward_non_negative"),
            models.CheckConstraint(
                condition=Q(places_left__gte=0), name="hit_places_left_non_negative"
            ),
        ]
        indexes = [
            models.Index(fields=["stage", "status"]),
            # Allocation: the first HIT of a stage with a free place, in id order.
            models.Index(
                fields=["stage", "id"],
                condition=Q(status=HITStatus.PUBLISHED, places_left__gt=0),
                name="hit_open_places",
            ),
        ]

    def __str__(self) -> str:
        return f"HIT {self.pk} ({self.status})"


class HITItem(models.Model):
    hit = models.ForeignKey(HIT, on_delete=models.CASCADE)
    item = models.ForeignKey("campaigns.Item", on_delete=models.CASCADE)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["hit_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["hit", "item"], name="hititem_unique"),
            models.UniqueConstraint(fields=["hit", "position"], name="hititem_position_unique"),
        ]

    def __str__(self) -> str:
        return f"HIT {self.hit_id} item {self.item_id}"


class Assignment(models.Model):
    """One worker's work on a HIT.

    Status changes go through the services of ``campaigns.work`` (decisions through
    ``campaigns.work.decisions.assignment_decide``); the
    database keeps one holding assignment per worker per HIT and one stored
    submission per provider assignment id.
    """

    # No single-column indexes on hit and worker: the (hit, status) and (worker, status)
    # indexes below lead with them and serve the same look-ups, and every index is one
    # more write on each status change (a review of 100,000 assignments updates them all).
    hit = models.ForeignKey(
        HIT, on_delete=models.CASCADE, related_name="assignments", db_index=False
    )
    worker = models.ForeignKey(
        "campaigns.Worker", on_delete=models.PROTECT, related_name="assignments", db_index=False
    )
    provider = models.CharField(max_length=16, choices=provider_choices)
    provider_assignment_id = models.CharField(max_length=100, null=True, blank=True)  # noqa: DJ001 - NULL until published; unique only when set
    status = models.CharField(
        max_length=16, choices=AssignmentStatus.choices, default=AssignmentStatus.ACCEPTED
    )
    answers = models.JSONField(null=True, blank=True)
    accepted_at = models.DateTimeField()
    deadline = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    work_seconds = models.PositiveIntegerField(null=True, blank=True)
    telemetry = models.JSONField(default=dict, blank=True)
    # Review decision: what was decided, by whom or by which rule, and why.
    decided_at = models.DateTimeField(null=True, blank=True)
    # Indexed only where set (``assignment_decided_by``): the review rules leave it empty.
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,
    )
    decision_source = models.CharField(max_length=80, blank=True)
    decision_reason = models.TextField(blank=True)
    feedback = models.TextField(blank=True)
    review_details = models.JSONField(default=dict, blank=True)
    # Whether a model may have written the answer, with the evidence
    # (``validation.llm_flag.llm_flag`` per item, combined): written by
    # ``campaigns.assist.flags`` once the stage's model has answered; None until then
    # or when the stage does not ask for it.
    llm_flag = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["hit_id", "id"]
        constraints = [
            # Only where the provider's id is set (NULLs never conflict): local assignments,
            # which have none, are not in the index.
            models.UniqueConstraint(
                fields=["provider", "provider_assignment_id"],
                condition=Q(provider_assignment_id__isnull=False),
                name="assignment_provider_id_unique",
            ),
            models.UniqueConstraint(
                fields=["hit", "worker"],
                condition=Q(status__in=ASSIGNMENT_HOLDING_STATES),
                name="assignment_one_per_worker_per_hit",
            ),
            models.CheckConstraint(
                condition=Q(submitted_at__isnull=True) | Q(submitted_at__gte=F("accepted_at")),
                name="assignment_submitted_after_accepted",
            ),
            models.CheckConstraint(
                condition=~Q(
                    status__in=[
                        AssignmentStatus.SUBMITTED,
                        AssignmentStatus.APPROVED,
                        AssignmentStatus.REJECTED,
                    ]
                )
                | Q(submitted_at__isnull=False),
                name="assignment_submitted_has_time",
            ),
        ]
        # A decision changes ``status``, which the indexes below read, so its new row
        # version is written to every index whose condition it meets (no HOT update):
        # the indexes on columns that are mostly empty (``decided_by``, the provider's id)
        # are partial, which spares a review of 100,000 assignments 200,000 index entries.
        indexes = [
            models.Index(
                fields=["decided_by"],
                condition=Q(decided_by__isnull=False),
                name="assignment_decided_by",
            ),
            models.Index(fields=["hit", "status"]),
            models.Index(fields=["worker", "status"]),
            # The progress estimate's recent submissions: reads the last hour's, not the table.
            models.Index(fields=["submitted_at"], name="assignment_submitted_at"),
            # The review queue's first page: awaiting review, oldest submission first.
            models.Index(
                fields=["submitted_at", "id"],
                condition=Q(status=AssignmentStatus.SUBMITTED),
                name="assignment_awaiting_review",
            ),
        ]

    def __str__(self) -> str:
        return f"Assignment {self.pk} ({self.status})"


class DetachedAnswer(models.Model):
    """An answer kept apart from who gave it (stages marked ``anonymous``).

    No link to the worker or the assignment; a random key and the day alone, so
    neither the row order nor the time can be joined back to an assignment.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    stage = models.ForeignKey(
        "campaigns.Stage", on_delete=models.CASCADE, related_name="detached_answers"
    )
    answers = models.JSONField()
    submitted_on = models.DateField()

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"Detached answer on stage {self.stage_id}"
