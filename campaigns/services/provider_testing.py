"""Setting a platform up around a campaign: its test participants (a pilot with real
people at no cost) and its webhook subscriptions.

These calls change the platform's state but move no money and are answered at once, so
they are made directly (the requester sees the platform's refusal, say a workspace
without the test feature), not through a ``ProviderOperation``.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from campaigns.models import Campaign
from campaigns.providers import provider_for
from campaigns.providers.base import ProviderError
from campaigns.providers.rules import rules_for
from campaigns.services.errors import DomainError


def campaign_test_participant_add(*, campaign: Campaign, email: str) -> str:
    """Create a test participant for the campaign's platform account; its participant id.

    The participant takes the campaign's test studies (``campaign_start(…, test_study=
    True)``) end to end and cannot cash out. Prolific enables the feature per workspace;
    its refusal is the ``DomainError``'s message.
    """
    if not rules_for(campaign.provider).test_participants:
        raise DomainError(
            "This campaign's platform has no test participants.",
            errors={"provider": [campaign.provider]},
        )
    provider = provider_for(campaign.provider, campaign_id=campaign.pk)
    try:
        return str(provider.test_participant_create(email=email))  # type: ignore[attr-defined]
    except ProviderError as exc:
        raise DomainError(str(exc), errors={"email": [str(exc)]}) from exc


def prolific_hooks_setup(*, new_secret: bool = False, target_url: str = "") -> dict[str, Any]:
    """Subscribe qaportal's hook endpoint (``SITE_URL/work/prolific/hooks/``) to Prolific's
    study and submission status events, with the environment's account; with
    ``new_secret`` create the workspace's signing secret (returned once, for
    ``PROLIFIC_WEBHOOK_SECRET``). Idempotent for the subscriptions."""
    url = target_url or f"{str(getattr(settings, 'SITE_URL', '')).rstrip('/')}/work/prolific/hooks/"
    provider = provider_for("prolific")
    try:
        return dict(provider.hooks_setup(target_url=url, new_secret=new_secret))  # type: ignore[attr-defined]
    except ProviderError as exc:
        raise DomainError(str(exc)) from exc
