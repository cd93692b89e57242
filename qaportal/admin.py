"""The outbox in the admin: what waits to run after a commit, and what failed."""

from __future__ import annotations

from django.contrib import admin

from qaportal.models import OutboxMessage


@admin.register(OutboxMessage)
class OutboxMessageAdmin(admin.ModelAdmin):
    list_display = ("id", "task", "created_at", "dispatches", "dispatched_at", "done_at")
    list_filter = ("task",)
    readonly_fields = tuple(f.name for f in OutboxMessage._meta.fields)

    def has_add_permission(self, request: object) -> bool:
        return False
