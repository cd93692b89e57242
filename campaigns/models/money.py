"""Money: the ledger, every cent planned, committed and paid."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from campaigns.models.choices import (
    LedgerKind,
    LedgerStatus,
)


class LedgerEntry(models.Model):
    """One amount planned, committed or paid. ``key`` makes each entry happen once."""

    campaign = models.ForeignKey(
        "campaigns.Campaign", on_delete=models.PROTECT, related_name="ledger"
    )
    stage = models.ForeignKey(
        "campaigns.Stage", null=True, blank=True, on_delete=models.PROTECT, related_name="ledger"
    )
    kind = models.CharField(max_length=16, choices=LedgerKind.choices)
    status = models.CharField(
        max_length=16, choices=LedgerStatus.choices, default=LedgerStatus.PLANNED
    )
    amount = models.DecimalField(max_digits=12, decimal_places=2)
    currency = models.CharField(max_length=3, default="USD")
    key = models.CharField(
        max_length=200, unique=True, help_text="Idempotency key, e.g. reward:assignment:42."
    )
    assignment = models.ForeignKey(
        "campaigns.Assignment",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="ledger",
    )
    worker = models.ForeignKey(
        "campaigns.Worker", null=True, blank=True, on_delete=models.PROTECT, related_name="ledger"
    )
    operation = models.ForeignKey(
        "campaigns.ProviderOperation",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="ledger",
    )
    memo = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "ledger entries"
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(amount__gte=0), name="ledger_amount_non_negative"),
        ]
        indexes = [models.Index(fields=["campaign", "kind", "status"])]

    def __str__(self) -> str:
        return f"{self.kind} {self.amount} {self.currency} ({self.status})"
