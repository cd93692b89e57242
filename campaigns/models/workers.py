"""Workers, their per-campaign records, blocks and qualifications.

A worker's external id (MTurk WorkerId, Prolific PID) is personal data: it is
shown only to the requester, exported and logged only as the pseudonym.
"""

from __future__ import annotations

import hashlib
import hmac

from django.conf import settings
from django.db import models
from django.db.models import Q

from campaigns.models.choices import QualificationKind, provider_choices


def worker_pseudonym(*, provider: str, external_id: str) -> str:
    """Stable pseudonym of a worker: keyed HMAC of provider and external id."""
    digest = hmac.new(
        settings.PSEUDONYM_KEY.encode(), f"{provider}:{external_id}".encode(), hashlib.sha256
    ).hexdigest()
    return f"w_{digest[:16]}"


class Worker(models.Model):
    provider = models.CharField(max_length=16, choices=provider_choices)
    external_id = models.CharField(max_length=200)
    pseudonym = models.CharField(max_length=40, unique=True, editable=False)
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="worker",
        help_text="The qaportal account of a local-workforce annotator.",
    )
    submitted_count = models.PositiveIntegerField(default=0)
    approved_count = models.PositiveIntegerField(default=0)
    rejected_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["provider", "external_id"], name="worker_provider_id_unique"
            ),
        ]

    def __str__(self) -> str:
        return self.pseudonym

    def save(self, *args: object, **kwargs: object) -> None:
        # Derived data, not a workflow: the pseudonym is a pure function of the identity.
        if not self.pseudonym:
            self.pseudonym = worker_pseudonym(provider=self.provider, external_id=self.external_id)
        super().save(*args, **kwargs)  # type: ignore[arg-type]


class CampaignWorker(models.Model):
    """A worker's place in one campaign: protocol arm and where they stand."""

    campaign = models.ForeignKey(
        "campaigns.Campaign", on_delete=models.CASCADE, related_name="workers"
    )
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="campaigns")
    arm = models.CharField(max_length=40, blank=True)
    joined_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["campaign", "worker"], name="campaignworker_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.worker} in {self.campaign}"


class WorkerBlock(models.Model):
    """A requester's block of a worker: from all of that requester's work."""

    requester = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="worker_blocks"
    )
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="blocks")
    reason = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    lifted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["requester", "worker"],
                condition=Q(lifted_at__isnull=True),
                name="workerblock_one_active",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.worker} blocked by {self.requester}"


class QualificationType(models.Model):
    """A requirement workers must meet: a platform's system one or the requester's own."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="qualification_types"
    )
    name = models.CharField(max_length=120)
    description = models.TextField(blank=True)
    kind = models.CharField(max_length=20, choices=QualificationKind.choices)
    config = models.JSONField(
        default=dict,
        blank=True,
        help_text="Answer key and scoring rule, retake policy, thresholds.",
    )
    provider = models.CharField(max_length=16, choices=provider_choices, blank=True)
    provider_qualification_id = models.CharField(max_length=100, null=True, blank=True)  # noqa: DJ001 - NULL until published; unique only when set
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], name="qualificationtype_name_unique"),
            models.UniqueConstraint(
                fields=["provider", "provider_qualification_id"],
                name="qualificationtype_provider_id_unique",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class QualificationGrant(models.Model):
    qualification_type = models.ForeignKey(
        QualificationType, on_delete=models.CASCADE, related_name="grants"
    )
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="grants")
    value = models.IntegerField(default=1)
    source = models.CharField(
        max_length=80, blank=True, help_text="What granted it: quiz, round, requester."
    )
    granted_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["qualification_type", "worker"], name="grant_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.qualification_type} = {self.value} for {self.worker}"
