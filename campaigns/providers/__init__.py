"""Pick a provider's pieces by name. Paid providers' API clients load lazily."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings

from campaigns.providers.base import FeeModel, NoFees
from campaigns.providers.fees import MTurkFees, ProlificFees


def fee_model_for(provider: str) -> FeeModel:
    """The fee model of ``provider`` (``local``, ``mturk`` or ``prolific``)."""
    if provider == "mturk":
        return MTurkFees()
    if provider == "prolific":
        return ProlificFees(Decimal(getattr(settings, "PROLIFIC_FEE_RATE", "0.333")))
    if provider == "local":
        return NoFees()
    raise ValueError(f"Unknown provider {provider!r}")


def currency_for(provider: str) -> str:
    return "GBP" if provider == "prolific" else "USD"
