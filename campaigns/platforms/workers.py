"""Worker-side operations on paid providers: message workers, block and unblock them,
grant and revoke custom qualifications, create a qualification type (MTurk).

Each is asked for as a ``ProviderOperation`` (``operation_request``) that the
executor carries out on the platform; none of them moves money. Idempotency keys and
locking rules are stated per service.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from campaigns.models import (
    Campaign,
    OperationKind,
    OperationState,
    Provider,
    ProviderOperation,
    QualificationGrant,
    QualificationType,
    Worker,
    WorkerBlock,
)
from campaigns.platforms.operations import operation_request
from qaportal.errors import DomainError


def paid_workers_notify(
    *, campaign: Campaign, study_id: str, workers: list[Worker], subject: str, body: str, key: str
) -> ProviderOperation:
    """Message ``workers`` about study ``study_id`` once per ``key`` (``notify:<key>``)."""
    if not body.strip():
        raise DomainError("A message needs a body.", errors={"body": ["required"]})
    op, _ = operation_request(
        provider=campaign.provider,
        kind=OperationKind.NOTIFY,
        key=f"notify:{key}",
        payload={
            "study_id": study_id,
            "participant_ids": [w.external_id for w in workers],
            "worker_ids": [w.pk for w in workers],
            "subject": subject,
            "body": body,
        },
        campaign=campaign,
    )
    return op


def block_group_name(owner_id: int) -> str:
    return f"qaportal-block-{owner_id}"


def qualification_group_name(qualification_type_id: int) -> str:
    """The name of the platform group that holds a qualification's holders."""
    return f"qaportal-qual-{qualification_type_id}"


def _block_list_request(
    *, kind: OperationKind, requester: AbstractBaseUser, worker: Worker, block: WorkerBlock
) -> ProviderOperation:
    """Ask the platform to put ``worker`` in (``BLOCK``) or take it out of (``UNBLOCK``)
    the requester's block-list group, once per ``block``
    (key ``<kind>:<requester>:<worker>:<block>``)."""
    op, _ = operation_request(
        provider=worker.provider,
        kind=kind,
        key=f"{kind.value}:{requester.pk}:{worker.pk}:{block.pk}",
        payload={
            "owner_id": requester.pk,
            "worker_id": worker.pk,
            "participant_id": worker.external_id,
            "group_name": block_group_name(requester.pk),
        },
        campaign=None,
    )
    return op


def paid_worker_block(
    *, requester: AbstractBaseUser, worker: Worker, reason: str
) -> tuple[WorkerBlock, ProviderOperation]:
    """Block ``worker`` from ``requester``'s work here and on the platform (block-list group).

    Idempotency key ``block:<requester>:<worker>:<block id>``: one platform call per block.
    """
    with transaction.atomic():
        block, _ = WorkerBlock.objects.get_or_create(
            requester_id=requester.pk,
            worker=worker,
            lifted_at=None,
            defaults={"reason": reason or "blocked"},
        )
        op = _block_list_request(
            kind=OperationKind.BLOCK, requester=requester, worker=worker, block=block
        )
    return block, op


def paid_worker_unblock(
    *, requester: AbstractBaseUser, worker: Worker
) -> tuple[WorkerBlock, ProviderOperation] | None:
    """Lift ``requester``'s active block of ``worker``, here and on the platform.

    The block row gets ``lifted_at``; the worker leaves the block-list group.
    Idempotency key ``unblock:<requester>:<worker>:<block id>``: one platform call per
    lifted block. None when no block is active. Locking: the block row.
    """
    with transaction.atomic():
        block = (
            WorkerBlock.objects.select_for_update()
            .filter(requester_id=requester.pk, worker=worker, lifted_at__isnull=True)
            .first()
        )
        if block is None:
            return None
        block.lifted_at = timezone.now()
        block.save(update_fields=["lifted_at"])
        op = _block_list_request(
            kind=OperationKind.UNBLOCK, requester=requester, worker=worker, block=block
        )
    return block, op


