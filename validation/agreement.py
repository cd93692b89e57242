"""Inter-annotator agreement on categorical labels: pure functions over plain data.

Every function takes a ``LabelTable`` or an iterable of ``(item, annotator,
label)`` triples (see ``validation.labels``); a missing label is an absent
triple. Coefficients that are undefined for the data (no item with two labels,
no variation at all) are ``None``, never NaN, so results serialise to JSON.

- ``krippendorff_alpha`` — the ``krippendorff`` package, fed the items x values
  count matrix built from the triples (its ``value_counts`` input, equivalent to
  the coders x units reliability matrix). Values of items with a single label
  are unpairable and drop out, as in Krippendorff (2011).
- ``percent_agreement`` — mean over items with ≥ 2 labels of the share of
  agreeing annotator pairs.
- ``fleiss_kappa`` — Fleiss (1971): every item rated by the same number of
  raters. Otherwise it raises, or with ``unequal="modal"`` keeps only the items
  with the most common number of raters (and says how many it kept).
- ``pairwise_cohen_kappa`` — Cohen's kappa per annotator pair over the items
  both labelled, for pairs with at least ``min_shared`` such items.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Literal

import krippendorff
import numpy as np
import numpy.typing as npt

from validation.labels import LabelTable, Triple, as_table

Level = Literal["nominal", "ordinal", "interval"]
LEVELS: tuple[Level, ...] = ("nominal", "ordinal", "interval")

# The package's coincidence step holds an items x values x values array. Above
# this many cells (≈ 400 MB of float64) the same sums are taken by a matrix
# product instead (``_alpha_from_counts``); both paths are tested to agree.
PACKAGE_CELL_BUDGET = 50_000_000


def krippendorff_alpha(
    data: LabelTable | Iterable[Triple], *, level: Level = "nominal"
) -> float | None:
    """Krippendorff's alpha of the labels at ``level``; None when it is undefined.

    Ordinal uses the order of ``table.labels`` (numbers sorted, or the table's
    ``label_order``); interval needs numeric labels. Undefined: fewer than two
    distinct pairable values, or no item with two labels.
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}; got {level!r}")
    table = as_table(data)
    domain = table.numeric_labels() if level == "interval" else None
    counts = table.value_counts
    pairable = counts.sum(axis=1) >= 2
    counts = counts[pairable]
    used = counts.sum(axis=0) > 0
    if used.sum() < 2:
        return None
    counts = counts[:, used]
    values = domain[used] if domain is not None else np.arange(counts.shape[1], dtype=np.float64)
    if counts.shape[0] * counts.shape[1] ** 2 > PACKAGE_CELL_BUDGET:
        return _alpha_from_counts(counts, values, level)
    return float(
        krippendorff.alpha(value_counts=counts, value_domain=values, level_of_measurement=level)
    )


def _alpha_from_counts(
    counts: npt.NDArray[np.int64], values: npt.NDArray[np.float64], level: Level
) -> float:
    """Alpha from the items x values counts of pairable items (Krippendorff 2011, §C-E).

    The coincidence matrix ``o = Σ_u (c_u c_uᵀ - diag c_u) / (m_u - 1)`` as one
    matrix product, without the package's items x values x values array.
    """
    c = counts.astype(np.float64)
    weighted = c / (c.sum(axis=1) - 1)[:, np.newaxis]
    o = weighted.T @ c - np.diag(weighted.sum(axis=0))
    n_v = o.sum(axis=0)
    n = n_v.sum()
    e = (np.outer(n_v, n_v) - np.diag(n_v)) / (n - 1)
    d = _distances(values, n_v, level)
    return float(1 - (o * d).sum() / (e * d).sum())


def _distances(
    values: npt.NDArray[np.float64], n_v: npt.NDArray[np.float64], level: Level
) -> npt.NDArray[np.float64]:
    if level == "nominal":
        return 1.0 - np.eye(len(values))
    if level == "interval":
        return np.subtract.outer(values, values) ** 2
    # Ordinal: (Σ_{g=c..k} n_g - (n_c + n_k) / 2)² for ranks c ≤ k.
    cumulative = np.concatenate(([0.0], np.cumsum(n_v)))
    lo = np.minimum.outer(np.arange(len(n_v)), np.arange(len(n_v)))
    hi = np.maximum.outer(np.arange(len(n_v)), np.arange(len(n_v)))
    between = cumulative[hi + 1] - cumulative[lo]
    result: npt.NDArray[np.float64] = (between - (n_v[lo] + n_v[hi]) / 2) ** 2
    return result


def percent_agreement(data: LabelTable | Iterable[Triple]) -> float | None:
    """Mean over items with ≥ 2 labels of agreeing pairs / all pairs; None without such items."""
    counts = as_table(data).value_counts
    m = counts.sum(axis=1)
    keep = m >= 2
    if not keep.any():
        return None
    counts, m = counts[keep], m[keep]
    agreeing = (counts * (counts - 1)).sum(axis=1)
    return float(np.mean(agreeing / (m * (m - 1))))


