"""Guards on a bonus: the key of one asked without an ``Idempotency-Key`` (derived
from what the bonus is, assignment, amount and reason, and a short window, so a client
that retries the same request never pays twice), and the campaign's ceiling."""

from __future__ import annotations

import hashlib
import time
from decimal import Decimal

from django.conf import settings

from campaigns.models import Campaign, LedgerEntry, LedgerKind, ProviderOperation
from campaigns.services.errors import DomainError


def _key(*, assignment_id: int, amount: Decimal, reason: str, window: int) -> str:
    what = f"{assignment_id}|{amount.normalize():f}|{reason.strip()}|{window}"
    return f"api:natural:{hashlib.sha256(what.encode()).hexdigest()[:32]}"


def _used(key: str) -> bool:
    return (
        LedgerEntry.objects.filter(key=f"{LedgerKind.BONUS}:{key}").exists()
        or ProviderOperation.objects.filter(idempotency_key__endswith=key).exists()
    )


def bonus_natural_key(*, assignment_id: int, amount: Decimal, reason: str) -> str:
    """The payment key for this bonus: the same within ``BONUS_NATURAL_KEY_SECONDS``
    (a retry lands on the bonus already paid). Windows are fixed buckets; a retry just
    past a bucket's end finds the previous bucket's payment and reuses its key."""
    seconds = max(1, int(settings.BONUS_NATURAL_KEY_SECONDS))
    window = int(time.time()) // seconds
    previous = _key(assignment_id=assignment_id, amount=amount, reason=reason, window=window - 1)
    if _used(previous):
        return previous
    return _key(assignment_id=assignment_id, amount=amount, reason=reason, window=window)


def bonus_ceiling_check(*, campaign: Campaign, amount: Decimal) -> None:
    """Refuse (``DomainError``) a single bonus above the campaign's ``bonus_max`` (or
    the server's ``BONUS_MAX_DEFAULT`` when the campaign sets none): a typo of 500 for
    5.00 must not pay."""
    ceiling = campaign.bonus_max
    if ceiling is None:
        ceiling = Decimal(str(settings.BONUS_MAX_DEFAULT))
    if amount > ceiling:
        raise DomainError(
            f"A bonus of {amount} is above this campaign's ceiling of {ceiling} "
            f"{campaign.currency}; raise the campaign's bonus_max to pay more.",
            errors={"amount": [f"at most {ceiling}"]},
        )
