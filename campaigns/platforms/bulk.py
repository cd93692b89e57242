"""What rules ask of the platform for many workers at once: bonuses, blocks, revocations.

Validation's gold actions and linking's agreed-entity bonuses decide *what*; they call
the ``Platform`` interface (``bonuses_pay``, ``workers_block``,
``qualifications_revoke``), whose implementations (``campaigns.platforms.platform``)
call these. On a paid platform every change is a ``ProviderOperation`` asked for
with ``operation_request``, so the outbox carries it out right after the commit that
wrote it (``operations_reconcile`` is only the second net); ledger rows are written by
``campaigns.payments.ledger``. The local workforce moves no money and has no platform
to tell: its bonuses are planned in the ledger and its blocks and revocations are
qaportal's rows only.

Locking: each call is one transaction; a paid bonus batch locks the campaign row (its
budget), then writes operations and entries in key order.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence

from django.db import transaction
from django.utils import timezone

from campaigns.design.platform import BonusWanted
from campaigns.models import (
    Assignment,
    Campaign,
    LedgerEntry,
    LedgerStatus,
    OperationKind,
    QualificationGrant,
    QualificationType,
    Stage,
    Worker,
    WorkerBlock,
)
from campaigns.payments.budget import campaign_spending
from campaigns.payments.ledger import LedgerBonus, ledger_bonuses_write
from campaigns.platforms import currency_for, fee_model_for
from campaigns.platforms.operations import operation_request
from campaigns.platforms.workers import block_group_name, qualification_change_request

logger = logging.getLogger(__name__)


def _new(bonuses: Sequence[BonusWanted]) -> list[BonusWanted]:
    """The bonuses (of a positive amount) whose key the ledger does not hold yet, one
    per key, in key order."""
    by_key = {b.key: b for b in bonuses if b.amount > 0}
    known = set(LedgerEntry.objects.filter(key__in=list(by_key)).values_list("key", flat=True))
    return [by_key[k] for k in sorted(by_key) if k not in known]


def stage_bonuses_plan(*, stage: Stage, bonuses: Sequence[BonusWanted]) -> int:
    """Plan ``bonuses`` of ``stage`` in the ledger (status ``planned``, no operation): the
    local workforce, where qaportal moves no money. Idempotent per key; the number new."""
    wanted = _new(bonuses)
    return ledger_bonuses_write(
        stage=stage,
        bonuses=[
            LedgerBonus(b.key, b.assignment_id, b.worker_id, b.amount, b.reason) for b in wanted
        ],
        status=LedgerStatus.PLANNED,
        currency=stage.campaign.currency,
    )


def _confirmed(assignment: Assignment) -> bool:
    """The platform confirmed that this worker made this submission (its sync wrote
    ``review_details["identity"]``): money may move."""
    details = assignment.review_details if isinstance(assignment.review_details, dict) else {}
    identity = details.get("identity") or {}
    return isinstance(identity, dict) and identity.get("status") == "confirmed"


def stage_bonuses_pay(*, stage: Stage, bonuses: Sequence[BonusWanted]) -> int:
    """Pay ``bonuses`` of ``stage`` on its paid platform; the number newly asked for.

    Each bonus is an operation (kind ``bonus``, idempotency key the bonus's ``key``)
    with its entries committed (``<key>`` and ``bonus_fee:<key>``); the executor pays
    it after commit and marks them paid. As ``review.paid_bonus_pay`` for one bonus:
    only to a worker whose submission the platform confirmed (the others wait for a
    later run, when the sync has confirmed them) and within the campaign's budget cap
    (what does not fit waits too; both are logged). Idempotent per key.
    Locking: the campaign row (its budget, as ``paid_bonus_pay`` locks it), then the
    operations and entries in key order.
    """
    provider = stage.campaign.provider
    with transaction.atomic():
        campaign = Campaign.objects.select_for_update().get(pk=stage.campaign_id)
        wanted = _new(bonuses)
        if not wanted:
            return 0
        rows = {
            a.pk: a
            for a in Assignment.objects.filter(pk__in=[b.assignment_id for b in wanted])
            .select_related("hit")
            .only("pk", "review_details", "provider_assignment_id", "hit__provider_group_id")
        }
        fees = fee_model_for(provider)
        left = None
        if campaign.budget_cap is not None:
            left = campaign.budget_cap - campaign_spending(campaign=campaign)
        written: list[LedgerBonus] = []
        unconfirmed = over_budget = 0
        for bonus in wanted:
            assignment = rows.get(bonus.assignment_id)
            if assignment is None or not _confirmed(assignment):
                unconfirmed += 1
                continue
            fee = fees.bonus_fee(amount=bonus.amount)
            if left is not None:
                if bonus.amount + fee > left:
                    over_budget += 1
                    continue
                left -= bonus.amount + fee
            op, _ = operation_request(
                provider=provider,
                kind=OperationKind.BONUS,
                key=bonus.key,
                payload={
                    "assignment_id": assignment.pk,
                    "study_id": assignment.hit.provider_group_id,
                    "submission_id": assignment.provider_assignment_id,
                    "amount": f"{bonus.amount:.2f}",
                    "reason": bonus.reason,
                },
                campaign=campaign,
            )
            written.append(
                LedgerBonus(
                    bonus.key,
                    bonus.assignment_id,
                    bonus.worker_id,
                    bonus.amount,
                    bonus.reason,
                    fee=fee,
                    operation_id=op.pk,
                )
            )
        ledger_bonuses_write(
            stage=stage,
            bonuses=written,
            status=LedgerStatus.COMMITTED,
            currency=currency_for(provider),
        )
    if unconfirmed or over_budget:
        logger.warning(
            "stage %s: %d bonuses wait for the platform to confirm the worker, %d for budget",
            stage.pk,
            unconfirmed,
            over_budget,
        )
    return len(written)


def workers_block_here(*, campaign: Campaign, reasons: Mapping[int, str]) -> list[WorkerBlock]:
    """Block the workers of ``reasons`` from the campaign owner's work in qaportal; the
    blocks new (a worker already blocked keeps that block). One INSERT."""
    active = set(
        WorkerBlock.objects.filter(
            requester_id=campaign.owner_id, worker_id__in=list(reasons), lifted_at__isnull=True
        ).values_list("worker_id", flat=True)
    )
    WorkerBlock.objects.bulk_create(
        [
            WorkerBlock(requester_id=campaign.owner_id, worker_id=w, reason=reason)
            for w, reason in sorted(reasons.items())
            if w not in active
        ],
        ignore_conflicts=True,
    )
    return list(
        WorkerBlock.objects.filter(
            requester_id=campaign.owner_id,
            worker_id__in=[w for w in reasons if w not in active],
            lifted_at__isnull=True,
        )
        .select_related("worker")
        .order_by("worker_id")
    )


def workers_block_paid(*, campaign: Campaign, reasons: Mapping[int, str]) -> int:
    """``workers_block_here``, and each new block asked of the platform (the owner's
    block-list group) as ``review.paid_worker_block`` does: key
    ``block:<owner>:<worker>:<block id>``. One transaction; the number of blocks new."""
    with transaction.atomic():
        blocks = workers_block_here(campaign=campaign, reasons=reasons)
        for block in blocks:
            operation_request(
                provider=block.worker.provider,
                kind=OperationKind.BLOCK,
                key=f"block:{campaign.owner_id}:{block.worker_id}:{block.pk}",
                payload={
                    "owner_id": campaign.owner_id,
                    "worker_id": block.worker_id,
                    "participant_id": block.worker.external_id,
                    "group_name": block_group_name(campaign.owner_id),
                    "reason": block.reason[:200],
                },
                campaign=None,
            )
    return len(blocks)


def qualifications_revoke_here(
    *, campaign: Campaign, qualification_type_id: int, worker_ids: Iterable[int]
) -> list[int]:
    """Set ``revoked_at`` on the grants of the owner's ``qualification_type_id`` the
    workers of ``worker_ids`` still hold; the workers revoked, in id order.
    Locking: those grant rows, in worker order."""
    grants = QualificationGrant.objects.filter(
        qualification_type_id=qualification_type_id,
        qualification_type__owner_id=campaign.owner_id,
        worker_id__in=list(worker_ids),
        revoked_at__isnull=True,
    )
    with transaction.atomic():
        revoked = list(
            grants.select_for_update(of=("self",))
            .order_by("worker_id")
            .values_list("worker_id", flat=True)
        )
        grants.filter(worker_id__in=revoked).update(revoked_at=timezone.now())
    return revoked


def qualifications_revoke_paid(
    *, campaign: Campaign, qualification_type_id: int, worker_ids: Iterable[int]
) -> int:
    """``qualifications_revoke_here``, and each revocation asked of the platform (the
    worker leaves the qualification's group) as ``workers.paid_qualification_revoke``
    does (key ``revoke:<type>:<worker>[:<n>]``). One transaction; how many revoked."""
    with transaction.atomic():
        revoked = qualifications_revoke_here(
            campaign=campaign, qualification_type_id=qualification_type_id, worker_ids=worker_ids
        )
        if revoked:
            qualification = QualificationType.objects.get(pk=qualification_type_id)
            for worker in Worker.objects.filter(pk__in=revoked).order_by("pk"):
                qualification_change_request(
                    qualification_type=qualification, worker=worker, kind=OperationKind.REVOKE
                )
    return len(revoked)