def qualification_change_request(
    *, qualification_type: QualificationType, worker: Worker, kind: str
) -> ProviderOperation:
    """Ask for a grant or a revocation of membership in the qualification's group.

    Grants and revocations of one (type, worker) alternate, so each new change gets
    its own key: ``<kind>:<type>:<worker>`` the first time, ``…:<n>`` after ``n``
    earlier changes. Asking again for what the latest change asked for returns it.
    """
    earlier = ProviderOperation.objects.filter(
        provider=worker.provider,
        kind__in=[OperationKind.GRANT, OperationKind.REVOKE],
        payload__qualification_type_id=qualification_type.pk,
        payload__worker_id=worker.pk,
    )
    latest = earlier.exclude(state=OperationState.FAILED).order_by("-pk").first()
    if latest is not None and latest.kind == kind:
        return latest
    count = earlier.count()
    key = f"{kind}:{qualification_type.pk}:{worker.pk}" + (f":{count}" if count else "")
    payload: dict[str, Any] = {
        "qualification_type_id": qualification_type.pk,
        "worker_id": worker.pk,
        "participant_id": worker.external_id,
        "group_name": qualification_group_name(qualification_type.pk),
    }
    if qualification_type.provider_qualification_id:
        payload["group_id"] = qualification_type.provider_qualification_id
    op, _ = operation_request(
        provider=worker.provider, kind=kind, key=key, payload=payload, campaign=None
    )
    return op


def paid_qualification_grant(
    *, qualification_type: QualificationType, worker: Worker, source: str, value: int = 1
) -> tuple[QualificationGrant, ProviderOperation]:
    """Grant a custom qualification: a grant row, and membership of its allow-list group.

    Idempotency key ``grant:<type>:<worker>`` (``…:<n>`` after earlier grants and
    revocations; see ``qualification_change_request``). Locking: the worker row, so that
    changes of one worker's qualifications are requested one at a time.
    """
    with transaction.atomic():
        Worker.objects.select_for_update().filter(pk=worker.pk).first()
        grant, _ = QualificationGrant.objects.update_or_create(
            qualification_type=qualification_type,
            worker=worker,
            defaults={"value": value, "source": source[:80], "revoked_at": None},
        )
        op = qualification_change_request(
            qualification_type=qualification_type, worker=worker, kind=OperationKind.GRANT
        )
    return grant, op


def paid_qualification_revoke(
    *, qualification_type: QualificationType, worker: Worker
) -> tuple[QualificationGrant, ProviderOperation] | None:
    """Revoke a custom qualification: ``revoked_at`` on the grant, and the worker leaves
    its allow-list group. None when the worker holds no such grant.

    Idempotency key ``revoke:<type>:<worker>[:<n>]`` (``qualification_change_request``).
    Locking: the worker row, then the grant row.
    """
    with transaction.atomic():
        Worker.objects.select_for_update().filter(pk=worker.pk).first()
        grant = (
            QualificationGrant.objects.select_for_update()
            .filter(qualification_type=qualification_type, worker=worker)
            .first()
        )
        if grant is None:
            return None
        if grant.revoked_at is None:
            grant.revoked_at = timezone.now()
            grant.save(update_fields=["revoked_at"])
        op = qualification_change_request(
            qualification_type=qualification_type, worker=worker, kind=OperationKind.REVOKE
        )
    return grant, op


def paid_qualification_type_create(
    *,
    qualification_type: QualificationType,
    test_xml: str = "",
    answer_key_xml: str = "",
    test_duration_seconds: int = 600,
    retry_delay_seconds: int | None = None,
) -> ProviderOperation:
    """Create ``qualification_type`` on MTurk, with a quiz MTurk scores itself when
    ``test_xml`` (QuestionForm) and ``answer_key_xml`` (AnswerKey) are given.

    Changes the platform's state; idempotency key
    ``create_qualification_type:<type id>`` (created once: MTurk names are unique per
    account, so a retry finds it by its name, ``<name> (qaportal <id>)``). When done,
    ``QualificationType.provider_qualification_id`` holds MTurk's id and grants use it.
    MTurk only (Prolific's qualifications are participant groups, made on first grant).
    """
    if qualification_type.provider not in ("", Provider.MTURK):
        raise DomainError("This qualification belongs to another platform.")
    if answer_key_xml and not test_xml:
        raise DomainError("An answer key needs a test.", errors={"test_xml": ["required"]})
    payload: dict[str, Any] = {
        "qualification_type_id": qualification_type.pk,
        "name": f"{qualification_type.name} (qaportal {qualification_type.pk})",
        "description": qualification_type.description or qualification_type.name,
    }
    if test_xml:
        payload.update(test=test_xml, test_duration_seconds=int(test_duration_seconds))
    if answer_key_xml:
        payload["answer_key"] = answer_key_xml
    if retry_delay_seconds is not None:
        payload["retry_delay_seconds"] = int(retry_delay_seconds)
    op, _ = operation_request(
        provider=Provider.MTURK,
        kind=OperationKind.CREATE_QUALIFICATION_TYPE,
        key=f"create_qualification_type:{qualification_type.pk}",
        payload=payload,
        campaign=None,
    )
    return op
