"""What a requester does to the workers of a campaign: message, block and unblock,
grant and revoke qualifications, pay a bonus. One entry point per action for every
provider: paid platforms through ``platforms.workers`` / ``platforms.review``, the local
workforce through the same provider operations (the local provider accepts them and
moves no money; the ledger still records a local bonus).

Permissions: anyone who may see the campaign may message, qualify and pay bonuses;
blocking keeps a worker from all of the owner's work, so only the owner (or staff)
may block or unblock. Workers are addressed by ``Worker`` rows the caller found by
pseudonym (``selectors_workers.campaign_worker_get``).
"""

from __future__ import annotations

import uuid
from decimal import Decimal

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.db import transaction

from campaigns.design.access import campaign_can_manage
from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    Campaign,
    LedgerEntry,
    LedgerKind,
    OperationKind,
    Provider,
    ProviderOperation,
    QualificationGrant,
    QualificationType,
    Worker,
    WorkerBlock,
)
from campaigns.payments.bonus_keys import bonus_ceiling_check
from campaigns.payments.costs import bonus_cost
from campaigns.platforms.operations import operation_request
from campaigns.platforms.review import bonus_operation_commit, paid_bonus_pay
from campaigns.platforms.workers import (
    paid_qualification_grant,
    paid_qualification_revoke,
    paid_worker_block,
    paid_worker_unblock,
    paid_workers_notify,
)
from qaportal.errors import DomainError

MAX_MESSAGE_WORKERS = 1000
BONUSABLE = (AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED)


def _require_manager(*, campaign: Campaign, actor: AbstractBaseUser, what: str) -> None:
    if not campaign_can_manage(campaign=campaign, user=actor):
        raise PermissionDenied(f"Only the campaign's owner (or staff) may {what}.")


def worker_block(
    *, campaign: Campaign, actor: AbstractBaseUser, worker: Worker, reason: str
) -> tuple[WorkerBlock, ProviderOperation]:
    """Block ``worker`` from all of the campaign owner's work, here and on the platform.

    Owner or staff only (``PermissionDenied``). Idempotent: blocking a blocked worker
    returns the active block and its operation (key ``block:<owner>:<worker>:<block>``).
    """
    _require_manager(campaign=campaign, actor=actor, what="block workers")
    if not reason.strip():
        raise DomainError("A block needs a reason.", errors={"reason": ["required"]})
    return paid_worker_block(requester=campaign.owner, worker=worker, reason=reason.strip())


def worker_unblock(
    *, campaign: Campaign, actor: AbstractBaseUser, worker: Worker
) -> tuple[WorkerBlock, ProviderOperation] | None:
    """Lift the owner's active block of ``worker``; None when there is none.

    Owner or staff only. Key ``unblock:<owner>:<worker>:<block>``.
    """
    _require_manager(campaign=campaign, actor=actor, what="unblock workers")
    return paid_worker_unblock(requester=campaign.owner, worker=worker)


def worker_qualification_set(
    *,
    campaign: Campaign,
    worker: Worker,
    qualification_type: QualificationType,
    granted: bool,
    value: int = 1,
) -> tuple[QualificationGrant, ProviderOperation] | None:
    """Grant (``granted``) or revoke a custom qualification of the campaign's owner.

    The type must belong to the campaign's owner. Idempotency as in
    ``platforms.workers.paid_qualification_grant`` / ``paid_qualification_revoke``;
    revoking what the worker never held returns None.
    """
    if qualification_type.owner_id != campaign.owner_id:
        raise DomainError(
            "That qualification type belongs to another requester.",
            errors={"qualification_type": ["not one of the campaign owner's types"]},
        )
    if granted:
        return paid_qualification_grant(
            qualification_type=qualification_type, worker=worker, source="requester", value=value
        )
    return paid_qualification_revoke(qualification_type=qualification_type, worker=worker)


