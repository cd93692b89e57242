"""What the REST API remembers between requests: idempotency records."""

from __future__ import annotations

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models


class IdempotencyRecord(models.Model):
    """The answer to one request made with an ``Idempotency-Key`` header.

    One row per (user, key): the same key with the same request gets the stored
    answer again; with a different request it is refused. Rows older than
    ``API_IDEMPOTENCY_TTL_HOURS`` are treated as absent and replaced.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="idempotency_records"
    )
    key = models.CharField(max_length=200)
    request_hash = models.CharField(max_length=64, help_text="SHA-256 of method, path and body.")
    method = models.CharField(max_length=8)
    path = models.CharField(max_length=500)
    response_status = models.PositiveSmallIntegerField()
    response_body = models.JSONField(encoder=DjangoJSONEncoder, null=True)
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "key"], name="idempotencyrecord_user_key"),
        ]
        indexes = [models.Index(fields=["created_at"])]

    def __str__(self) -> str:
        return f"{self.method} {self.path} [{self.key}]"


class ExportAudit(models.Model):
    """One export on record: who asked, for which campaign and format, when and through
    what (API, command, page), whether it showed workers' real platform ids, and (once
    it finished) what it contained: the dataset version, the campaign's state, row
    counts per split and a checksum of the data, so a published version can be
    reproduced. Exports with real worker ids are always recorded, before they start."""

    campaign = models.ForeignKey(
        "campaigns.Campaign", on_delete=models.CASCADE, related_name="export_audits"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Empty for a command run without --user.",
    )
    export_format = models.CharField(max_length=40)
    via = models.CharField(max_length=20)
    reason = models.TextField(blank=True)
    revealed_worker_ids = models.BooleanField(default=False)
    dataset_version = models.CharField(max_length=40, blank=True)
    campaign_state = models.CharField(max_length=16, blank=True)
    row_counts = models.JSONField(default=dict, blank=True, help_text="Rows per split or file.")
    checksum = models.CharField(
        max_length=71, blank=True, help_text="sha256:<hex> of the exported data."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        ids = " with real worker ids" if self.revealed_worker_ids else ""
        return f"{self.export_format} of campaign {self.campaign_id}{ids}"
