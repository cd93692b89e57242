"""Money helpers: amounts are ``Decimal`` in whole cents, never floats."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def to_cents(amount: Decimal) -> Decimal:
    """Round a money amount to whole cents, half up (the platforms' rule)."""
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)
