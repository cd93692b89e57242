"""The ledger's one writer: every ``LedgerEntry`` row is made or changed here.

Rooms that move money decide what and how much (the platforms: rewards, fees,
bonuses; validation and linking through the ``Platform`` interface); these functions
write it. Every entry has a unique ``key`` (its idempotency key): writing an entry
whose key exists changes nothing. Status goes ``planned`` (found, nothing asked yet)
or ``committed`` (asked of the platform with its operation) → ``paid`` or
``cancelled`` when the operation is done or surely failed (``ledger_operation_settle``).

Each write also appends what it changed to the ledger's running totals
(``LedgerStageTotal``, ``LedgerWorkerTotal``: one delta row per campaign, stage or worker,
kind and status moved, in the same transaction; never an update of a shared row, so
concurrent writers do not wait on each other). The dashboard sums them instead of the
ledger; ``campaigns.payments.totals`` folds and rebuilds them.

Locking: none of its own. Callers hold the rows the money is about (the assignment,
the campaign for a budget check) and call these inside their transaction, so the
entries commit with the operation that pays them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db import connection
from django.utils import timezone

from campaigns.models import (
    Assignment,
    Campaign,
    LedgerEntry,
    LedgerKind,
    LedgerStageTotal,
    LedgerStatus,
    LedgerWorkerTotal,
    ModelCall,
    ProviderOperation,
    Stage,
)

# (campaign, stage, worker, kind, status, amount): one entry's part of the totals.
_Part = tuple[int, int | None, int | None, str, str, Decimal]


def _part(entry: LedgerEntry, *, status: str | None = None) -> _Part:
    return (
        entry.campaign_id,
        entry.stage_id,
        entry.worker_id,
        entry.kind,
        status or entry.status,
        Decimal(entry.amount),
    )


def _totals_add(parts: Iterable[tuple[_Part, int]]) -> None:
    """Append the totals' deltas of ``parts`` (each with its sign: +1 an entry now counted
    under its status, -1 one no longer), one row per group; in the caller's transaction."""
    by_stage: dict[tuple[int, int | None, str, str], list] = defaultdict(lambda: [0, Decimal(0)])
    by_worker: dict[tuple[int, int, str, str], list] = defaultdict(lambda: [0, Decimal(0)])
    for (campaign_id, stage_id, worker_id, kind, status, amount), sign in parts:
        for group in (by_stage[(campaign_id, stage_id, kind, status)],) + (
            (by_worker[(campaign_id, worker_id, kind, status)],) if worker_id is not None else ()
        ):
            group[0] += sign
            group[1] += sign * amount
    LedgerStageTotal.objects.bulk_create(
        [
            LedgerStageTotal(campaign_id=c, stage_id=s, kind=k, status=st, n=n, amount=a)
            for (c, s, k, st), (n, a) in sorted(by_stage.items(), key=repr)
            if n or a
        ]
    )
    LedgerWorkerTotal.objects.bulk_create(
        [
            LedgerWorkerTotal(campaign_id=c, worker_id=w, kind=k, status=st, n=n, amount=a)
            for (c, w, k, st), (n, a) in sorted(by_worker.items(), key=repr)
            if n or a
        ]
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
    made: list[tuple[_Part, int]] = []
    for kind, amount in ((LedgerKind.REWARD, reward), (LedgerKind.PLATFORM_FEE, fee)):
        entry, created = LedgerEntry.objects.get_or_create(
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
        if created:
            made.append((_part(entry), 1))
    _totals_add(made)


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
    made: list[tuple[_Part, int]] = []
    for kind, value in parts:
        entry = LedgerEntry.objects.create(
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
        made.append((_part(entry), 1))
    _totals_add(made)


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
    made = _insert_new(rows)
    _totals_add((_part(entry), 1) for entry in made)
    return len(made)


def _insert_new(rows: list[LedgerEntry]) -> list[LedgerEntry]:
    """INSERT ``rows``, skipping keys that exist (``ON CONFLICT (key) DO NOTHING``); the
    rows actually written (their keys come back from ``RETURNING``: the totals count
    exactly those). PostgreSQL and SQLite (3.35+) both run it."""
    now = timezone.now()
    columns = [
        "campaign_id",
        "stage_id",
        "kind",
        "status",
        "amount",
        "currency",
        "key",
        "assignment_id",
        "worker_id",
        "operation_id",
        "memo",
        "created_at",
        "updated_at",
    ]
    table = LedgerEntry._meta.db_table
    field = LedgerEntry._meta.get_field("created_at")
    stamp = field.get_db_prep_value(now, connection)
    written: set[str] = set()
    for start in range(0, len(rows), 500):
        batch = rows[start : start + 500]
        values = ", ".join(["(" + ", ".join(["%s"] * len(columns)) + ")"] * len(batch))
        params: list[Any] = []
        for r in batch:
            params += [
                r.campaign_id,
                r.stage_id,
                r.kind,
                r.status,
                Decimal(r.amount),
                r.currency,
                r.key,
                r.assignment_id,
                r.worker_id,
                r.operation_id,
                r.memo,
                stamp,
                stamp,
            ]
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {table} ({', '.join(columns)}) VALUES {values} "  # noqa: S608
                "ON CONFLICT (key) DO NOTHING RETURNING key",
                params,
            )
            written.update(key for (key,) in cursor.fetchall())
    return [r for r in rows if r.key in written]


def ledger_model_usage_record(*, call: ModelCall, amount: Decimal, currency: str) -> bool:
    """Record what model call ``call`` cost the campaign (``model_usage``, paid: the
    tokens are spent), once: key ``model_usage:call:<id>``; whether this call wrote it.

    ``amount`` is in cents: the assist room passes the cents the campaign's running
    total of model costs crossed with this call, so fractions of a cent add up.
    Call in the transaction that marks the call done, holding the campaign row.
    """
    entry, created = LedgerEntry.objects.get_or_create(
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
    if created:
        _totals_add([(_part(entry), 1)])
    return created


def ledger_operation_settle(*, operation: ProviderOperation, status: str) -> int:
    """Mark the ``committed`` entries of ``operation`` ``paid`` or ``cancelled``; how many.

    Idempotent (settled entries are left as they are). Called by the operation's
    executor in the transaction that records the operation's end, which holds the
    operation row's lock; the UPDATE locks the entries it settles."""
    if status not in (LedgerStatus.PAID, LedgerStatus.CANCELLED):
        raise ValueError(f"a ledger entry settles as paid or cancelled, not {status!r}")
    # The entries are locked first: the totals move exactly the entries this call settles
    # (a concurrent settle of the same operation finds them settled and moves none).
    entries = list(
        LedgerEntry.objects.select_for_update()
        .filter(operation=operation, status=LedgerStatus.COMMITTED)
        .order_by("pk")
    )
    if not entries:
        return 0
    settled = LedgerEntry.objects.filter(
        pk__in=[e.pk for e in entries], status=LedgerStatus.COMMITTED
    ).update(status=status, updated_at=timezone.now())
    _totals_add([(_part(e), -1) for e in entries] + [(_part(e, status=status), 1) for e in entries])
    return settled


__all__ = [
    "LedgerBonus",
    "ledger_approval_commit",
    "ledger_bonus_commit",
    "ledger_bonuses_write",
    "ledger_model_usage_record",
    "ledger_operation_settle",
]
