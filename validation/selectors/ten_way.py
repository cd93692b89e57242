"""Reads: the 10-way validation subset's human-performance estimate per protocol arm
(Nangia et al., ACL 2021, §4-5.1; ``validation.ten_way``)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable
from dataclasses import dataclass

from campaigns.models import Item, Stage
from validation.selectors import _stage_option, _writer_label, stage_label_triples
from validation.ten_way import TenWayEstimate, ten_way_estimate, ten_way_settings


@dataclass(frozen=True)
class TenWayReport:
    settings: dict[str, int]
    overall: TenWayEstimate
    arms: dict[str, TenWayEstimate]


def _item_arms(*, stage: Stage) -> dict[int, str]:
    """Each item's protocol arm: the arm of the stage whose work produced it."""
    rows = Item.objects.filter(stage=stage).values_list(
        "pk", "source_assignment__hit__stage__config"
    )
    return {pk: str((config or {}).get("arm") or "") for pk, config in rows}


def stage_ten_way(*, stage: Stage, seed: int = 0) -> TenWayReport | None:
    """Human performance on the stage's 10-way subset, overall and per arm; None when
    the stage has no ``config.ten_way``. Uses the stage's ``final_labels`` options
    (``discard_labels``) and the writer's label as the gold's fifth vote."""
    settings = ten_way_settings(stage.config)
    if settings is None:
        return None
    opts = _stage_option(stage, "final_labels")
    labels: dict[int, list[Hashable]] = defaultdict(list)
    for item_id, _worker, label in stage_label_triples(stage=stage):
        labels[item_id].append(label)
    writers = {
        pk: _writer_label(stage, data or {})
        for pk, data in Item.objects.filter(stage=stage, pk__in=list(labels)).values_list(
            "pk", "data"
        )
    }
    arms = _item_arms(stage=stage)
    table = {i: (writers.get(i), ls) for i, ls in labels.items()}

    def estimate(part: dict[int, tuple[Hashable | None, list[Hashable]]]) -> TenWayEstimate:
        return ten_way_estimate(
            part,
            gold_votes=settings["gold_votes"],
            min_labels=settings["annotators"],
            discard_labels=list(opts["discard_labels"]),
            seed=seed,
        )

    by_arm: dict[str, dict[int, tuple[Hashable | None, list[Hashable]]]] = defaultdict(dict)
    for item_id, row in table.items():
        by_arm[arms.get(item_id, "")][item_id] = row
    return TenWayReport(
        settings=settings,
        overall=estimate(table),
        arms={arm: estimate(part) for arm, part in sorted(by_arm.items()) if arm},
    )
