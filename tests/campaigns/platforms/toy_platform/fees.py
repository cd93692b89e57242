"""Toy Crowd's fees: 10 % of every reward and bonus, at least a cent."""

from __future__ import annotations

from decimal import Decimal

from campaigns.design.platform import FeeModel
from qaportal.money import CENT, to_cents


class ToyFees(FeeModel):
    RATE = Decimal("0.10")

    def description(self) -> str:
        return "Toy Crowd: 10 % of rewards and bonuses, at least 0.01."

    def assignment_fee(self, *, reward: Decimal, max_assignments: int) -> Decimal:
        return self._fee(reward)

    def bonus_fee(self, *, amount: Decimal) -> Decimal:
        return self._fee(amount)

    def _fee(self, amount: Decimal) -> Decimal:
        return max(to_cents(amount * self.RATE), CENT) if amount > 0 else Decimal("0.00")
