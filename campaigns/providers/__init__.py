"""Pick a provider's pieces by name. Paid providers' API clients load lazily."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from campaigns.providers.base import FeeModel, NoFees, PermanentProviderError, Provider
from campaigns.providers.fees import MTurkFees, ProlificFees


def requires_masters(requirements: Iterable[Mapping[str, Any]] | None) -> bool:
    """True when a stage's ``qualification_requirements`` ask for MTurk Masters."""
    return any(isinstance(r, Mapping) and r.get("kind") == "masters" for r in requirements or [])


def fee_model_for(provider: str, *, masters: bool = False) -> FeeModel:
    """The fee model of ``provider`` (``local``, ``mturk`` or ``prolific``); ``masters``:
    for a stage that requires MTurk Masters (``requires_masters``), which costs more."""
    if provider == "mturk":
        return MTurkFees(masters=masters)
    if provider == "prolific":
        return ProlificFees(Decimal(getattr(settings, "PROLIFIC_FEE_RATE", "0.333")))
    if provider == "local":
        return NoFees()
    raise ValueError(f"Unknown provider {provider!r}")


def provider_moves_money(provider: str) -> bool:
    """Whether ``provider`` pays workers (a crowd platform); the local workforce pays no
    rewards through qaportal, so nothing is held, forecast or on its way there."""
    return provider != "local"


def provider_has_sandbox(provider: str) -> bool:
    """Whether ``provider`` offers a sandbox where no real money moves (MTurk's);
    Prolific has none, so its studies always pay."""
    return provider == "mturk"


def currency_for(provider: str) -> str:
    return "GBP" if provider == "prolific" else "USD"


def provider_for(name: str, *, campaign_id: int | None = None) -> Provider:
    """The provider called ``name``, acting for campaign ``campaign_id``.

    A campaign whose owner stored its own platform credentials
    (``campaigns.services.credentials``) gets a provider with those; otherwise the
    provider is configured from settings. Paid providers are imported here, on first
    use, so that importing the campaigns app never loads an API client (and a
    deployment without ``requests`` or ``boto3`` still runs the local workforce).
    """
    if name == "local":
        from campaigns.providers.local import LocalProvider

        return LocalProvider()
    from campaigns.services.credentials import campaign_credentials_for

    try:
        own = campaign_credentials_for(campaign_id=campaign_id, provider=name)
    except ImproperlyConfigured as exc:  # unreadable stored credentials: say so, act with none
        raise PermanentProviderError(str(exc)) from exc
    if name == "prolific":
        from campaigns.providers.prolific import ProlificProvider

        if own is not None:
            return ProlificProvider.from_credentials(**own)
        return ProlificProvider.from_settings()
    if name == "mturk":
        from campaigns.providers.mturk import MTurkProvider

        if own is not None:
            return MTurkProvider.from_credentials(**own)
        return MTurkProvider.from_settings()
    raise ValueError(f"Unknown provider {name!r}")
