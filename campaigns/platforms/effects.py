"""What done operations change in qaportal's own tables, for every platform.

Registered with ``operation_effect`` at import (``campaigns.platforms.registry``
imports this module); platform-specific effects sit with their platform
(``prolific/platform.py``, ``mturk/records.py``).
"""

from __future__ import annotations

from django.utils import timezone

from campaigns.models import (
    HIT,
    HITStatus,
    LedgerStatus,
    OperationKind,
    ProviderOperation,
    QualificationType,
)
from campaigns.payments.ledger import ledger_operation_settle
from campaigns.platforms.operations import PUBLISH_KINDS, QUALIFYING_KINDS, operation_effect
from campaigns.platforms.review import assignment_decision_record
from campaigns.work.lifecycle import hit_places_add


@operation_effect(*PUBLISH_KINDS)
def hits_published(op: ProviderOperation) -> None:
    """The HITs the platform published get their platform ids and open."""
    result = op.result or {}
    if not result.get("published", True):
        return
    now = timezone.now()
    for hit_id, info in (result.get("hits") or {}).items():
        HIT.objects.filter(pk=int(hit_id), status=HITStatus.PENDING).update(
            status=HITStatus.PUBLISHED,
            provider_hit_id=info.get("provider_hit_id"),
            provider_group_id=info.get("group_id", ""),
            published_at=now,
        )


@operation_effect(OperationKind.ADD_ASSIGNMENTS)
def places_added(op: ProviderOperation) -> None:
    """Places the platform added open on the HIT."""
    payload = op.payload or {}
    hit_places_add(hit_id=int(payload["hit_id"]), count=int(payload.get("count", 1)))


@operation_effect(OperationKind.APPROVE, OperationKind.REJECT)
def decision_recorded(op: ProviderOperation) -> None:
    """A decision the platform carried out is recorded (and announced)."""
    assignment_decision_record(operation=op)


@operation_effect(OperationKind.BONUS)
def bonus_paid(op: ProviderOperation) -> None:
    """The bonus's committed ledger entries are paid."""
    ledger_operation_settle(operation=op, status=LedgerStatus.PAID)


@operation_effect(*QUALIFYING_KINDS)
def qualification_identified(op: ProviderOperation) -> None:
    """A qualification type gets its platform id (a participant group, an MTurk type)."""
    result = op.result or {}
    if not result.get("group_id"):
        return
    QualificationType.objects.filter(
        pk=int((op.payload or {}).get("qualification_type_id") or 0),
        provider_qualification_id__isnull=True,
    ).update(provider=op.provider, provider_qualification_id=result["group_id"])
