"""Prolific's fee model (kept apart from its API client)."""

from __future__ import annotations

from decimal import Decimal

from campaigns.design.platform import FeeModel
from qaportal.money import to_cents


class ProlificFees(FeeModel):
    """Prolific's service fee: a rate on participant payments (rewards and bonuses).

    The rate depends on the account (and VAT); set ``PROLIFIC_FEE_RATE``.
    """

    def __init__(self, rate: Decimal) -> None:
        self.rate = rate

    def description(self) -> str:
        percent = (self.rate * 100).quantize(Decimal("0.1"))
        return (
            f"Prolific's service fee: {percent} % of rewards and bonuses "
            "(PROLIFIC_FEE_RATE; your account's rate and VAT may differ)."
        )

    def assignment_fee(self, *, reward: Decimal, max_assignments: int) -> Decimal:
        return to_cents(reward * self.rate)

    def bonus_fee(self, *, amount: Decimal) -> Decimal:
        return to_cents(amount * self.rate)
