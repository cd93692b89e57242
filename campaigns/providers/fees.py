"""Fee models of the paid platforms (kept apart from their API clients)."""

from __future__ import annotations

from decimal import Decimal

from campaigns.providers.base import CENT, FeeModel, to_cents


class MTurkFees(FeeModel):
    """Mechanical Turk's commission (requester pricing page).

    20 % of reward and bonus; a further 20 % of the reward for HITs with 10 or
    more assignments; at least $0.01 per assignment and per bonus.
    """

    BASE = Decimal("0.20")
    LARGE_HIT_EXTRA = Decimal("0.20")
    LARGE_HIT_ASSIGNMENTS = 10

    def assignment_fee(self, *, reward: Decimal, max_assignments: int) -> Decimal:
        rate = self.BASE
        if max_assignments >= self.LARGE_HIT_ASSIGNMENTS:
            rate += self.LARGE_HIT_EXTRA
        return max(to_cents(reward * rate), CENT)

    def bonus_fee(self, *, amount: Decimal) -> Decimal:
        return max(to_cents(amount * self.BASE), CENT)


class ProlificFees(FeeModel):
    """Prolific's service fee: a rate on participant payments (rewards and bonuses).

    The rate depends on the account (and VAT); set ``PROLIFIC_FEE_RATE``.
    """

    def __init__(self, rate: Decimal) -> None:
        self.rate = rate

    def assignment_fee(self, *, reward: Decimal, max_assignments: int) -> Decimal:
        return to_cents(reward * self.rate)

    def bonus_fee(self, *, amount: Decimal) -> Decimal:
        return to_cents(amount * self.rate)
