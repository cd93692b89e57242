"""Final labels from several annotators' labels: pure functions over plain data.

- ``majority_vote`` — the most-voted label per item, with configurable tie
  handling, optionally counting the writer's own label as one vote, and
  discarding items without a majority or with a majority for a label such as
  "invalid" (Nangia et al. 2021: gold = majority over writer + validators).
- ``dawid_skene`` and ``mace`` — crowd-kit's models, returning labels and each
  annotator's estimated reliability.
- ``human_performance`` — hold out annotations, compare their majority with the
  majority of the rest.

Inputs are a ``LabelTable`` or ``(item, annotator, label)`` triples, as in
``validation.agreement``.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np
import numpy.typing as npt

from validation.labels import LabelTable, Triple, as_table

if TYPE_CHECKING:
    import pandas as pd

Ties = Literal["none", "first", "random"]
Require = Literal["plurality", "absolute"]
TIES: tuple[Ties, ...] = ("none", "first", "random")

# Reasons an item gets no final label.
TIE = "tie"  # several labels share the most votes and ties="none"
NO_MAJORITY = "no_majority"  # require="absolute" and no label has more than half
DISCARD_LABEL = "discard_label"  # the majority went to a label in discard_labels

# Annotator id under which the writer's own label is counted.
WRITER = "__writer__"


@dataclass(frozen=True)
class MajorityVote:
    labels: dict[Hashable, Hashable]  # item → final label, for kept items
    discarded: dict[Hashable, str]  # item → reason (TIE, NO_MAJORITY, DISCARD_LABEL)
    majority: dict[Hashable, Hashable]  # item → majority label, including discard-label ones


def _decide(
    counts: npt.NDArray[np.int64],
    *,
    ties: Ties,
    rng: np.random.Generator | None,
    first_seen: npt.NDArray[np.int64] | None,
) -> npt.NDArray[np.intp]:
    """Label code per row with the most votes; -1 for rows without votes or an unbroken tie.

    ``first_seen[i, v]`` is the input position of item i's first vote for v
    (used by ties="first").
    """
    top = counts.max(axis=1, initial=0)
    is_top = (counts == top[:, np.newaxis]) & (top[:, np.newaxis] > 0)
    n_top = is_top.sum(axis=1)
    choice = np.argmax(is_top, axis=1).astype(np.intp)
    choice[n_top == 0] = -1
    tied = n_top > 1
    if tied.any():
        if ties == "none":
            choice[tied] = -1
        elif ties == "first":
            if first_seen is None:
                raise ValueError('ties="first" needs the order of the votes')
            order = np.where(is_top[tied], first_seen[tied], np.iinfo(np.int64).max)
            choice[tied] = np.argmin(order, axis=1)
        elif ties == "random":
            if rng is None:
                raise ValueError('ties="random" needs a random generator')
            noise = np.where(is_top[tied], rng.random(is_top[tied].shape), -1.0)
            choice[tied] = np.argmax(noise, axis=1)
        else:
            raise ValueError(f"ties must be one of {', '.join(TIES)}; got {ties!r}")
    return choice


def _first_seen(table: LabelTable) -> npt.NDArray[np.int64]:
    n_items, n_labels = len(table.items), len(table.labels)
    flat = table.item_code.astype(np.int64) * n_labels + table.label_code
    first = np.full(n_items * n_labels, np.iinfo(np.int64).max, dtype=np.int64)
    keys, index = np.unique(flat, return_index=True)
    first[keys] = index
    return first.reshape(n_items, n_labels)


def _with_writer(table: LabelTable, writer_labels: Mapping[Any, Hashable]) -> LabelTable:
    """The table with each writer's label as the first vote on their item."""
    w_items = list(writer_labels)
    items = np.concatenate(
        [np.asarray(w_items, dtype=object), np.asarray(table.items, dtype=object)[table.item_code]]
    )
    annotators = np.concatenate(
        [
            np.full(len(w_items), WRITER, dtype=object),
            np.asarray(table.annotators, dtype=object)[table.annotator_code],
        ]
    )
    labels = np.concatenate(
        [
            np.asarray([writer_labels[i] for i in w_items], dtype=object),
            np.asarray(table.labels, dtype=object)[table.label_code],
        ]
    )
    return LabelTable.from_columns(items, annotators, labels, allow_duplicates=True)


