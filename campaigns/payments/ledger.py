"""The ledger's one writer: every ``LedgerEntry`` row is made or changed here.

Rooms that move money decide what and how much (the platforms: rewards, fees,
bonuses; validation and linking through the ``Platform`` interface); these functions
write it. Every entry has a unique ``key`` (its idempotency key): writing an entry
whose key exists changes nothing. Status goes ``planned`` (found, nothing asked yet)
or ``committed`` (asked of the platform with its operation) → ``paid`` or
``cancelled`` when the operation is done or surely failed (``ledger_operation_settle``).

Locking: none of its own. Callers hold the rows the money is about (the assignment,
the campaign for a budget check) and call these inside their transaction, so the
entries commit with the operation that pays them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from django.utils import timezone

from campaigns.models import (
    Assignment,
    Campaign,
    LedgerEntry,
    LedgerKind,
    LedgerStatus,
    ModelCall,
    ProviderOperation,
    Stage,
)


@dataclass(frozen=True)
class LedgerBonus:
    """One bonus to write: its entry's ``key`` (and ``bonus_fee:<key>`` for a fee),
    the answer and worker it rewards, the amount and why (``memo``)."""

    key: str
    assignment_id: int
    worker_id: int
    amount: Decimal
    memo: str
    fee: Decimal | None = None  # None: no fee entry
    operation_id: int | None = None


def ledger_approval_commit(
    *,
    assignment: Assignment,
    operation: ProviderOperation,
    pay_kind: str,
    reward: Decimal,
    fee: Decimal,
    currency: str,
) -> None:
    """Commit the reward (``pay_kind``: reward or quiz payment) and platform fee of
    approving ``assignment``, with the ``operation`` that asks for it.

    Idempotent: keys ``reward:assignment:<id>`` and ``platform_fee:assignment:<id>``
    (whatever ``pay_kind``: how an approval is found again); a second call keeps the
    first entries. Call in the transaction that holds the assignment row's lock."""
    hit = assignment.hit
    for kind, amount in ((LedgerKind.REWARD, reward), (LedgerKind.PLATFORM_FEE, fee)):
        LedgerEntry.objects.get_or_create(
            key=f"{kind}:assignment:{assignment.pk}",
            defaults={
                "campaign": hit.stage.campaign,
                "stage": hit.stage,
                "kind": pay_kind if kind == LedgerKind.REWARD else kind,
                "status": LedgerStatus.COMMITTED,
                "amount": amount,
                "currency": currency,
                "assignment": assignment,
                "worker": assignment.worker,
                "operation": operation,
            },
        )


def ledger_bonus_commit(
    *,
    campaign: Campaign,
    assignment: Assignment,
    operation: ProviderOperation,
    key: str,
    amount: Decimal,
    fee: Decimal | None,
    currency: str,
    memo: str,
) -> None:
    """Commit one bonus (``bonus:<key>``) and, unless ``fee`` is None, its platform fee
    (``bonus_fee:<key>``), with the ``operation`` that pays them.

    Not idempotent by itself: the caller has found no operation under the bonus's
    key (the keys are unique, so a second write fails rather than doubles). Call in
    the transaction that holds the assignment and campaign rows' locks."""
    parts = [(LedgerKind.BONUS, amount)]
    if fee is not None:
        parts.append((LedgerKind.BONUS_FEE, fee))
    for kind, value in parts:
        LedgerEntry.objects.create(
            key=f"{kind}:{key}",
            campaign=campaign,
            stage=assignment.hit.stage,
            kind=kind,
            status=LedgerStatus.COMMITTED,
            amount=value,
            currency=currency,
            assignment=assignment,
            worker=assignment.worker,
            operation=operation,
            memo=memo[:300],
        )


def ledger_bonuses_write(
    *, stage: Stage, bonuses: Sequence[LedgerBonus], status: str, currency: str
) -> int:
    """Write many bonuses of ``stage`` at once with ``status`` (``planned``: nothing asked
    yet; ``committed``: each with its ``operation_id``); the number of entries new.

    Idempotent: entries go in with conflicts on ``key`` ignored (the bonus under
    ``key``, its fee under ``bonus_fee:<key>``), so writing a bonus twice writes it
    once. One INSERT; takes no lock (a key written at once by another transaction
    waits on the unique index, then is skipped). Call in the transaction that requests
    the operations."""
    rows: list[LedgerEntry] = []
    for bonus in bonuses:
        parts = [(LedgerKind.BONUS, bonus.key, bonus.amount)]
        if bonus.fee is not None:
            parts.append((LedgerKind.BONUS_FEE, f"{LedgerKind.BONUS_FEE}:{bonus.key}", bonus.fee))
        rows.extend(
            LedgerEntry(
                campaign_id=stage.campaign_id,
                stage=stage,
                kind=kind,
                status=status,
                amount=amount,
                currency=currency,
                key=key,
                assignment_id=bonus.assignment_id,
                worker_id=bonus.worker_id,
                operation_id=bonus.operation_id,
                memo=bonus.memo[:300],
            )
            for kind, key, amount in parts
        )
    if not rows:
        return 0
    return len(LedgerEntry.objects.bulk_create(rows, ignore_conflicts=True))


def ledger_model_usage_record(*, call: ModelCall, amount: Decimal, currency: str) -> bool:
    """Record what model call ``call`` cost the campaign (``model_usage``, paid: the
    tokens are spent), once: key ``model_usage:call:<id>``; whether this call wrote it.

    ``amount`` is in cents: the assist room passes the cents the campaign's running
    total of model costs crossed with this call, so fractions of a cent add up.
    Call in the transaction that marks the call done, holding the campaign row.
    """
    _, created = LedgerEntry.objects.get_or_create(
        key=f"{LedgerKind.MODEL_USAGE}:call:{call.pk}",
        defaults={
            "campaign_id": call.campaign_id,
            "stage_id": call.stage_id,
            "kind": LedgerKind.MODEL_USAGE,
            "status": LedgerStatus.PAID,
            "amount": amount,
            "currency": currency,
            "assignment_id": call.assignment_id,
            "memo": f"model call {call.pk} ({call.purpose}): "
            f"{call.prompt_tokens or 0} + {call.completion_tokens or 0} tokens",
        },
    )
    return created


def ledger_operation_settle(*, operation: ProviderOperation, status: str) -> int:
    """Mark the ``committed`` entries of ``operation`` ``paid`` or ``cancelled``; how many.

    Idempotent (settled entries are left as they are). Called by the operation's
    executor in the transaction that records the operation's end, which holds the
    operation row's lock; the UPDATE locks the entries it settles."""
    if status not in (LedgerStatus.PAID, LedgerStatus.CANCELLED):
        raise ValueError(f"a ledger entry settles as paid or cancelled, not {status!r}")
    return LedgerEntry.objects.filter(operation=operation, status=LedgerStatus.COMMITTED).update(
        status=status, updated_at=timezone.now()
    )


__all__ = [
    "LedgerBonus",
    "ledger_approval_commit",
    "ledger_bonus_commit",
    "ledger_bonuses_write",
    "ledger_model_usage_record",
    "ledger_operation_settle",
]
