"""Nangia et al.'s 10-way validation subset (ACL 2021, §4 "10-Way Validation" and §5.1):
for 500 randomly sampled examples per protocol, ten validators label each; the gold
label is the majority over four of them, sampled, plus the writer's label, and the
other six estimate human performance (their majority against that gold).

Pure functions over plain data. The split is seeded per item, so the four that make
the gold (``ten_way_gold_labels``, used by the final labels) and the six held out
(``ten_way_estimate``) are the same draw wherever it is computed.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

TEN_WAY_DEFAULTS: dict[str, int] = {"per_arm": 500, "annotators": 10, "gold_votes": 4}


def ten_way_settings(config: Mapping[str, Any] | None) -> dict[str, int] | None:
    """The stage's ``config["ten_way"]`` with defaults filled in; None when it is off."""
    raw = (config or {}).get("ten_way")
    if not isinstance(raw, Mapping) or raw.get("enabled") is False:
        return None
    return {k: int(raw.get(k, v)) for k, v in TEN_WAY_DEFAULTS.items()}


def _split(
    item: Hashable, labels: Sequence[Hashable], gold_votes: int, seed: int
) -> tuple[list[Hashable], list[Hashable], random.Random]:
    rng = random.Random(f"ten-way:{seed}:{item}")
    order = list(labels)
    rng.shuffle(order)
    return order[:gold_votes], order[gold_votes:], rng


def _plurality(labels: Sequence[Hashable], rng: random.Random | None) -> Hashable | None:
    counts = Counter(labels).most_common()
    if not counts:
        return None
    top = [label for label, n in counts if n == counts[0][1]]
    if len(top) == 1:
        return top[0]
    return rng.choice(sorted(top, key=str)) if rng is not None else None


def _majority(labels: Sequence[Hashable]) -> Hashable | None:
    """The label with more than half of ``labels`` (§5: "If there is no majority
    agreement on the answer choice ... the example is discarded"); None without one."""
    counts = Counter(labels).most_common(1)
    if not counts or counts[0][1] * 2 <= len(labels):
        return None
    return counts[0][0]


def ten_way_gold_labels(
    labels: Mapping[Hashable, Sequence[Hashable]], *, gold_votes: int = 4, seed: int = 0
) -> dict[Hashable, list[Hashable]]:
    """For each item, the validator labels that vote for its gold label (the sampled
    ``gold_votes``; the writer's vote is added by the caller)."""
    return {item: _split(item, ls, gold_votes, seed)[0] for item, ls in labels.items()}


@dataclass(frozen=True)
class TenWayEstimate:
    accuracy: float | None  # held-out majority == gold, over scored items
    items: int  # items with enough labels
    scored: int  # of them, with a gold label (a majority, not discarded)
    discarded: int
    gold: dict[Hashable, Hashable] = field(default_factory=dict)


def ten_way_estimate(
    items: Mapping[Any, tuple[Hashable | None, Sequence[Hashable]]],
    *,
    gold_votes: int = 4,
    min_labels: int = 10,
    discard_labels: Sequence[Hashable] = (),
    seed: int = 0,
) -> TenWayEstimate:
    """Human performance on the 10-way subset: ``items`` maps an item to (writer's label,
    validator labels). Items with at least ``min_labels`` validator labels count: gold is
    the majority (more than half) over ``gold_votes`` sampled labels plus the writer's
    (no majority, or a label in ``discard_labels`` such as "invalid": the item is
    discarded, §5; a plurality of 2 of 5 is no majority); the
    held-out labels' plurality (ties broken at random, seeded) is the human answer."""
    discard = {str(x) for x in discard_labels}
    hits = scored = discarded = considered = 0
    gold_of: dict[Hashable, Hashable] = {}
    for item, (writer, labels) in items.items():
        if len(labels) < min_labels:
            continue
        considered += 1
        voters, held, rng = _split(item, labels, gold_votes, seed)
        gold = _majority([*voters, *([writer] if writer is not None else [])])
        if gold is None or str(gold) in discard:
            discarded += 1
            continue
        gold_of[item] = gold
        human = _plurality(held, rng)
        scored += 1
        hits += human == gold
    return TenWayEstimate(
        accuracy=round(hits / scored, 4) if scored else None,
        items=considered,
        scored=scored,
        discarded=discarded,
        gold=gold_of,
    )