def majority_vote(
    data: LabelTable | Iterable[Triple],
    *,
    writer_labels: Mapping[Any, Hashable] | None = None,
    ties: Ties = "none",
    require: Require = "plurality",
    discard_labels: Iterable[Hashable] = (),
    seed: int | None = None,
) -> MajorityVote:
    """The final label of each item by vote.

    ``require="plurality"``: the most-voted label wins; several labels with the
    most votes are a tie, broken per ``ties``: ``"none"`` (the item gets no
    label), ``"first"`` (the tied label voted for first, in input order; the
    writer's vote comes first), ``"random"`` (seeded by ``seed``).
    ``require="absolute"``: the winner also needs more than half of the votes.
    ``writer_labels`` (item → label) adds the writer's label as one vote.
    An item whose winner is in ``discard_labels`` keeps its ``majority`` entry
    but is listed in ``discarded``, not in ``labels``.
    """
    table = as_table(data)
    if writer_labels:
        table = _with_writer(table, writer_labels)
    counts = table.value_counts
    rng = np.random.default_rng(seed) if ties == "random" else None
    first = _first_seen(table) if ties == "first" else None
    choice = _decide(counts, ties=ties, rng=rng, first_seen=first)
    total = counts.sum(axis=1)
    winner_votes = np.where(choice >= 0, counts[np.arange(len(choice)), choice], 0)
    reason = np.full(len(choice), "", dtype=object)
    reason[choice < 0] = TIE
    if require == "absolute":
        reason[(choice >= 0) & (winner_votes * 2 <= total)] = NO_MAJORITY
    elif require != "plurality":
        raise ValueError(f'require must be "plurality" or "absolute"; got {require!r}')
    discard = {table.labels.index(label) for label in discard_labels if label in table.labels}
    majority_mask = reason == ""
    is_discard = majority_mask & np.isin(choice, list(discard))
    reason[is_discard] = DISCARD_LABEL
    items, labels = table.items, table.labels
    return MajorityVote(
        labels={items[i]: labels[choice[i]] for i in np.flatnonzero(reason == "")},
        discarded={items[i]: str(reason[i]) for i in np.flatnonzero(reason != "")},
        majority={items[i]: labels[choice[i]] for i in np.flatnonzero(majority_mask)},
    )


@contextmanager
def _quiet_crowdkit() -> Iterator[None]:
    # crowd-kit 1.4.2 passes inplace= and copy= keywords that pandas 3 deprecates;
    # the warnings are about crowd-kit's code, not ours.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The (inplace|copy) keyword", module="crowdkit")
        yield


@dataclass(frozen=True)
class ModelAggregation:
    method: str
    labels: dict[Hashable, Hashable]  # item → most probable label
    reliability: dict[Hashable, float]  # annotator → 0..1 (see each function)


def _crowdkit_frame(table: LabelTable) -> pd.DataFrame:
    # pandas (with crowd-kit) is imported on first use: ~100 MB no page needs at start.
    import pandas as pd

    return pd.DataFrame(
        {"task": table.item_code, "worker": table.annotator_code, "label": table.label_code}
    )


def dawid_skene(
    data: LabelTable | Iterable[Triple], *, n_iter: int = 100, tol: float = 1e-5
) -> ModelAggregation:
    """Dawid-Skene (crowd-kit ``DawidSkene``): labels and each annotator's expected accuracy.

    Reliability of annotator w = Σ_t prior(t) · P(w says t | true label t), from
    the fitted confusion matrices.
    """
    from crowdkit.aggregation import DawidSkene

    table = as_table(data)
    with _quiet_crowdkit():
        model = DawidSkene(n_iter=n_iter, tol=tol).fit(_crowdkit_frame(table))
    errors = model.errors_
    priors = model.priors_
    assert errors is not None
    assert priors is not None
    reliability: dict[Hashable, float] = {}
    for w in errors.index.get_level_values(0).unique():
        block = errors.loc[w]
        reliability[table.annotators[int(w)]] = float(
            sum(priors[t] * block.at[t, t] for t in priors.index if t in block.index)
        )
    assert model.labels_ is not None
    return ModelAggregation(
        method="dawid_skene",
        labels={
            table.items[int(cast(int, t))]: table.labels[int(v)] for t, v in model.labels_.items()
        },
        reliability=reliability,
    )


