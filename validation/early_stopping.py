"""Early stopping (WhyQA): look at the first answers of a HIT, then drop or extend it.

A stage's ``escalation_rule`` ``{"rule": "early_stop", "first": 3,
"drop_if_no_answer": 2, "extend_to": 8}``: once the first ``first`` assignments
of a HIT are submitted, each item of the HIT that ``drop_if_no_answer`` of them
answered "no answer" is dropped (``Item.status`` dropped); when every item of
the HIT is dropped, its remaining places close. Otherwise the HIT is extended to
``extend_to`` assignments with ``hit_add_assignments`` (key ``early_stop:<hit>``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.db.models import Q

from campaigns.models import HIT, Assignment, AssignmentStatus, HITStatus, Item, ItemStatus, Stage
from campaigns.work.lifecycle import hit_add_assignments
from campaigns.work.selectors.loading import hit_items
from validation.projections import entries_by_item, is_no_answer
from validation.rules.settings import ESCALATION_RULES, params_of

logger = logging.getLogger(__name__)

WAITING, DROPPED, EXTENDED, DONE, NOT_APPLICABLE = (
    "waiting",
    "dropped",
    "extended",
    "done",
    "not_applicable",
)


def early_stop_rule(escalation_rule: Any) -> dict[str, Any] | None:
    """The early-stop parameters of a stage's escalation rule, defaults filled in; or None."""
    if isinstance(escalation_rule, Mapping) and escalation_rule.get("rule") == "early_stop":
        return params_of(escalation_rule, ESCALATION_RULES)
    return None


def _handed_on_drop(*, hit: HIT, items: list[dict[str, Any]]) -> None:
    """What an answer approved before the drop already handed on from a dropped item
    (WhyQA: a rephrasing item made from the first, answerable answer) is dropped too,
    while it waits for its HIT; an item published already stays (its HIT is out)."""
    derived = Q()
    for item in items:
        derived |= Q(external_id__startswith=f"{item['external_id']}/")
    Item.objects.filter(derived, source_assignment__hit=hit, status=ItemStatus.PENDING).update(
        status=ItemStatus.DROPPED
    )


def hit_early_stop(*, hit: HIT) -> str:
    """Apply the stage's early-stop rule to ``hit``; what happened (see the constants).

    Counts the first ``first`` submitted or approved assignments (rejected ones are
    not answers), in submission order. Idempotent: dropping is a status change
    made once (later calls see the HIT closed and say "done"), the extension has
    the key ``early_stop:<hit id>``. Locking: the HIT row while it decides, then
    ``hit_add_assignments`` locks it again for the extension. The rule is read from
    ``hit``'s stage when it was loaded with it (no query when the stage has none).
    """
    stage = hit.stage if HIT.stage.is_cached(hit) else Stage.objects.get(pk=hit.stage_id)
    rule = early_stop_rule(stage.escalation_rule)
    if rule is None:
        return NOT_APPLICABLE
    first, drop_at, extend_to = rule["first"], rule["drop_if_no_answer"], rule["extend_to"]
    task_type = stage.task_type
    with transaction.atomic():
        locked = HIT.objects.select_for_update().get(pk=hit.pk)
        answers = list(
            Assignment.objects.filter(
                hit=locked,
                status__in=[AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED],
            )
            .order_by("submitted_at", "pk")
            .values_list("answers", flat=True)[:first]
        )
        if len(answers) < first:
            return WAITING
        items = hit_items(hit=locked)
        no_answer = {item["id"]: 0 for item in items}
        for answer in answers:
            for item_id, entry in entries_by_item(answer, items).items():
                no_answer[item_id] += bool(is_no_answer(task_type, entry))
        drop = [item_id for item_id, n in no_answer.items() if n >= drop_at]
        if drop:
            Item.objects.filter(pk__in=drop).exclude(status=ItemStatus.DROPPED).update(
                status=ItemStatus.DROPPED
            )
            _handed_on_drop(hit=locked, items=[i for i in items if i["id"] in drop])
        if len(drop) == len(items):
            if locked.status == HITStatus.COMPLETED and locked.places_left == 0:
                return DONE
            locked.places_left = 0
            locked.status = HITStatus.COMPLETED
            locked.save(update_fields=["places_left", "status"])
            logger.info("HIT %s dropped by early stopping (%s)", locked.pk, no_answer)
            return DROPPED
        more = extend_to - locked.max_assignments
    if more <= 0:
        return DONE
    hit_add_assignments(
        hit=locked,
        count=more,
        reason=f"early stop: fewer than {drop_at} of the first {first} said no answer",
        key=f"early_stop:{locked.pk}",
    )
    return EXTENDED


def stage_early_stop(*, stage_id: int) -> dict[str, int]:
    """``hit_early_stop`` on every published HIT of the stage still short of
    ``extend_to``; counts per outcome (for the stage review task)."""
    stage = Stage.objects.get(pk=stage_id)
    rule = early_stop_rule(stage.escalation_rule)
    counts: dict[str, int] = {}
    if rule is None:
        return counts
    hits = HIT.objects.filter(
        stage=stage, status=HITStatus.PUBLISHED, max_assignments__lt=rule["extend_to"]
    ).order_by("pk")
    for hit in hits.iterator():
        outcome = hit_early_stop(hit=hit)
        counts[outcome] = counts.get(outcome, 0) + 1
    return counts
