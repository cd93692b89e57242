"""The campaign's datasheet (Gebru et al., 2021): Markdown kept with the campaign, filled
in advance from what qaportal recorded and completed by the requester."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Datasheet(models.Model):
    """The requester's datasheet for a campaign's dataset, as Markdown. Absent until the
    requester first saves one; until then exports use the pre-filled text."""

    campaign = models.OneToOneField(
        "campaigns.Campaign", on_delete=models.CASCADE, related_name="datasheet"
    )
    text = models.TextField()
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )

    def __str__(self) -> str:
        return f"Datasheet of campaign {self.campaign_id}"