def _study_for(*, campaign: Campaign, workers: list[Worker]) -> str:
    """The platform study (HIT group) the message is about: the latest the workers did."""
    hit = (
        HIT.objects.filter(stage__campaign=campaign, assignments__worker__in=workers)
        .exclude(provider_group_id="")
        .order_by("-created_at", "-pk")
        .first()
    )
    if hit is None:
        raise DomainError(
            "These workers have no published work in this campaign to message them about.",
            errors={"workers": ["no published study"]},
        )
    return hit.provider_group_id


def workers_message(
    *,
    campaign: Campaign,
    actor: AbstractBaseUser,
    workers: list[Worker],
    subject: str,
    body: str,
    key: str | None = None,
) -> ProviderOperation:
    """Send one message to ``workers`` of ``campaign`` as a ``notify`` provider operation.

    Idempotency key ``notify:<key>`` (a fresh UUID when ``key`` is None). On the local
    workforce the operation records the message (worker ids, subject, body, sender) for
    the annotators' inbox; on Prolific it is sent about the latest study the workers
    did.
    """
    if not workers:
        raise DomainError("Choose at least one worker.", errors={"workers": ["required"]})
    if len(workers) > MAX_MESSAGE_WORKERS:
        raise DomainError(
            f"At most {MAX_MESSAGE_WORKERS} workers per message.",
            errors={"workers": [f"at most {MAX_MESSAGE_WORKERS}"]},
        )
    if not body.strip():
        raise DomainError("A message needs a body.", errors={"body": ["required"]})
    key = key or uuid.uuid4().hex
    if campaign.provider != Provider.LOCAL:
        study_id = _study_for(campaign=campaign, workers=workers)
        return paid_workers_notify(
            campaign=campaign,
            study_id=study_id,
            workers=workers,
            subject=subject,
            body=body,
            key=key,
        )
    op, _ = operation_request(
        provider=Provider.LOCAL,
        kind=OperationKind.NOTIFY,
        key=f"notify:{key}",
        payload={
            "worker_ids": [w.pk for w in workers],
            "subject": subject,
            "body": body,
            "sent_by": actor.pk,
        },
        campaign=campaign,
    )
    return op


def assignment_bonus_pay(
    *, assignment: Assignment, amount: Decimal, reason: str, key: str
) -> ProviderOperation:
    """Pay ``amount`` to the worker of ``assignment`` once per ``key``.

    Paid providers: ``platforms.review.paid_bonus_pay`` (identity confirmed, budget
    checked, bonus and fee committed). Local workforce: a ``bonus`` operation under
    key ``bonus:<key>`` with a committed ledger entry ``bonus:<key>`` (no fee), budget
    checked; the executor marks it paid. Whole cents, more than zero; a submitted or
    approved assignment only. Locking (local): the assignment row, then the campaign.
    """
    if amount <= 0:
        raise DomainError("A bonus must be positive.", errors={"amount": ["must be > 0"]})
    bonus_cost(provider=assignment.provider, amount=amount)  # whole cents, or DomainError
    if not reason.strip():
        raise DomainError("A bonus needs a reason.", errors={"reason": ["required"]})
    bonus_ceiling_check(campaign=assignment.hit.stage.campaign, amount=amount)
    if assignment.provider != Provider.LOCAL:
        return paid_bonus_pay(assignment=assignment, amount=amount, reason=reason, key=key)
    with transaction.atomic():
        locked = (
            Assignment.objects.select_for_update(of=("self",))
            .select_related("hit__stage", "worker")
            .get(pk=assignment.pk)
        )
        if locked.status not in BONUSABLE:
            raise DomainError(
                f"Only submitted or approved work earns a bonus; this is {locked.status!r}.",
                errors={"status": [locked.status]},
            )
        campaign = Campaign.objects.select_for_update().get(pk=locked.hit.stage.campaign_id)
        existing = LedgerEntry.objects.filter(key=f"{LedgerKind.BONUS}:{key}").first()
        if existing is not None and existing.operation is not None:
            return existing.operation
        return bonus_operation_commit(
            campaign=campaign,
            locked=locked,
            amount=amount,
            fee=None,
            currency=campaign.currency,
            reason=reason,
            key=key,
            payload={"worker_id": locked.worker_id},
        )
