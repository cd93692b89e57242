"""Stage hand-off: an approved answer becomes items of the next stage.

Runs in the Celery task ``campaigns.handoff_run`` after an approval commits.
"""

from __future__ import annotations

import logging
from collections import Counter

from django.db import transaction

from campaigns.design.platform import platform_for, platforms_registered
from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    HITStatus,
    Item,
    ItemSource,
    ItemStatus,
    Stage,
)
from campaigns.tasktypes import task_type_get
from campaigns.work.publishing import stage_holds_handoff, stage_publish
from campaigns.work.selectors.access import WORKABLE_STATES
from campaigns.work.selectors.loading import hits_items

logger = logging.getLogger(__name__)


def handoff_run(*, assignment: Assignment) -> int:
    """Turn ``assignment``'s approved answer into items of the next stage; the count made.

    Uses the source task type's ``next_items`` with the stage link's ``handoff``;
    each produced item is validated by the next stage's task type (invalid ones
    are logged and left out). Idempotent: items are keyed by (next stage,
    external id), so running twice (or two answers producing the very same
    item, per the task-type contract) creates nothing more. When the campaign
    is in pilot or live, the next stage's full HITs are published at once, and
    the last, smaller one too once this stage is drained (``stage_drained``);
    a next stage with ``config["hold_handoff"]`` keeps its items for the requester
    to publish.

    Locking: the next stage's row while items are added, the same lock
    ``stage_publish`` takes, so a concurrent publication sees all or none of them.
    """
    return handoffs_run(assignment_ids=[assignment.pk])


def handoffs_run(*, assignment_ids: list[int]) -> int:
    """``handoff_run`` for many approvals at once, in the order given; the items made.

    The same items as one hand-off after another (the first answer to produce an
    item makes it), but each source stage's next stages are locked once for all its
    answers, and each target stage is published once, after all of them, with the
    remainder when a stage feeding it is drained by then. For a queue drained in one
    go (``qaportal.outbox.outbox_deferred``: the crowd simulator's round of
    approvals), where a publication after each approval re-read the stage each time.
    """
    # The answers alone (a round's approvals: hundreds), their stages read once.
    stage_of: dict[int, int] = {}
    by_pk: dict[int, Assignment] = {}
    for pk, hit_id, stage_id, answers in Assignment.objects.filter(
        pk__in=assignment_ids, status=AssignmentStatus.APPROVED
    ).values_list("pk", "hit_id", "hit__stage_id", "answers"):
        by_pk[pk] = Assignment(pk=pk, hit_id=hit_id, answers=answers)
        stage_of[pk] = stage_id
    stages = Stage.objects.select_related("campaign").in_bulk(set(stage_of.values()))
    by_stage: dict[int, list[Assignment]] = {}
    for pk in dict.fromkeys(assignment_ids):
        assignment = by_pk.get(pk)
        if assignment is not None and stages[stage_of[pk]].next_stage_id is not None:
            by_stage.setdefault(stage_of[pk], []).append(assignment)
    created = 0
    # target stage id -> (stage, publish the remainder too)
    publish: dict[int, tuple[Stage, bool]] = {}
    for stage_id, assignments in by_stage.items():
        stage = stages[stage_id]
        targets, made = _items_make(stage=stage, assignments=assignments)
        created += made
        if stage.campaign.state in WORKABLE_STATES:
            drained = stage_drained(stage=stage)
            for target in targets:
                earlier = publish.get(target.pk)
                publish[target.pk] = (target, drained or (earlier is not None and earlier[1]))
    for target, drained in publish.values():
        if stage_holds_handoff(target):
            continue  # the requester publishes it (config ``hold_handoff``)
        stage_publish(stage=target, allow_partial=drained)
        # Paid HITs stay pending until their platform publishes them, in batches.
        platform_for(target.campaign).hits_publish_due(stage=target, force=drained)
    return created


