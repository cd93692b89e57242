"""Platform operations (the calls that change a platform's state) and sync cursors."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from campaigns.models.choices import (
    OperationKind,
    OperationState,
    provider_choices,
)


class ProviderOperation(models.Model):
    """A state-changing call to a crowd platform, written before it is carried out.

    A Celery task carries it out, retries transient errors and reconciles after
    a crash; ``(provider, idempotency_key)`` is unique so the same effect can be
    asked for only once.
    """

    provider = models.CharField(max_length=16, choices=provider_choices)
    kind = models.CharField(max_length=32, choices=OperationKind.choices)
    campaign = models.ForeignKey(
        "campaigns.Campaign",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="operations",
    )
    idempotency_key = models.CharField(max_length=200)
    payload = models.JSONField(default=dict)
    state = models.CharField(
        max_length=16, choices=OperationState.choices, default=OperationState.PENDING
    )
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    result = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["provider", "idempotency_key"], name="provideroperation_key_unique"
            ),
            models.CheckConstraint(
                condition=~Q(state=OperationState.FAILED) | ~Q(last_error=""),
                name="provideroperation_failed_has_reason",
            ),
        ]
        indexes = [models.Index(fields=["state", "next_attempt_at"])]

    def __str__(self) -> str:
        return f"{self.provider}:{self.kind}:{self.idempotency_key} ({self.state})"


class ProviderSyncCursor(models.Model):
    """Where a platform sync stands for one scope (MTurk: ``hit:<HITId>``).

    ``state`` holds what the next sync resumes from (MTurk: the ``NextToken`` of the
    HIT's assignment listing while a read is under way, ``null`` once read to its
    end), what it saw, and when. Written by the sync in bulk, one row per scope.
    """

    provider = models.CharField(max_length=16, choices=provider_choices)
    scope = models.CharField(max_length=200)
    state = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["provider", "scope"]
        constraints = [
            models.UniqueConstraint(fields=["provider", "scope"], name="providersynccursor_unique")
        ]

    def __str__(self) -> str:
        return f"{self.provider} {self.scope}"
