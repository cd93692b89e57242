"""Where gold items go among the regular ones when a stage is published."""

from __future__ import annotations

import random
from collections.abc import Sequence


def gold_mix_order(
    regular: Sequence[int], gold: Sequence[int], *, ratio: float, seed: int = 0
) -> list[int]:
    """Item ids in publishing order with gold spread through the regular items.

    About ``ratio`` of every stretch is gold, at seeded random places inside each
    stretch (a worker cannot tell by position); gold items are reused in turn
    when there are too few for the ratio, left out when there are too many.
    ``ratio`` 0 or no gold: the regular items unchanged.
    """
    if not 0 <= ratio < 1:
        raise ValueError("ratio must be in [0, 1)")
    if ratio == 0 or not gold or not regular:
        return list(regular)
    rng = random.Random(seed)
    wanted = max(1, round(len(regular) * ratio / (1 - ratio)))
    golds = [gold[n % len(gold)] for n in range(wanted)]
    stretch = len(regular) / wanted
    out: list[int] = []
    start = 0
    for n, gold_id in enumerate(golds):
        end = round((n + 1) * stretch)
        chunk = list(regular[start:end])
        chunk.insert(rng.randint(0, len(chunk)), gold_id)
        out += chunk
        start = end
    out += regular[start:]
    return out
