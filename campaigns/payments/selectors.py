"""Reads of the ledger a worker's pages need."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from campaigns.models import Assignment, LedgerEntry, LedgerKind


@dataclass(frozen=True)
class BonusShown:
    """A bonus as its worker reads it: the amount and the requester's reason."""

    amount: Decimal
    currency: str
    reason: str


def assignment_bonuses(*, assignment: Assignment) -> list[BonusShown]:
    """The bonuses recorded for ``assignment``, oldest first, with the reason the
    requester gave (the review queue says "the worker sees it")."""
    rows = (
        LedgerEntry.objects.filter(assignment=assignment, kind=LedgerKind.BONUS)
        .order_by("created_at", "id")
        .values_list("amount", "currency", "memo")
    )
    return [BonusShown(amount=a, currency=c, reason=m) for a, c, m in rows]
