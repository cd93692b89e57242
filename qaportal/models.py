"""Shared infrastructure tables (app label ``qaportal``)."""

from __future__ import annotations

from django.db import models


class OutboxMessage(models.Model):
    """Work that must follow a commit: a Celery task and its JSON arguments.

    Written in the same transaction as the change that calls for it, dispatched
    when that transaction commits, re-dispatched by beat until ``done_at`` is set.
    """

    task = models.CharField(max_length=200)
    args = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    dispatches = models.PositiveIntegerField(default=0)
    done_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")

    class Meta:
        indexes = [
            models.Index(
                fields=["created_at"],
                name="outbox_undone_idx",
                condition=models.Q(done_at__isnull=True),
            )
        ]

    def __str__(self) -> str:
        return f"{self.task}{self.args} ({'done' if self.done_at else 'waiting'})"