def _items_make(*, stage: Stage, assignments: list[Assignment]) -> tuple[list[Stage], int]:
    """The next stages' items from ``assignments`` (approved, all of ``stage``), under
    the lock of those stages' rows; the stages items went to, and how many were made.
    An item already in its stage (same external id) is not made again, nor is one that
    an earlier answer of ``assignments`` produced."""
    source_type = task_type_get(stage.task_type)
    items_of = hits_items(hit_ids={a.hit_id for a in assignments})
    # A dropped item (early stopping: WhyQA §2.2.2, 2 of 3 said "no answer") is out of
    # the collection: an approved answer to it hands nothing on.
    dropped = set(
        Item.objects.filter(
            pk__in=[i["id"] for items in items_of.values() for i in items],
            status=ItemStatus.DROPPED,
        ).values_list("pk", flat=True)
    )
    if dropped:
        items_of = {
            hit_id: [i for i in items if i["id"] not in dropped]
            for hit_id, items in items_of.items()
        }
    produced = [
        (
            assignment,
            list(
                source_type.next_items(
                    answer=assignment.answers or {},
                    items=items_of[assignment.hit_id],
                    handoff=stage.handoff or {},
                )
            ),
        )
        for assignment in assignments
    ]
    assert stage.next_stage_id is not None  # handoffs_run hands off stages with a next one
    with transaction.atomic():
        next_stage = (
            Stage.objects.select_for_update().select_related("campaign").get(pk=stage.next_stage_id)
        )
        targets: dict[str | None, Stage] = {None: next_stage}
        targets.update(
            _side_stages(stage=stage, produced=[r for _, results in produced for r in results])
        )
        wanted: dict[tuple[int, str], Item] = {}
        for assignment, results in produced:
            for result in results:
                item = _item_build(assignment=assignment, targets=targets, result=result)
                if item is not None:
                    wanted.setdefault((item.stage_id, item.external_id), item)
        there = _items_there(list(wanted))
        new = [item for key, item in wanted.items() if key not in there]
        # Conflicts ignored: an upload that added the same external id meanwhile wins.
        Item.objects.bulk_create(new, ignore_conflicts=True)
    made = Counter(item.source_assignment_id for item in new)
    for assignment in assignments:
        logger.info("hand-off of assignment %s: %d new items", assignment.pk, made[assignment.pk])
    return list({t.pk: t for t in targets.values()}.values()), len(new)


def _items_there(keys: list[tuple[int, str]]) -> set[tuple[int, str]]:
    """Of ``keys`` ((stage id, external id)), those an item already has."""
    there: set[tuple[int, str]] = set()
    by_stage: dict[int, list[str]] = {}
    for stage_id, external_id in keys:
        by_stage.setdefault(stage_id, []).append(external_id)
    for stage_id, external_ids in by_stage.items():
        found = Item.objects.filter(stage_id=stage_id, external_id__in=external_ids)
        there.update((stage_id, e) for e in found.values_list("external_id", flat=True))
    return there


def _item_build(
    *, assignment: Assignment, targets: dict[str | None, Stage], result: dict
) -> Item | None:
    """One produced item for its stage, unsaved; None (logged) when left out."""
    external_id = str(result.get("external_id", ""))
    data = result.get("data")
    target = targets.get(result.get("route"))
    if target is None:
        logger.warning(
            "hand-off of assignment %s: no stage for route %r", assignment.pk, result.get("route")
        )
        return None
    problems = task_type_get(target.task_type).validate_item(data)
    if not external_id or problems:
        logger.warning(
            "hand-off of assignment %s: item %r left out: %s",
            assignment.pk,
            external_id,
            "; ".join(str(p) for p in problems) or "no external id",
        )
        return None
    return Item(
        stage=target,
        external_id=external_id,
        data=data,
        source=ItemSource.PRODUCED,
        source_assignment=assignment,
    )


def _side_stages(*, stage: Stage, produced: list[dict]) -> dict[str, Stage]:
    """The stages named by the hand-off's stage keys that produced items route to
    (e.g. ``question_writing``'s ``unlinked_to``), locked like the next stage."""
    keys = set(task_type_get(stage.task_type).handoff_stage_keys)
    wanted = {str(r.get("route")) for r in produced} & keys
    ids = {key: (stage.handoff or {}).get(key) for key in wanted}
    found = {
        s.pk: s
        for s in Stage.objects.select_for_update()
        .select_related("campaign")
        .filter(pk__in=[i for i in ids.values() if i is not None], campaign_id=stage.campaign_id)
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
        if stage.next_stage is None or stage_holds_handoff(stage.next_stage):
            continue
        if stage_drained(stage=stage):
            made += stage_publish(stage=stage.next_stage, allow_partial=True)
    _paid_handoff_flush()
    return made


def _paid_handoff_flush() -> None:
    """Publish on their platform the hand-off HITs of paid campaigns that are due
    (a full batch, waited long enough, or a drained source stage)."""
    waiting = Stage.objects.filter(
        campaign__state__in=WORKABLE_STATES,
        campaign__provider__in=[
            p.name for p in platforms_registered() if not p.hits_open_when_made
        ],
        hits__status=HITStatus.PENDING,
        hits__provider_hit_id__isnull=True,
    )
    for stage in waiting.distinct().select_related("campaign"):
        sources = Stage.objects.filter(next_stage=stage)
        drained = all(stage_drained(stage=source) for source in sources)
        platform_for(stage.campaign).hits_publish_due(stage=stage, force=drained)
