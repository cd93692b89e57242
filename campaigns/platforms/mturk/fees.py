"""Mechanical Turk's fee model (kept apart from its API client)."""

from __future__ import annotations

from decimal import Decimal

from campaigns.design.platform import FeeModel
from qaportal.money import CENT, to_cents


class MTurkFees(FeeModel):
    """Mechanical Turk's commission (requester pricing page).

    20 % of reward and bonus; a further 20 % of the reward for HITs with 10 or
    more assignments; a further 5 % for HITs that require Masters (``masters``, see
    ``campaigns.platforms.requires_masters``); at
    least $0.01 per assignment and per bonus. Nothing paid, nothing charged: a zero
    amount (a draft stage without a reward) has no fee. Not modelled: premium
    qualification surcharges.
    """

    BASE = Decimal("0.20")
    LARGE_HIT_EXTRA = Decimal("0.20")
    LARGE_HIT_ASSIGNMENTS = 10
    MASTERS_EXTRA = Decimal("0.05")

    def __init__(self, *, masters: bool = False) -> None:
        self.masters = masters

    def description(self) -> str:
        return (
            "MTurk: 20 % of rewards and bonuses, +20 % for HITs of 10 or more assignments, "
            "+5 % with Masters; at least $0.01."
        )

    def assignment_fee(self, *, reward: Decimal, max_assignments: int) -> Decimal:
        rate = self.BASE
        if max_assignments >= self.LARGE_HIT_ASSIGNMENTS:
            rate += self.LARGE_HIT_EXTRA
        if self.masters:
            rate += self.MASTERS_EXTRA
        return self._at_least_a_cent(reward, rate)

    def bonus_fee(self, *, amount: Decimal) -> Decimal:
        return self._at_least_a_cent(amount, self.BASE)

    @staticmethod
    def _at_least_a_cent(amount: Decimal, rate: Decimal) -> Decimal:
        if amount <= 0:
            return Decimal("0.00")
        return max(to_cents(amount * rate), CENT)