def mace(
    data: LabelTable | Iterable[Triple], *, n_restarts: int = 10, n_iter: int = 50, seed: int = 0
) -> ModelAggregation:
    """MACE (Hovy et al. 2013; crowd-kit ``MACE``): labels and each annotator's competence.

    Competence is the posterior probability that the annotator is not spamming,
    i.e. gives the true label (crowd-kit's ``spamming_[:, 1]``, normalised per
    annotator: its variational step leaves the rows unnormalised).
    """
    from crowdkit.aggregation import MACE

    table = as_table(data)
    frame = _crowdkit_frame(table)
    with _quiet_crowdkit():
        model = MACE(n_restarts=n_restarts, n_iter=n_iter, random_state=seed).fit(frame)
    # crowd-kit orders workers by first appearance in the frame.
    import pandas as pd

    _, worker_order = pd.factorize(frame["worker"])
    spamming = np.asarray(model.spamming_, dtype=np.float64)
    competence = spamming[:, 1] / spamming.sum(axis=1)
    assert model.labels_ is not None
    return ModelAggregation(
        method="mace",
        labels={
            table.items[int(cast(int, t))]: table.labels[int(v)] for t, v in model.labels_.items()
        },
        reliability={
            table.annotators[int(w)]: float(c)
            for w, c in zip(worker_order, competence, strict=True)
        },
    )


@dataclass(frozen=True)
class HumanPerformance:
    accuracy: float | None  # mean over repetitions; None when no item could be scored
    std: float | None  # standard deviation over repetitions
    items: float  # mean number of items scored per repetition
    repetitions: int


def human_performance(
    data: LabelTable | Iterable[Triple],
    *,
    holdout: int = 1,
    repetitions: int = 10,
    seed: int = 0,
) -> HumanPerformance:
    """Accuracy of held-out annotators against the majority of the others.

    Items with at least ``holdout + 1`` labels take part. In each repetition,
    ``holdout`` labels per item are drawn at random (seeded): their plurality
    (ties broken at random) is the "human" answer and the plurality of the
    remaining labels the gold; an item whose gold is a tie is not scored in that
    repetition. Accuracy is averaged over the repetitions.
    """
    if holdout < 1 or repetitions < 1:
        raise ValueError("holdout and repetitions must be at least 1")
    table = as_table(data)
    n_items, n_labels = len(table.items), len(table.labels)
    per_item = np.bincount(table.item_code, minlength=n_items)
    eligible = per_item[table.item_code] >= holdout + 1
    item_code, label_code = table.item_code[eligible], table.label_code[eligible]
    rng = np.random.default_rng(seed)
    scores: list[float] = []
    scored: list[int] = []
    for _ in range(repetitions):
        order = np.lexsort((rng.random(len(item_code)), item_code))
        items_sorted = item_code[order]
        starts = np.searchsorted(items_sorted, items_sorted, side="left")
        rank = np.arange(len(items_sorted)) - starts
        held = np.zeros(len(item_code), dtype=bool)
        held[order[rank < holdout]] = True
        flat = item_code.astype(np.int64) * n_labels + label_code
        size = n_items * n_labels
        held_counts = np.bincount(flat[held], minlength=size).reshape(n_items, n_labels)
        rest_counts = np.bincount(flat[~held], minlength=size).reshape(n_items, n_labels)
        guess = _decide(held_counts, ties="random", rng=rng, first_seen=None)
        gold = _decide(rest_counts, ties="none", rng=None, first_seen=None)
        valid = (guess >= 0) & (gold >= 0)
        if valid.any():
            scores.append(float(np.mean(guess[valid] == gold[valid])))
            scored.append(int(valid.sum()))
    if not scores:
        return HumanPerformance(accuracy=None, std=None, items=0.0, repetitions=repetitions)
    return HumanPerformance(
        accuracy=float(np.mean(scores)),
        std=float(np.std(scores)),
        items=float(np.mean(scored)),
        repetitions=repetitions,
    )
