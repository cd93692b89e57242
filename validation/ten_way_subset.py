"""Nangia et al.'s 10-way validation subset (ACL 2021, §4): a stage option
(``config.ten_way``: ``per_arm``, default 500 examples per protocol; ``annotators``, 10;
``gold_votes``, 4) that raises the validation HITs holding a random sample of each arm's
examples to ten validators. The gold and human-performance split is ``validation.ten_way``'s; the
estimate is ``validation.selectors.ten_way.stage_ten_way``.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field

from campaigns.models import HIT, HITItem, HITStatus, Stage
from campaigns.work.lifecycle import hit_add_assignments
from qaportal.errors import DomainError
from validation.ten_way import ten_way_settings

# HITs that have been open for work: a completed HIT's places are reopened.
OPENED = (HITStatus.PUBLISHED, HITStatus.COMPLETED)


@dataclass
class TenWaySelection:
    per_arm: dict[str, int] = field(default_factory=dict)  # arm -> HITs in the subset
    raised: int = 0  # HITs given more places by this call
    items: dict[str, int] = field(default_factory=dict)  # arm -> items in the subset


def ten_way_subset_select(*, stage: Stage, seed: int = 0) -> TenWaySelection:
    """Pick, per arm, a random (seeded) sample of ``per_arm`` of the stage's examples
    and raise the HITs holding them to ``annotators`` places.

    §4 samples from all of a protocol's examples: every non-gold item in a HIT that
    has been open for work (published, or completed: its places are reopened) is a
    candidate, not only the HITs still open. An item's arm is that of the writing stage
    its work came from; a HIT may hold several arms' items (§4 shuffles the protocols
    together), and all its items count towards their arms. Idempotent: HITs already at
    ``annotators`` count towards their arms' shares and are not raised again
    (``hit_add_assignments`` key ``ten-way:<hit>``). ``DomainError`` when the stage has
    no ``config.ten_way``.
    """
    settings = ten_way_settings(stage.config)
    if settings is None:
        raise DomainError(
            "This stage has no 10-way subset: set config.ten_way "
            '(e.g. {"per_arm": 500, "annotators": 10, "gold_votes": 4}).',
            errors={"config": ["ten_way is not set"]},
        )
    hit_of: dict[int, int] = {}
    arm_of: dict[int, str] = {}
    for hit_id, item_id, is_gold, config in (
        HITItem.objects.filter(hit__stage=stage, hit__status__in=OPENED)
        .order_by("hit_id", "position")
        .values_list(
            "hit_id", "item_id", "item__gold", "item__source_assignment__hit__stage__config"
        )
    ):
        if is_gold is not None:
            continue
        hit_of[item_id] = hit_id
        arm_of[item_id] = str((config or {}).get("arm") or "")
    hits = {h.pk: h for h in HIT.objects.filter(pk__in=set(hit_of.values()))}
    items_of_arm: dict[str, list[int]] = defaultdict(list)
    for item_id in sorted(arm_of):
        items_of_arm[arm_of[item_id]].append(item_id)
    chosen = {h for h, hit in hits.items() if hit.max_assignments >= settings["annotators"]}

    def in_subset(arm: str) -> list[int]:
        return [i for i in items_of_arm[arm] if hit_of[i] in chosen]

    raise_now: list[int] = []
    for arm in sorted(items_of_arm):
        rest = [i for i in items_of_arm[arm] if hit_of[i] not in chosen]
        random.Random(f"ten-way-items:{stage.pk}:{arm}:{seed}").shuffle(rest)
        counted = len(in_subset(arm))
        for item_id in rest:
            if counted >= settings["per_arm"]:
                break
            if hit_of[item_id] in chosen:
                continue  # raised already for an earlier item of this draw
            hit_id = hit_of[item_id]
            chosen.add(hit_id)
            raise_now.append(hit_id)
            counted += sum(1 for i in items_of_arm[arm] if hit_of[i] == hit_id)
    for hit_id in raise_now:
        hit_add_assignments(
            hit=hits[hit_id],
            count=settings["annotators"] - hits[hit_id].max_assignments,
            reason="10-way validation subset",
            key=f"ten-way:{hit_id}",
        )
    result = TenWaySelection(raised=len(raise_now))
    for arm in sorted(items_of_arm):
        subset = in_subset(arm)
        result.per_arm[arm or "-"] = len({hit_of[i] for i in subset})
        result.items[arm or "-"] = len(subset)
    return result
