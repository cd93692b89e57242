"""Stage hand-off: an approved answer becomes items of the next stage.

Runs in the Celery task ``campaigns.handoff_run`` after an approval commits.
"""

from __future__ import annotations

import logging

from django.db import transaction

from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    HITStatus,
    Item,
    ItemSource,
    ItemStatus,
    Provider,
    Stage,
)
from campaigns.selectors_work import WORKABLE_STATES, hit_items
from campaigns.services.work import stage_publish
from campaigns.tasktypes import task_type_get

logger = logging.getLogger(__name__)


def handoff_run(*, assignment: Assignment) -> int:
    """Turn ``assignment``'s approved answer into items of the next stage; the count made.

    Uses the source task type's ``next_items`` with the stage link's ``handoff``;
    each produced item is validated by the next stage's task type (invalid ones
    are logged and left out). Idempotent: items are keyed by (next stage,
    external id), so running twice (or two answers producing the very same
    item, per the task-type contract) creates nothing more. When the campaign
    is in pilot or live, the next stage's full HITs are published at once, and
    the last, smaller one too once this stage is drained (``stage_drained``).

    Locking: the next stage's row while items are added, the same lock
    ``stage_publish`` takes, so a concurrent publication sees all or none of them.
    """
    assignment = Assignment.objects.select_related("hit__stage__campaign").get(pk=assignment.pk)
    stage = assignment.hit.stage
    if assignment.status != AssignmentStatus.APPROVED or stage.next_stage_id is None:
        return 0
    source_type = task_type_get(stage.task_type)
    produced = list(
        source_type.next_items(
            answer=assignment.answers or {},
            items=hit_items(hit=assignment.hit),
            handoff=stage.handoff or {},
        )
    )
    created = 0
    with transaction.atomic():
        next_stage = Stage.objects.select_for_update().get(pk=stage.next_stage_id)
        targets: dict[str | None, Stage] = {None: next_stage}
        targets.update(_side_stages(stage=stage, produced=produced))
        for result in produced:
            external_id = str(result.get("external_id", ""))
            data = result.get("data")
            target = targets.get(result.get("route"))
            if target is None:
                logger.warning(
                    "hand-off of assignment %s: no stage for route %r",
                    assignment.pk,
                    result.get("route"),
                )
                continue
            problems = task_type_get(target.task_type).validate_item(data)
            if not external_id or problems:
                logger.warning(
                    "hand-off of assignment %s: item %r left out: %s",
                    assignment.pk,
                    external_id,
                    "; ".join(str(p) for p in problems) or "no external id",
                )
                continue
            _, made = Item.objects.get_or_create(
                stage=target,
                external_id=external_id,
                defaults={
                    "data": data,
                    "source": ItemSource.PRODUCED,
                    "source_assignment": assignment,
                },
            )
            created += made
    if stage.campaign.state in WORKABLE_STATES:
        drained = stage_drained(stage=stage)
        for target in {t.pk: t for t in targets.values() if t is not None}.values():
            stage_publish(stage=target, allow_partial=drained)
            if stage.campaign.provider != Provider.LOCAL:
                # Paid HITs stay pending until their platform publishes them, in batches.
                from campaigns.services.provider_sync import paid_handoff_publish

                paid_handoff_publish(stage=target, force=drained)
    logger.info("hand-off of assignment %s: %d new items", assignment.pk, created)
    return created


def _side_stages(*, stage: Stage, produced: list[dict]) -> dict[str, Stage]:
    """The stages named by the hand-off's stage keys that produced items route to
    (e.g. ``question_writing``'s ``unlinked_to``), locked like the next stage."""
    keys = set(task_type_get(stage.task_type).handoff_stage_keys)
    wanted = {str(r.get("route")) for r in produced} & keys
    ids = {key: (stage.handoff or {}).get(key) for key in wanted}
    found = {
        s.pk: s
        for s in Stage.objects.select_for_update().filter(
            pk__in=[i for i in ids.values() if i is not None], campaign_id=stage.campaign_id
        )
    }
    return {key: found[i] for key, i in ids.items() if i in found}


def stage_drained(*, stage: Stage) -> bool:
    """No more output can come from ``stage``: nothing pending, no open place, no
    assignment at work or awaiting a decision."""
    return not (
        Item.objects.filter(stage=stage, status=ItemStatus.PENDING).exists()
        or HIT.objects.filter(stage=stage, status=HITStatus.PUBLISHED, places_left__gt=0).exists()
        or Assignment.objects.filter(
            hit__stage=stage,
            status__in=[AssignmentStatus.ACCEPTED, AssignmentStatus.SUBMITTED],
        ).exists()
    )


def handoff_flush() -> int:
    """Publish the last, smaller HIT of every stage fed by a drained stage; HITs made.

    The hand-off publishes only full HITs while its source stage still works; when
    the source's last decision is a rejection (no hand-off runs), this is what
    publishes the remainder. Run by beat with the expiry task; idempotent.
    """
    made = 0
    fed = Stage.objects.filter(
        campaign__state__in=WORKABLE_STATES,
        next_stage__isnull=False,
        next_stage__items__status=ItemStatus.PENDING,
    ).distinct()
    for stage in fed.select_related("next_stage"):
        if stage.next_stage is not None and stage_drained(stage=stage):
            made += stage_publish(stage=stage.next_stage, allow_partial=True)
    _paid_handoff_flush()
    return made


def _paid_handoff_flush() -> None:
    """Publish on their platform the hand-off HITs of paid campaigns that are due
    (a full batch, waited long enough, or a drained source stage)."""
    from campaigns.services.provider_sync import paid_handoff_publish

    waiting = Stage.objects.filter(
        campaign__state__in=WORKABLE_STATES,
        hits__status=HITStatus.PENDING,
        hits__provider_hit_id__isnull=True,
    ).exclude(campaign__provider=Provider.LOCAL)
    for stage in waiting.distinct().select_related("campaign"):
        sources = Stage.objects.filter(next_stage=stage)
        drained = all(stage_drained(stage=source) for source in sources)
        paid_handoff_publish(stage=stage, force=drained)
