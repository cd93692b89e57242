"""Fee models of the paid platforms (kept apart from their API clients)."""

from __future__ import annotations

from decimal import Decimal

from campaigns.providers.base import CENT, FeeModel, to_cents


class MTurkFees(FeeModel):
    """Mechanical Turk's commission (requester pricing page).

    20 % of reward and bonus; a further 20 % of the reward for HITs with 10 or
    more assignments; a further 5 % for HITs that require Masters (``masters``, see
    ``campaigns.providers.requires_masters``); at
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