@dataclass(frozen=True)
class FleissKappa:
    kappa: float | None
    items: int  # items used
    raters: int  # raters per item
    items_skipped: int  # items left out (fewer than 2 labels, or another rater count)


def fleiss_kappa(
    data: LabelTable | Iterable[Triple], *, unequal: Literal["raise", "modal"] = "raise"
) -> FleissKappa:
    """Fleiss' kappa over items with the same number of raters (≥ 2).

    Items with fewer than two labels carry no agreement and are skipped. When
    the others differ in their number of raters, ``unequal="raise"`` raises
    ``ValueError`` and ``"modal"`` keeps only the items with the most common
    number (ties: the larger number). Raters need not be the same people.
    """
    counts = as_table(data).value_counts
    m = counts.sum(axis=1)
    rated = m >= 2
    sizes, size_counts = np.unique(m[rated], return_counts=True)
    if len(sizes) == 0:
        return FleissKappa(kappa=None, items=0, raters=0, items_skipped=len(m))
    if len(sizes) > 1 and unequal == "raise":
        raise ValueError(
            "Fleiss' kappa needs the same number of raters per item; found "
            + ", ".join(f"{c} items with {s}" for s, c in zip(sizes, size_counts, strict=True))
            + ' (use unequal="modal" to keep the most common number)'
        )
    n = int(sizes[size_counts == size_counts.max()].max())
    keep = m == n
    x = counts[keep].astype(np.float64)
    n_items = x.shape[0]
    p_j = x.sum(axis=0) / (n_items * n)
    p_i = ((x * x).sum(axis=1) - n) / (n * (n - 1))
    p_bar, p_e = p_i.mean(), float((p_j * p_j).sum())
    kappa = None if np.isclose(p_e, 1.0) else float((p_bar - p_e) / (1 - p_e))
    return FleissKappa(kappa=kappa, items=n_items, raters=n, items_skipped=len(m) - n_items)


@dataclass(frozen=True)
class PairKappa:
    annotator_a: Hashable
    annotator_b: Hashable
    items: int  # items both labelled
    kappa: float | None  # None when chance agreement is 1 (both always gave one same label)


@dataclass(frozen=True)
class PairwiseKappa:
    pairs: list[PairKappa]
    mean_kappa: float | None  # unweighted mean over pairs with a defined kappa


def pairwise_cohen_kappa(
    data: LabelTable | Iterable[Triple], *, min_shared: int = 10
) -> PairwiseKappa:
    """Cohen's kappa for each annotator pair with ≥ ``min_shared`` items in common.

    Unweighted kappa on the shared items; chance agreement from each annotator's
    own label distribution on those items (equal to ``sklearn``'s
    ``cohen_kappa_score`` on the same pairs of labels). Pairs are found by a
    self-join on the item, so the cost grows with Σ m_i² rather than annotators².
    """
    table = as_table(data)
    import pandas as pd  # on first use (see validation.labels)

    frame = pd.DataFrame(
        {"item": table.item_code, "ann": table.annotator_code, "label": table.label_code}
    )
    pairs = frame.merge(frame, on="item", suffixes=("_a", "_b"))
    pairs = pairs[pairs["ann_a"] < pairs["ann_b"]]
    key = ["ann_a", "ann_b"]
    sizes = pairs.groupby(key).size()
    sizes = sizes[sizes >= max(min_shared, 1)]
    if sizes.empty:
        return PairwiseKappa(pairs=[], mean_kappa=None)
    pairs = pairs.set_index(key).loc[sizes.index].reset_index()
    agree = (pairs["label_a"] == pairs["label_b"]).groupby([pairs["ann_a"], pairs["ann_b"]]).sum()
    marg_a = pairs.groupby([*key, "label_a"]).size().rename_axis([*key, "label"])
    marg_b = pairs.groupby([*key, "label_b"]).size().rename_axis([*key, "label"])
    joint = (marg_a * marg_b).dropna().groupby(level=key).sum()
    joint = joint.reindex(sizes.index, fill_value=0)
    n = sizes.astype(np.float64)
    p_o = agree.reindex(sizes.index) / n
    p_e = joint / (n * n)
    result = []
    for (a, b), items, po, pe in zip(sizes.index, sizes, p_o, p_e, strict=True):
        kappa = None if np.isclose(pe, 1.0) else float((po - pe) / (1 - pe))
        result.append(
            PairKappa(
                annotator_a=table.annotators[a],
                annotator_b=table.annotators[b],
                items=int(items),
                kappa=kappa,
            )
        )
    defined = [p.kappa for p in result if p.kappa is not None]
    return PairwiseKappa(pairs=result, mean_kappa=float(np.mean(defined)) if defined else None)
