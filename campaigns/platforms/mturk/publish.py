"""Publishing a stage on Mechanical Turk: its pending HITs become one ``create_hit``
operation (a HIT type, then one MTurk HIT each, see ``MTurkProvider.publish_hits``).
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.db import transaction

from campaigns.models import (
    HIT,
    HITStatus,
    OperationKind,
    Provider,
    ProviderOperation,
    QualificationType,
    Stage,
)
from campaigns.platforms import fee_model_for, requires_masters
from campaigns.platforms.base import PermanentProviderError
from campaigns.platforms.mturk.payloads import publish_payload
from campaigns.platforms.mturk.xml import qualification_requirements
from campaigns.platforms.operations import operation_request
from campaigns.platforms.publishing import hits_being_published, publish_key
from campaigns.platforms.review import campaign_budget_check
from campaigns.tasktypes.instructions import stage_instructions
from campaigns.work.publishing import stage_publish
from campaigns.workforce.requirements import stage_requirements
from qaportal.errors import DomainError


def _custom_qualifications(stage: Stage) -> dict[int, str]:
    ids = [r.get("qualification_type_id") for r in stage_requirements(stage=stage)]
    wanted = [int(i) for i in ids if i is not None]
    if not wanted:
        return {}
    return {
        pk: str(qid)
        for pk, qid in QualificationType.objects.filter(pk__in=wanted).values_list(
            "pk", "provider_qualification_id"
        )
        if qid
    }


def mturk_stage_publish(*, stage: Stage, allow_partial: bool = True) -> ProviderOperation | None:
    """Publish the stage's pending items on MTurk: one ``create_hit`` operation.

    Puts pending items into HITs (``stage_publish``), checks the campaign's budget for
    every place (reward + MTurk's fee), maps the stage's qualification requirements
    (``qualification_requirements``; a bad one is a ``DomainError`` now rather than a
    failed operation later) and asks for the operation under key
    ``publish:stage:<id>:hits:<first>-<last>:<count>`` (``…:retry<n>`` after a failed
    one). The HITs become ``published`` when it is done. None if nothing is pending.
    Locking: the stage row.
    """
    stage_publish(stage=stage, allow_partial=allow_partial)
    with transaction.atomic():
        stage = Stage.objects.select_for_update().select_related("campaign").get(pk=stage.pk)
        campaign = stage.campaign
        if campaign.provider != Provider.MTURK:
            raise DomainError("mturk_stage_publish handles MTurk campaigns.")
        busy = hits_being_published(stage=stage)
        hits = [
            h
            for h in HIT.objects.filter(
                stage=stage, status=HITStatus.PENDING, provider_hit_id__isnull=True
            ).order_by("pk")
            if h.pk not in busy
        ]
        if not hits:
            return None
        hit_ids = [h.pk for h in hits]
        live, key = publish_key(provider=Provider.MTURK, stage=stage, hit_ids=hit_ids)
        if live is not None:
            return live
        masters = requires_masters(stage.qualification_requirements)
        fee = fee_model_for(Provider.MTURK, masters=masters).assignment_fee(
            reward=stage.reward, max_assignments=stage.assignments_per_hit
        )
        places = sum(h.max_assignments for h in hits)
        campaign_budget_check(
            campaign=campaign, extra=(stage.reward + fee) * places, what="Publishing this stage"
        )
        config = stage.config or {}
        try:
            requirements = qualification_requirements(
                stage_requirements(stage=stage),
                sandbox=campaign.sandbox,
                custom=_custom_qualifications(stage),
            )
            payload = publish_payload(
                stage_id=stage.pk,
                hit_ids=hit_ids,
                title=f"{campaign.name}: {stage.name}",
                description=stage_instructions(stage) or stage.name,
                keywords=str(config.get("keywords", "")),
                reward=Decimal(stage.reward),
                duration_seconds=int(stage.assignment_duration.total_seconds()),
                auto_approval_seconds=int(
                    config.get(
                        "auto_approval_seconds",
                        86400 * int(getattr(settings, "MTURK_AUTO_APPROVAL_DAYS", 3)),
                    )
                ),
                lifetime_seconds=int(stage.lifetime.total_seconds()),
                max_assignments=stage.assignments_per_hit,
                qualification_requirements=requirements,
                site_url=getattr(settings, "SITE_URL", ""),
                frame_height=int(getattr(settings, "MTURK_FRAME_HEIGHT", 0)),
            )
        except PermanentProviderError as exc:
            raise DomainError(str(exc), errors={"stage": [str(exc)]}) from None
        op, _ = operation_request(
            provider=Provider.MTURK,
            kind=OperationKind.CREATE_HIT,
            key=key,
            payload=payload,
            campaign=campaign,
        )
    return op
