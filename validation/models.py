"""What the review automation records beyond the assignments it decides."""

from __future__ import annotations

from django.db import models


class ReviewRun(models.Model):
    """One run of a stage's review rules (``validation.services.stage_review``).

    The decisions themselves live on the assignments (status, ``decision_*``,
    ``review_details``); this row says when the rules ran and what they did.
    """

    stage = models.ForeignKey(
        "campaigns.Stage", on_delete=models.CASCADE, related_name="review_runs"
    )
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    reviewed = models.PositiveIntegerField(default=0)
    # {"approve": n, "reject": n, "hold": n, "none": n, "proposed": n}
    decisions = models.JSONField(default=dict, blank=True)
    # {"revoked": n, "blocked": n, "bonuses": n}
    worker_actions = models.JSONField(default=dict, blank=True)
    batches = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [models.Index(fields=["stage", "-started_at"])]

    def __str__(self) -> str:
        return f"Review of stage {self.stage_id} at {self.started_at:%Y-%m-%d %H:%M}"
