"""Pick a provider's pieces by name. Paid providers' API clients load lazily."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from campaigns.design.platform import FeeModel, platform_for
from campaigns.platforms.base import PermanentProviderError, Provider
from campaigns.platforms.local.provider import LocalProvider


# Requirement kinds each platform checks itself (MTurk's system qualifications,
# Prolific's filters). The local workforce has no platform history: none of them.
# Custom qualifications (quiz, round, manual grants) are checked by qaportal on every
# provider and are not listed here.
def requires_masters(requirements: Iterable[Mapping[str, Any]] | None) -> bool:
    """True when a stage's ``qualification_requirements`` ask for MTurk Masters."""
    return any(isinstance(r, Mapping) and r.get("kind") == "masters" for r in requirements or [])


def fee_model_for(provider: str, *, masters: bool = False) -> FeeModel:
    """The fee model of ``provider``; ``masters``: for a stage that requires MTurk
    Masters (``requires_masters``), which costs more there."""
    return platform_for(provider).fee_model(requirements=[{"kind": "masters"}] if masters else None)


def currency_for(provider: str) -> str:
    """The currency ``provider`` pays in (Prolific: the workspace's, ``PROLIFIC_CURRENCY``)."""
    return platform_for(provider).currency


def provider_for(name: str, *, campaign_id: int | None = None) -> Provider:
    """The provider called ``name``, acting for campaign ``campaign_id``.

    A campaign whose owner stored its own platform credentials
    (``campaigns.platforms.credentials``) gets a provider with those; otherwise the
    provider is configured from settings. Paid providers are imported here, on first
    use, so that importing the campaigns app never loads an API client (and a
    deployment without ``requests`` or ``boto3`` still runs the local workforce).
    """
    if name == "local":
        return LocalProvider()
    from campaigns.platforms.credentials import campaign_credentials_for

    try:
        own = campaign_credentials_for(campaign_id=campaign_id, provider=name)
    except ImproperlyConfigured as exc:  # unreadable stored credentials: say so, act with none
        raise PermanentProviderError(str(exc)) from exc
    if name == "prolific":
        from campaigns.platforms.prolific.provider import ProlificProvider

        if own is not None:
            return ProlificProvider.from_credentials(**own)
        return ProlificProvider.from_settings()
    if name == "mturk":
        from campaigns.platforms.mturk.provider import MTurkProvider

        if own is not None:
            return MTurkProvider.from_credentials(**own)
        return MTurkProvider.from_settings()
    raise ValueError(f"Unknown provider {name!r}")
