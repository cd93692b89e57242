"""Agreement and aggregation at scale: alpha and majority vote over ~1M labels.

    .venv/bin/python bench/agreement_bench.py                 # 100,000 items x 10 annotators
    .venv/bin/python bench/agreement_bench.py --items 20000   # smaller
    .venv/bin/python bench/agreement_bench.py --texts 0       # skip the duplicate search

Synthetic data: every item has a true label among 5; each of 10 annotators gives
it with probability 0.7 (else a uniformly random label); 20 % of the cells are
missing. Input is a Python list of (item id, annotator id, label) tuples with
string ids, as a service would read them from the database; every timing below
includes building the arrays from that list. Prints wall times (best of
``--repeat``) and checks alpha against the ``krippendorff`` package on the same
data. Target (issue 7): alpha, matrix included, under 5 s.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import krippendorff

from validation.aggregation import majority_vote
from validation.agreement import LEVELS, Level, krippendorff_alpha, percent_agreement
from validation.labels import LabelTable
from validation.text import find_duplicates


def make_triples(items: int, annotators: int, missing: float, seed: int) -> list[tuple]:
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, size=items)
    right = rng.random((items, annotators)) < 0.7
    noise = rng.integers(1, 6, size=(items, annotators))
    labels = np.where(right, truth[:, np.newaxis], noise)
    present = rng.random((items, annotators)) >= missing
    item_idx, ann_idx = np.nonzero(present)
    item_names = [f"item-{i}" for i in range(items)]
    ann_names = [f"worker-{a}" for a in range(annotators)]
    values = labels[item_idx, ann_idx].tolist()
    return [
        (item_names[i], ann_names[a], v)
        for i, a, v in zip(item_idx.tolist(), ann_idx.tolist(), values, strict=True)
    ]


def make_texts(n: int, seed: int, *, uniform: bool = False) -> list[str]:
    """Question-like texts; about 5 % exact and 5 % near duplicates of earlier ones.

    Words follow a Zipf law over 50,000 words (as real text does), or with
    ``uniform`` are drawn uniformly from 20,000 words: then every word is
    moderately common, the worst case for prefix filtering.
    """
    rng = np.random.default_rng(seed)
    size_v = 20_000 if uniform else 50_000
    vocabulary = np.array([f"word{k}" for k in range(size_v)])
    weights = np.ones(size_v) if uniform else 1.0 / np.arange(1, size_v + 1) ** 1.1
    weights /= weights.sum()
    texts: list[str] = []
    for _ in range(n):
        r = rng.random()
        if texts and r < 0.05:
            texts.append(texts[int(rng.integers(len(texts)))].upper())
        elif texts and r < 0.10:
            words = texts[int(rng.integers(len(texts)))].split()
            words[int(rng.integers(1, len(words)))] = "changed"
            texts.append(" ".join(words))
        else:
            size = int(rng.integers(6, 16))
            texts.append("Why " + " ".join(rng.choice(vocabulary, size=size, p=weights)) + "?")
    return texts


def best_of(repeat: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--annotators", type=int, default=10)
    parser.add_argument("--missing", type=float, default=0.2)
    parser.add_argument("--texts", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    triples = make_triples(args.items, args.annotators, args.missing, args.seed)
    cells = args.items * args.annotators
    print(f"{args.items:,} items x {args.annotators} annotators = {cells:,} cells, ")
    print(f"{len(triples):,} labels present ({args.missing:.0%} missing)\n")

    rows = []

    def alpha_from_triples(level: Level) -> float | None:
        return krippendorff_alpha(LabelTable.from_triples(triples), level=level)

    def timed(name: str, fn: Callable[[], Any]) -> Any:
        seconds, result = best_of(args.repeat, fn)
        rows.append((name, seconds, result))
        return result

    table = timed("build LabelTable from triples", lambda: LabelTable.from_triples(triples))
    for level in LEVELS:
        timed(f"alpha {level} (triples -> table -> alpha)", partial(alpha_from_triples, level))
    timed("alpha nominal on a built table", lambda: krippendorff_alpha(table, level="nominal"))
    timed("percent agreement (triples -> table)", lambda: percent_agreement(triples))
    vote = timed(
        "majority vote, ties none (triples -> table)",
        lambda: majority_vote(triples, discard_labels=[5]),
    )
    timed("majority vote, ties random", lambda: majority_vote(table, ties="random", seed=1))
    timed("majority vote, ties first", lambda: majority_vote(table, ties="first"))

    matrix = table.reliability_matrix()
    reference = timed(
        "krippendorff package on the reliability matrix (reference)",
        lambda: krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal"),
    )

    width = max(len(name) for name, _, _ in rows)
    for name, seconds, _ in rows:
        print(f"{name:<{width}}  {seconds:7.3f} s")
    own = krippendorff_alpha(table, level="nominal")
    assert own is not None
    print(f"\nalpha nominal {own:.6f}; package {reference:.6f}; |diff| {abs(own - reference):.1e}")
    print(f"majority: {len(vote.labels):,} items kept, {len(vote.discarded):,} discarded")

    for uniform in (False, True) if args.texts else ():
        texts = make_texts(args.texts, args.seed, uniform=uniform)
        seconds, dups = best_of(1, partial(find_duplicates, texts, threshold=0.8))
        print(
            f"\nfind_duplicates, {len(texts):,} texts, {'uniform' if uniform else 'Zipf'} words, "
            f"threshold 0.8: {seconds:.2f} s; {len(dups.exact_groups):,} exact groups, "
            f"{len(dups.near_pairs):,} near pairs"
        )


if __name__ == "__main__":
    main()
