"""Converting USD prices (the published protocols' MTurk rewards) into a campaign's currency.

A recipe's rewards are what its paper paid on MTurk, in US dollars. A campaign on
Prolific pays in its workspace's currency (GBP by default): $1.25 must not become
£1.25. The rate is the requester's to see and set: given when the campaign is made
from the recipe (``usd_rate``), else ``USD_EXCHANGE_RATES[<currency>]`` (a setting, units
of the currency per US dollar). It is recorded on each converted stage
(``config["priced_in"]``) and shown with cost estimates.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from django.conf import settings

from campaigns.providers.base import CENT
from campaigns.services.errors import DomainError

DEFAULT_USD_RATES = {"GBP": "0.79", "EUR": "0.92"}


@dataclass(frozen=True)
class Conversion:
    """US dollars → ``currency`` at ``rate`` (``currency`` units per dollar)."""

    currency: str
    rate: Decimal
    source: str  # "requester" (given) or "setting" (USD_EXCHANGE_RATES)

    def convert(self, usd: Decimal) -> Decimal:
        """``usd`` in the campaign's currency, to the cent (half up)."""
        return (Decimal(usd) * self.rate).quantize(CENT, rounding=ROUND_HALF_UP)

    def as_dict(self) -> dict[str, str]:
        return {"from": "USD", "to": self.currency, "rate": str(self.rate), "source": self.source}


def usd_conversion(*, currency: str, usd_rate: Any = None) -> Conversion | None:
    """How to turn USD prices into ``currency``; None when ``currency`` is USD.

    ``usd_rate`` (the requester's) wins over the setting. A rate that is not a positive
    number, or no rate at all for the currency, is refused (``DomainError``): a price
    is never carried over unconverted.
    """
    currency = currency.upper()
    if currency == "USD":
        return None
    source = "requester"
    raw = usd_rate
    if raw is None or raw == "":
        table = {**DEFAULT_USD_RATES, **(getattr(settings, "USD_EXCHANGE_RATES", None) or {})}
        raw = table.get(currency)
        source = "setting"
    if raw is None:
        raise DomainError(
            f"Recipe prices are in USD and this campaign pays in {currency}: give usd_rate "
            f"({currency} per US dollar) or set USD_EXCHANGE_RATES.",
            errors={"usd_rate": ["required"]},
        )
    try:
        rate = Decimal(str(raw))
    except InvalidOperation:
        rate = Decimal("NaN")
    if not rate.is_finite() or rate <= 0 or rate > 1000:
        raise DomainError(
            f"usd_rate must be a positive number of {currency} per US dollar, not {raw!r}.",
            errors={"usd_rate": [str(raw)]},
        )
    return Conversion(currency=currency, rate=rate, source=source)
