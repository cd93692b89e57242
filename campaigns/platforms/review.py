"""Review and money on paid providers: approve (one or many), reject, bonus, and the
campaign's budget check (``campaigns.payments.budget``, named here too for the
platforms' publishing). Messages, blocks and qualifications are in ``workers``.

Each decision is asked for as a ``ProviderOperation`` (``operation_request``) with
its ledger entries ``committed`` in the same transaction (written by
``campaigns.payments.ledger``, the ledger's one writer); the executor marks them
``paid`` (or ``cancelled``) and records the decision on the assignment when the
platform has done it (``assignment_decision_record``). Money is paid only to a
worker the platform confirmed (``review_details["identity"]["status"] ==
"confirmed"``, written by the platform's sync): a page submission with a forged or
unconfirmed participant id is never paid.

Locking: the assignment row (``select_for_update``) for approve / reject / bonus,
so two reviewers cannot request conflicting decisions; then the operation and
ledger rows, created in the same transaction.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from campaigns.design.platform import platform_for
from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    Campaign,
    LedgerEntry,
    LedgerKind,
    LedgerStatus,
    OperationKind,
    OperationState,
    Provider,
    ProviderOperation,
)
from campaigns.payments.budget import BudgetExceededError as BudgetExceededError
from campaigns.payments.budget import campaign_budget_check as campaign_budget_check
from campaigns.payments.ledger import (
    ledger_approval_commit,
    ledger_bonus_commit,
    ledger_operation_settle,
)
from campaigns.platforms import currency_for, fee_model_for, requires_masters
from campaigns.platforms.operations import operation_request
from campaigns.tasktypes import task_type_get
from campaigns.work.decisions import decision_write
from qaportal.errors import DomainError


class IdentityUnconfirmedError(DomainError):
    """The platform has not confirmed that this worker made this submission."""

    code = "identity_unconfirmed"


# --- Review decisions ------------------------------------------------------------------


def submission_identity(
    *, assignment: Assignment, platform_worker_id: str | None, missing: str, other: str
) -> dict[str, Any]:
    """Whether the platform confirms the worker a page submission claims to be:
    ``{"status": "confirmed"}``, or "unconfirmed" (the platform has no submission;
    ``missing`` says so) or "mismatch" (it is another worker's; ``other``). Money moves
    only for confirmed identities."""
    if platform_worker_id is None:
        return {"status": "unconfirmed", "reason": missing}
    if platform_worker_id != assignment.worker.external_id:
        return {"status": "mismatch", "reason": other}
    return {"status": "confirmed"}


def _paid_assignment(assignment_id: int) -> Assignment:
    """Lock and load an assignment of a paid provider."""
    locked = (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("hit__stage__campaign", "worker")
        .get(pk=assignment_id)
    )
    if locked.provider == Provider.LOCAL:
        raise DomainError(
            "Local assignments are decided in qaportal (campaigns.work.decisions).",
            errors={"provider": [locked.provider]},
        )
    return locked


def _check_identity(assignment: Assignment) -> None:
    identity = (assignment.review_details or {}).get("identity") or {}
    if identity.get("status") != "confirmed":
        raise IdentityUnconfirmedError(
            "The platform has not confirmed this worker's submission "
            f"({identity.get('status', 'not synced yet')}); it cannot be paid.",
            errors={"identity": [identity.get("status", "unsynced")]},
        )


def _approval_requested(assignment: Assignment) -> ProviderOperation | None:
    """The live operation that approves ``assignment`` (alone or in a bulk approval).

    Found through its reward ledger entry, which every approval commits with it.
    """
    entry = (
        LedgerEntry.objects.filter(
            key=f"{LedgerKind.REWARD}:assignment:{assignment.pk}",
            status__in=[LedgerStatus.COMMITTED, LedgerStatus.PAID],
        )
        .select_related("operation")
        .first()
    )
    return entry.operation if entry is not None else None


def _decision_pending(assignment: Assignment, kind: str) -> ProviderOperation | None:
    """The other decision's live operation, if one was requested."""
    if kind == OperationKind.REJECT:
        return _approval_requested(assignment)
    return (
        ProviderOperation.objects.filter(
            provider=assignment.provider,
            idempotency_key=f"{OperationKind.REJECT}:assignment:{assignment.pk}",
        )
        .exclude(state=OperationState.FAILED)
        .first()
    )


def hit_in_test_study(hit: HIT) -> bool:
    """True when ``hit`` went to the platform's test participants only (a pilot's test
    study): approving its work costs nothing, so the ledger records 0.00."""
    if not hit.provider_group_id:
        return False
    return ProviderOperation.objects.filter(
        provider=hit.provider,
        kind=OperationKind.CREATE_STUDY,
        state=OperationState.DONE,
        result__study_id=hit.provider_group_id,
        payload__test=True,
    ).exists()


def _approval_ledger(assignment: Assignment, operation: ProviderOperation) -> None:
    """Commit the reward and platform fee of approving ``assignment`` (once per assignment).
    A test study's work is paid nothing by the platform: both entries are 0.00."""
    hit = assignment.hit
    masters = requires_masters(hit.stage.qualification_requirements)
    fee = fee_model_for(assignment.provider, masters=masters).assignment_fee(
        reward=hit.reward, max_assignments=hit.max_assignments
    )
    reward = hit.reward
    if hit_in_test_study(hit):
        reward, fee = Decimal("0.00"), Decimal("0.00")
    # A quiz's pay is its own kind; the key stays ``reward:assignment:<id>`` (how an
    # approval is found again, ``_approval_requested``).
    pay_kind = (
        LedgerKind.QUIZ_PAYMENT if task_type_get(hit.stage.task_type).is_quiz else LedgerKind.REWARD
    )
    ledger_approval_commit(
        assignment=assignment,
        operation=operation,
        pay_kind=pay_kind,
        reward=reward,
        fee=fee,
        currency=currency_for(assignment.provider),
    )


def _check_approvable(locked: Assignment) -> None:
    if locked.status not in (AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED):
        raise DomainError(
            f"Only a submitted assignment can be approved; this one is {locked.status!r}.",
            errors={"status": [locked.status]},
        )
    _check_identity(locked)
    if _decision_pending(locked, OperationKind.APPROVE):
        raise DomainError("A rejection of this assignment was already requested.")


def paid_assignment_approve(
    *,
    assignment: Assignment,
    decided_by: AbstractBaseUser | None = None,
    source: str,
    reason: str = "",
) -> ProviderOperation:
    """Ask the platform to approve (and pay) a submitted assignment, once.

    Idempotency key ``approve:assignment:<id>``; ledger entries ``reward:assignment:<id>``
    and ``platform_fee:assignment:<id>`` are committed with it. The assignment becomes
    ``approved`` when the operation is done. Refuses an unconfirmed identity. An
    approval already requested (alone or in a bulk approval) is returned as it is.
    """
    with transaction.atomic():
        locked = _paid_assignment(assignment.pk)
        _check_approvable(locked)
        earlier = _approval_requested(locked)
        if earlier is not None:
            return earlier
        op = _decision_operation(
            locked, OperationKind.APPROVE, decided_by=decided_by, source=source, reason=reason
        )
        _approval_ledger(locked, op)
    return op


def assignments_not_rejecting(*, provider: str, assignments: list[Assignment]) -> list[Assignment]:
    """``assignments`` less those with a rejection asked of ``provider`` that has not
    failed (an auto-approval must not race it), in the same order."""
    rejecting = set(
        ProviderOperation.objects.filter(
            provider=provider,
            kind=OperationKind.REJECT,
            payload__assignment_id__in=[a.pk for a in assignments],
        )
        .exclude(state=OperationState.FAILED)
        .values_list("payload__assignment_id", flat=True)
    )
    return [a for a in assignments if a.pk not in rejecting]


def paid_assignments_approve(
    *,
    assignments: Iterable[Assignment],
    decided_by: AbstractBaseUser | None = None,
    source: str,
    reason: str = "",
) -> ProviderOperation | None:
    """Ask the platform to approve (and pay) many submitted assignments in one operation.

    Prolific: one bulk approval of the submissions. Assignments already approved or
    whose approval was already requested are left out; the others must all be
    submitted, of one paid campaign, with a confirmed identity (else ``DomainError`` /
    ``IdentityUnconfirmedError`` and nothing is requested). Idempotency key
    ``approve:bulk:<count>:<sha256 of the sorted assignment ids>``; each assignment's
    ledger entries are the same as for a single approval (``reward:assignment:<id>``,
    ``platform_fee:assignment:<id>``), committed with the operation and paid when it
    is done. Asked again for assignments one operation already approves, that
    operation; None when there is nothing left to approve.

    Locking: the assignment rows in id order, then the operation and ledger rows.
    """
    ids = sorted({a.pk for a in assignments})
    if not ids:
        return None
    with transaction.atomic():
        locked = [_paid_assignment(pk) for pk in ids]
        campaigns = {a.hit.stage.campaign_id for a in locked}
        providers = {a.provider for a in locked}
        if len(campaigns) > 1 or len(providers) > 1:
            raise DomainError(
                "A bulk approval takes the assignments of one campaign.",
                errors={"assignments": [str(c) for c in sorted(campaigns)]},
            )
        wanted = []
        for a in locked:
            _check_approvable(a)
            if a.status == AssignmentStatus.SUBMITTED and _approval_requested(a) is None:
                wanted.append(a)
        if not wanted:
            earlier = {_approval_requested(a) for a in locked} - {None}
            return earlier.pop() if len(earlier) == 1 else None
        wanted_ids = [a.pk for a in wanted]
        digest = hashlib.sha256(",".join(map(str, wanted_ids)).encode()).hexdigest()[:40]
        op, _ = operation_request(
            provider=wanted[0].provider,
            kind=OperationKind.APPROVE,
            key=f"approve:bulk:{len(wanted_ids)}:{digest}",
            payload={
                "assignment_ids": wanted_ids,
                "submission_ids": [a.provider_assignment_id for a in wanted],
                "study_ids": sorted({a.hit.provider_group_id for a in wanted} - {"", None}),
                "decided_by_id": decided_by.pk if decided_by is not None else None,
                "source": source[:80],
                "reason": reason,
            },
            campaign=wanted[0].hit.stage.campaign,
        )
        for a in wanted:
            _approval_ledger(a, op)
    return op


def paid_assignment_reject(
    *,
    assignment: Assignment,
    decided_by: AbstractBaseUser | None,
    source: str,
    reason: str,
    feedback: str = "",
    rejection_category: str = "OTHER",
) -> ProviderOperation:
    """Ask the platform to reject a submitted assignment, once (key ``reject:assignment:<id>``).

    ``feedback`` (or ``reason``) is the message the worker gets, at least as long as
    the platform demands (``PlatformRules.rejection_message_min``: Prolific's 100
    characters); Prolific also needs one of its rejection categories.
    """
    message = (feedback or reason).strip()
    if not reason.strip():
        raise DomainError("A rejection needs a reason.", errors={"reason": ["required"]})
    minimum = platform_for(assignment).rules().rejection_message_min
    if len(message) < minimum:
        raise DomainError(
            f"The message to the worker needs at least {minimum} characters.",
            errors={"feedback": [f"min {minimum} characters"]},
        )
    with transaction.atomic():
        locked = _paid_assignment(assignment.pk)
        if locked.status not in (AssignmentStatus.SUBMITTED, AssignmentStatus.REJECTED):
            raise DomainError(
                f"Only a submitted assignment can be rejected; this one is {locked.status!r}.",
                errors={"status": [locked.status]},
            )
        if _decision_pending(locked, OperationKind.REJECT):
            raise DomainError("An approval of this assignment was already requested.")
        op = _decision_operation(
            locked,
            OperationKind.REJECT,
            decided_by=decided_by,
            source=source,
            reason=reason,
            rejection_category=rejection_category,
            message=message,
            feedback=feedback,
        )
    return op


def _decision_operation(
    locked: Assignment,
    kind: OperationKind,
    *,
    decided_by: AbstractBaseUser | None,
    source: str,
    reason: str,
    **details: str,
) -> ProviderOperation:
    """Request the ``kind`` decision (approve or reject) on ``locked``, once: idempotency
    key ``<kind>:assignment:<id>``; ``details`` go into the payload as they are."""
    op, _ = operation_request(
        provider=locked.provider,
        kind=kind,
        key=f"{kind.value}:assignment:{locked.pk}",
        payload={
            "assignment_id": locked.pk,
            "submission_id": locked.provider_assignment_id,
            **details,
            "decided_by_id": decided_by.pk if decided_by is not None else None,
            "source": source[:80],
            "reason": reason,
        },
        campaign=locked.hit.stage.campaign,
    )
    return op


def assignment_decision_record(*, operation: ProviderOperation) -> list[Assignment]:
    """Effects of a done approve / reject operation: the decisions, counters, ledger.

    One assignment (``assignment_id``) or a bulk approval (``assignment_ids``). Called
    by the executor inside its transaction; idempotent (a decided assignment is left
    as it is). Locking: the assignment rows, in id order.
    """
    payload = operation.payload or {}
    status = (
        AssignmentStatus.APPROVED
        if operation.kind == OperationKind.APPROVE
        else AssignmentStatus.REJECTED
    )
    ids = payload.get("assignment_ids") or [payload.get("assignment_id") or 0]
    locked = list(
        Assignment.objects.select_for_update().filter(pk__in=[int(i) for i in ids]).order_by("pk")
    )
    for assignment in locked:
        if assignment.status != AssignmentStatus.SUBMITTED:
            continue
        decision_write(
            assignment=assignment,
            status=status,
            decided_by_id=payload.get("decided_by_id"),
            source=str(payload.get("source", "")),
            reason=str(payload.get("reason", "")),
            feedback=str(payload.get("feedback", "")),
        )
    settled = LedgerStatus.PAID if status == AssignmentStatus.APPROVED else LedgerStatus.CANCELLED
    ledger_operation_settle(operation=operation, status=settled)
    return locked


# --- Bonuses ---------------------------------------------------------------------------


def paid_bonus_pay(
    *,
    assignment: Assignment,
    amount: Decimal,
    reason: str,
    key: str,
) -> ProviderOperation:
    """Pay ``amount`` to the worker of ``assignment`` once per ``key`` (say ``rule:agree:42``).

    Idempotency key ``bonus:<key>``; ledger entries ``bonus:<key>`` and
    ``bonus_fee:<key>`` committed with it, paid when the platform has paid. Refuses an
    unconfirmed identity and anything past the campaign's budget cap.
    """
    if amount <= 0:
        raise DomainError("A bonus must be positive.", errors={"amount": ["must be > 0"]})
    with transaction.atomic():
        locked = _paid_assignment(assignment.pk)
        _check_identity(locked)
        campaign = Campaign.objects.select_for_update().get(pk=locked.hit.stage.campaign_id)
        existing = ProviderOperation.objects.filter(
            provider=locked.provider, idempotency_key=f"bonus:{key}"
        ).first()
        if existing is not None:
            return existing
        return bonus_operation_commit(
            campaign=campaign,
            locked=locked,
            amount=amount,
            fee=fee_model_for(locked.provider).bonus_fee(amount=amount),
            currency=currency_for(locked.provider),
            reason=reason,
            key=key,
            payload={
                "study_id": locked.hit.provider_group_id,
                "submission_id": locked.provider_assignment_id,
            },
        )


def bonus_operation_commit(
    *,
    campaign: Campaign,
    locked: Assignment,
    amount: Decimal,
    fee: Decimal | None,
    currency: str,
    reason: str,
    key: str,
    payload: dict[str, Any],
) -> ProviderOperation:
    """The bonus ``amount`` (and platform ``fee``) to the worker of ``locked`` within the
    campaign's budget: operation ``bonus:<key>`` (``payload``: the platform's ids) and its
    ledger entries committed with it. In the transaction that locks ``campaign`` and
    ``locked``, after the idempotency check."""
    campaign_budget_check(campaign=campaign, extra=amount + (fee or 0), what="This bonus")
    op, _ = operation_request(
        provider=locked.provider,
        kind=OperationKind.BONUS,
        key=f"bonus:{key}",
        payload={
            "assignment_id": locked.pk,
            **payload,
            "amount": f"{amount:.2f}",
            "reason": reason,
        },
        campaign=campaign,
    )
    ledger_bonus_commit(
        campaign=campaign,
        assignment=locked,
        operation=op,
        key=key,
        amount=amount,
        fee=fee,
        currency=currency,
        memo=reason,
    )
    return op
