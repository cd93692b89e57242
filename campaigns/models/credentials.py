"""A campaign's own platform credentials, stored encrypted."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from campaigns.models.choices import provider_choices


class ProviderCredential(models.Model):
    """Credentials for one platform, used by one campaign instead of the environment's.

    ``ciphertext`` is a Fernet token (``campaigns.platforms.credentials``); the values
    are never stored, shown or logged in clear. ``hints`` keeps the last characters
    of each value so the owner can tell which key is in use.
    """

    campaign = models.ForeignKey(
        "campaigns.Campaign", on_delete=models.CASCADE, related_name="credentials"
    )
    provider = models.CharField(max_length=16, choices=provider_choices)
    ciphertext = models.TextField()
    hints = models.JSONField(default=dict)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "provider"], name="providercredential_one_per_provider"
            )
        ]

    def __str__(self) -> str:
        return f"{self.provider} credentials of campaign {self.campaign_id}"

    def __repr__(self) -> str:  # never the ciphertext: it is the secret, if a key leaks
        return f"<ProviderCredential {self.provider} campaign={self.campaign_id}>"
