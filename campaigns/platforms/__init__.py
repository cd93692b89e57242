"""A platform's pieces by name, through the registry (``platform_for``): its provider,
fee model and currency. Paid providers' API clients load lazily (``Platform.provider``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from campaigns.design.platform import FeeModel, platform_for
from campaigns.platforms.base import Provider


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
    """The provider of platform ``name``, acting for campaign ``campaign_id``
    (``Platform.provider``: the owner's stored credentials, else the environment's)."""
    provider: Provider = platform_for(name).provider(campaign_id=campaign_id)
    return provider
