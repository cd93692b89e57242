"""Reads for the worker pages: access, available HITs, an assignment's items."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, F, Q, QuerySet
from django.utils import timezone

from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    Campaign,
    CampaignState,
    HITItem,
    HITStatus,
    InviteLink,
    LocalGrant,
    Provider,
    Stage,
    Worker,
    WorkerBlock,
)
from campaigns.models.choices import ASSIGNMENT_HOLDING_STATES
from campaigns.tasktypes import TaskType, task_type_get

WORKABLE_STATES = (CampaignState.PILOT, CampaignState.LIVE)


def hit_items(*, hit: HIT) -> list[dict[str, Any]]:
    """The HIT's items in order, as task types see them: ``{"id", "external_id", "data"}``."""
    rows = (
        HITItem.objects.filter(hit=hit)
        .order_by("position")
        .values("item_id", "item__external_id", "item__data")
    )
    return [
        {"id": r["item_id"], "external_id": r["item__external_id"], "data": r["item__data"]}
        for r in rows
    ]


def worker_is_blocked(*, worker: Worker, campaign: Campaign) -> bool:
    """Whether the campaign's owner has an active block on ``worker``."""
    return WorkerBlock.objects.filter(
        requester_id=campaign.owner_id, worker=worker, lifted_at__isnull=True
    ).exists()


def worker_has_stage_access(*, worker: Worker, stage: Stage) -> bool:
    """Whether a local ``worker`` may see ``stage``'s work pages.

    A logged-in annotator needs a ``LocalGrant`` for the campaign; an invited
    worker needs the invite they joined through to be unrevoked and to cover the
    stage (an invite to one stage covers that stage only).
    """
    campaign = stage.campaign
    if campaign.provider != Provider.LOCAL or worker.provider != Provider.LOCAL:
        return False
    if (
        worker.user_id is not None
        and LocalGrant.objects.filter(campaign=campaign, user_id=worker.user_id).exists()
    ):
        return True
    return InviteLink.objects.filter(
        Q(stage__isnull=True) | Q(stage=stage),
        campaign=campaign,
        revoked_at__isnull=True,
        redemptions__worker=worker,
    ).exists()


def stage_entry_for_invite(*, invite: InviteLink) -> Stage | None:
    """Where an invite sends its workers: its stage, or the campaign's first stage."""
    if invite.stage_id is not None:
        return invite.stage
    return invite.campaign.stages.order_by("position").first()


def hits_open(*, stage: Stage, worker: Worker) -> QuerySet[HIT]:
    """Published, unexpired HITs of ``stage`` with a free place ``worker`` does not hold.

    Does not apply exclusive keys (they need the task type); see ``hit_conflicts``.
    """
    return (
        HIT.objects.filter(stage=stage, status=HITStatus.PUBLISHED)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now()))
        .exclude(
            pk__in=Assignment.objects.filter(
                worker=worker, status__in=ASSIGNMENT_HOLDING_STATES
            ).values("hit_id")
        )
        .annotate(
            held=Count("assignments", filter=Q(assignments__status__in=ASSIGNMENT_HOLDING_STATES))
        )
        .filter(held__lt=F("max_assignments"))
        .order_by("id")
    )


def worker_exclusive_keys(*, stage: Stage, worker: Worker, task_type: TaskType) -> set[str]:
    """Exclusive keys of the items ``worker`` holds (or held to the end) in ``stage``."""
    data = HITItem.objects.filter(
        hit__stage=stage,
        hit__assignments__worker=worker,
        hit__assignments__status__in=ASSIGNMENT_HOLDING_STATES,
    ).values_list("item__data", flat=True)
    keys = {task_type.exclusive_key(item=d) for d in data}
    keys.discard(None)
    return keys  # type: ignore[return-value]


def hits_conflicting(*, hit_ids: list[int], task_type: TaskType, taken: set[str]) -> set[int]:
    """Those of ``hit_ids`` holding an item whose exclusive key is in ``taken`` (one query)."""
    if not taken or not hit_ids:
        return set()
    rows = HITItem.objects.filter(hit_id__in=hit_ids).values_list("hit_id", "item__data")
    return {hit_id for hit_id, data in rows if task_type.exclusive_key(item=data) in taken}


def hit_next_available(*, stage: Stage, worker: Worker) -> HIT | None:
    """The HIT ``assignment_accept`` would most likely give ``worker`` now (for previews)."""
    if stage.campaign.state not in WORKABLE_STATES:
        return None
    task_type = task_type_get(stage.task_type)
    taken = worker_exclusive_keys(stage=stage, worker=worker, task_type=task_type)
    candidates = list(hits_open(stage=stage, worker=worker)[:200])
    conflicting = hits_conflicting(
        hit_ids=[h.pk for h in candidates], task_type=task_type, taken=taken
    )
    return next((h for h in candidates if h.pk not in conflicting), None)


def assignment_current(*, stage: Stage, worker: Worker) -> Assignment | None:
    """``worker``'s accepted, unsubmitted and unexpired assignment in ``stage``, if any."""
    return (
        Assignment.objects.filter(
            hit__stage=stage,
            worker=worker,
            status=AssignmentStatus.ACCEPTED,
        )
        .filter(Q(deadline__isnull=True) | Q(deadline__gt=timezone.now()))
        .order_by("accepted_at", "id")
        .first()
    )


def assignment_get_for_workers(*, assignment_id: int, workers: list[Worker]) -> Assignment:
    """The assignment if one of ``workers`` holds it; ``Assignment.DoesNotExist`` otherwise."""
    return Assignment.objects.select_related("hit__stage__campaign", "worker").get(
        pk=assignment_id, worker__in=[w.pk for w in workers]
    )


def invite_list(*, campaign: Campaign) -> QuerySet[InviteLink]:
    """The campaign's invite links, newest first."""
    return campaign.invite_links.select_related("stage", "created_by").order_by("-created_at")
