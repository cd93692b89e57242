"""MTurk HITs follow their campaign: paused or completed → expired; resumed → their
own expiry back.

MTurk cannot pause a HIT; it can move its expiry (``UpdateExpirationForHIT``): to the
past stops new workers from accepting (workers holding an assignment may still
submit), to a future time opens it again. One ``expire`` operation per change of the
campaign carries every published HIT of it.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from campaigns.models import (
    HIT,
    Campaign,
    HITStatus,
    OperationKind,
    OperationState,
    Provider,
    ProviderOperation,
)
from campaigns.platforms.operations import operation_request


def mturk_campaign_follow(*, campaign: Campaign, mode: str) -> ProviderOperation | None:
    """Expire (``mode`` "pause" / "stop") or re-open (``mode`` "resume") the campaign's
    published MTurk HITs, in one ``expire`` operation.

    Changes the platform's state. Idempotency key ``<mode>:mturk:campaign:<id>:<n>``,
    ``n`` the number of earlier such operations of the campaign: asking again for what
    the latest asked for returns it; after a stop nothing re-opens. A re-opened HIT
    gets its own ``expires_at`` back (HITs past it stay closed). None when the campaign
    has no published MTurk HIT. Locking: the campaign row.
    """
    if mode not in ("pause", "stop", "resume"):
        raise ValueError(f"Unknown mode {mode!r}")
    with transaction.atomic():
        Campaign.objects.select_for_update().filter(pk=campaign.pk).first()
        earlier = ProviderOperation.objects.filter(
            provider=Provider.MTURK,
            kind=OperationKind.EXPIRE,
            idempotency_key__contains=f":mturk:campaign:{campaign.pk}:",
        )
        latest = earlier.exclude(state=OperationState.FAILED).order_by("-pk").first()
        if latest is not None and (latest.payload or {}).get("mode") in (mode, "stop"):
            return latest
        now = timezone.now()
        hits = HIT.objects.filter(
            provider=Provider.MTURK, stage__campaign=campaign, status=HITStatus.PUBLISHED
        ).exclude(provider_hit_id__isnull=True)
        if mode == "resume":
            hits = hits.filter(expires_at__gt=now)
        rows = list(hits.order_by("pk").values_list("provider_hit_id", "expires_at"))
        if not rows:
            return None
        payload: dict[str, object] = {"mode": mode, "provider_hit_ids": [h for h, _ in rows]}
        if mode == "resume":
            payload["expire_at"] = {h: when.isoformat() for h, when in rows if when}
        op, _ = operation_request(
            provider=Provider.MTURK,
            kind=OperationKind.EXPIRE,
            key=f"{mode}:mturk:campaign:{campaign.pk}:{earlier.count()}",
            payload=payload,
            campaign=campaign,
        )
    return op
