"""Background jobs: an export written to storage, or a large item upload stored
all or nothing, run by a Celery worker while the page shows its progress."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class JobKind(models.TextChoices):
    EXPORT = "export", "Export"
    UPLOAD = "upload", "Item upload"


class JobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class Job(models.Model):
    """One export or upload run in the background.

    ``attempt`` grows each time a worker claims the job; a worker writes only while
    its attempt is the job's, so a job restarted after a worker died is never
    finished twice. ``heartbeat_at`` is refreshed while it runs: a running job whose
    heartbeat is stale is restarted by ``jobs_reconcile``.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    kind = models.CharField(max_length=10, choices=JobKind.choices)
    campaign = models.ForeignKey(
        "campaigns.Campaign", on_delete=models.CASCADE, related_name="jobs"
    )
    stage = models.ForeignKey(
        "campaigns.Stage", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    export_format = models.CharField(max_length=40, blank=True)
    options = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=JobStatus.choices, default=JobStatus.QUEUED)
    rows_done = models.PositiveBigIntegerField(default=0)
    rows_total = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Expected rows, for the progress bar (an estimate)."
    )
    row_count = models.PositiveBigIntegerField(null=True, blank=True)
    byte_count = models.PositiveBigIntegerField(null=True, blank=True)
    checksum = models.CharField(max_length=64, blank=True, help_text="SHA-256 of the file, hex.")
    input_name = models.CharField(max_length=300, blank=True, help_text="Upload: stored input.")
    input_filename = models.CharField(max_length=200, blank=True)
    file_name = models.CharField(max_length=300, blank=True, help_text="Export: stored output.")
    download_name = models.CharField(max_length=200, blank=True)
    content_type = models.CharField(max_length=100, blank=True)
    result = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    errors = models.JSONField(default=list, blank=True)
    attempt = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "heartbeat_at"], name="job_status_heartbeat")]

    def __str__(self) -> str:
        return f"{self.kind} job {self.id} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status in (JobStatus.DONE, JobStatus.FAILED)
