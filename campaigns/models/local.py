"""Access to the built-in local workforce: invite links and grants to logged-in users.

A local campaign has no platform to recruit workers. A requester either sends
signed invite links (anyone who follows one becomes a worker of the campaign)
or grants the campaign to people who have a qaportal account.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class InviteLink(models.Model):
    """A revocable, expiring invitation to work on a campaign (optionally one stage).

    The URL carries a signed token naming this row; the row says whether the
    link still admits workers. Changes go through ``campaigns.work.invites``.
    """

    campaign = models.ForeignKey(
        "campaigns.Campaign", on_delete=models.CASCADE, related_name="invite_links"
    )
    stage = models.ForeignKey(
        "campaigns.Stage",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="invite_links",
        help_text="Send workers straight to this stage; empty: the campaign's first stage.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    max_uses = models.PositiveIntegerField(
        null=True, blank=True, help_text="How many workers may join through it; empty: no limit."
    )
    use_count = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(max_uses__isnull=True) | Q(max_uses__gte=1),
                name="invitelink_max_uses_positive",
            ),
            models.CheckConstraint(
                condition=Q(max_uses__isnull=True) | Q(use_count__lte=models.F("max_uses")),
                name="invitelink_uses_within_max",
            ),
        ]

    def __str__(self) -> str:
        return f"Invite {self.pk} to {self.campaign_id}"


class InviteRedemption(models.Model):
    """A worker who joined through an invite link; revoking the link cuts them off."""

    invite = models.ForeignKey(InviteLink, on_delete=models.CASCADE, related_name="redemptions")
    worker = models.OneToOneField(
        "campaigns.Worker", on_delete=models.CASCADE, related_name="invite_redemption"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"Worker {self.worker_id} via invite {self.invite_id}"


class LocalGrant(models.Model):
    """A logged-in user may work on a local campaign as its annotator."""

    campaign = models.ForeignKey(
        "campaigns.Campaign", on_delete=models.CASCADE, related_name="local_grants"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="local_grants"
    )
    granted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["campaign", "user"], name="localgrant_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id} on {self.campaign_id}"
