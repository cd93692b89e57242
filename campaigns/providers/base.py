"""The provider interface: every crowd platform is one implementation of it.

Nothing outside ``campaigns/providers/`` talks to a platform. A provider also
owns its fee model, so cost estimates and the ledger agree with the platform.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from decimal import ROUND_HALF_UP, Decimal
from typing import ClassVar

CENT = Decimal("0.01")


def to_cents(amount: Decimal) -> Decimal:
    """Round a money amount to whole cents, half up (the platforms' rule)."""
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


class FeeModel(ABC):
    """What the platform charges on top of what workers receive."""

    @abstractmethod
    def assignment_fee(self, *, reward: Decimal, max_assignments: int) -> Decimal:
        """Fee for one assignment paying ``reward`` on a HIT with ``max_assignments``."""

    @abstractmethod
    def bonus_fee(self, *, amount: Decimal) -> Decimal:
        """Fee for one bonus payment of ``amount``."""


class NoFees(FeeModel):
    def assignment_fee(self, *, reward: Decimal, max_assignments: int) -> Decimal:
        return Decimal("0.00")

    def bonus_fee(self, *, amount: Decimal) -> Decimal:
        return Decimal("0.00")


class Provider(ABC):
    """One crowd platform. Subclasses implement the publishing and payment calls."""

    name: ClassVar[str]
    currency: ClassVar[str] = "USD"
    fee_model: ClassVar[FeeModel]
    moves_money: ClassVar[bool] = True
