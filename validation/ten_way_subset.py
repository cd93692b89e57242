"""Nangia et al.'s 10-way validation subset (ACL 2021, §4): a stage option
(``config.ten_way``: ``per_arm``, default 500 examples per protocol; ``annotators``, 10;
``gold_votes``, 4) that raises a random sample of each arm's validation HITs to ten
validators. The gold and human-performance split is ``validation.ten_way``'s; the
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


@dataclass
class TenWaySelection:
    per_arm: dict[str, int] = field(default_factory=dict)  # arm -> HITs in the subset
    raised: int = 0  # HITs given more places by this call
    items: dict[str, int] = field(default_factory=dict)  # arm -> items in the subset


def ten_way_subset_select(*, stage: Stage, seed: int = 0) -> TenWaySelection:
    """Pick, per arm, a random (seeded) set of the stage's published HITs holding
    ``per_arm`` items between them and raise each to ``annotators`` places.

    A HIT's arm is that of the writing stage its first non-gold item came from; gold-
    only HITs are skipped. Idempotent: HITs already at ``annotators`` count towards the
    arm's share and are not raised again (``hit_add_assignments`` key
    ``ten-way:<hit>``). ``DomainError`` when the stage has no ``config.ten_way``.
    """
    settings = ten_way_settings(stage.config)
    if settings is None:
        raise DomainError(
            "This stage has no 10-way subset: set config.ten_way "
            '(e.g. {"per_arm": 500, "annotators": 10, "gold_votes": 4}).',
            errors={"config": ["ten_way is not set"]},
        )
    arm_of: dict[int, str] = {}
    items_in: dict[int, int] = defaultdict(int)
    for hit_id, is_gold, config in (
        HITItem.objects.filter(hit__stage=stage, hit__status=HITStatus.PUBLISHED)
        .order_by("hit_id", "position")
        .values_list("hit_id", "item__gold", "item__source_assignment__hit__stage__config")
    ):
        if is_gold is not None:
            continue
        items_in[hit_id] += 1
        arm_of.setdefault(hit_id, str((config or {}).get("arm") or ""))
    hits = {h.pk: h for h in HIT.objects.filter(pk__in=list(arm_of))}
    by_arm: dict[str, list[int]] = defaultdict(list)
    for hit_id in sorted(arm_of):
        by_arm[arm_of[hit_id]].append(hit_id)
    result = TenWaySelection()
    for arm, hit_ids in sorted(by_arm.items()):
        chosen = [h for h in hit_ids if hits[h].max_assignments >= settings["annotators"]]
        rest = [h for h in hit_ids if h not in set(chosen)]
        random.Random(f"ten-way-hits:{stage.pk}:{arm}:{seed}").shuffle(rest)
        wanted = settings["per_arm"]
        for hit_id in rest:
            if sum(items_in[h] for h in chosen) >= wanted:
                break
            chosen.append(hit_id)
            hit_add_assignments(
                hit=hits[hit_id],
                count=settings["annotators"] - hits[hit_id].max_assignments,
                reason=f"10-way validation subset ({arm or 'no arm'})",
                key=f"ten-way:{hit_id}",
            )
            result.raised += 1
        result.per_arm[arm or "-"] = len(chosen)
        result.items[arm or "-"] = sum(items_in[h] for h in chosen)
    return result
