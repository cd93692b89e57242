"""Categorical annotations as arrays: the common input of agreement and aggregation.

An annotation is one ``(item, annotator, label)`` triple. ``LabelTable`` encodes
items, annotators and labels as integer codes (``pandas.factorize``, in C) so
that the metrics work on numpy arrays: building the table from a million
triples takes a fraction of a second. A missing label is simply an absent
triple; ``None`` and NaN labels are dropped as missing too.

Label order: labels that are all numbers are sorted numerically (what the
ordinal and interval levels need); otherwise they keep the order of first
appearance unless ``label_order`` says otherwise.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from numbers import Real
from typing import Any

import numpy as np
import numpy.typing as npt

Triple = tuple[Hashable, Hashable, Hashable]


class DuplicateAnnotationError(ValueError):
    """One annotator labelled the same item twice: a reliability matrix has one cell."""


def _is_number(label: Any) -> bool:
    return isinstance(label, Real) and not isinstance(label, bool)


@dataclass(frozen=True, eq=False)
class LabelTable:
    """Annotations encoded as codes; ``items[item_code[k]]`` is the k-th annotation's item.

    ``labels`` is the label domain in its order (see the module docstring); the
    code of a label is its position there.
    """

    items: list[Hashable]
    annotators: list[Hashable]
    labels: list[Hashable]
    item_code: npt.NDArray[np.intp]
    annotator_code: npt.NDArray[np.intp]
    label_code: npt.NDArray[np.intp]

    @classmethod
    def from_triples(
        cls,
        triples: Iterable[Triple],
        *,
        label_order: Sequence[Hashable] | None = None,
        allow_duplicates: bool = False,
    ) -> LabelTable:
        """Build from ``(item, annotator, label)`` triples (any iterable of 3-sequences)."""
        rows = list(triples)
        if not rows:
            return cls.from_columns([], [], [], label_order=label_order)
        items, annotators, labels = zip(*rows, strict=True)
        return cls.from_columns(
            items,
            annotators,
            labels,
            label_order=label_order,
            allow_duplicates=allow_duplicates,
        )

    @classmethod
    def from_columns(
        cls,
        items: Sequence[Hashable] | npt.ArrayLike,
        annotators: Sequence[Hashable] | npt.ArrayLike,
        labels: Sequence[Hashable] | npt.ArrayLike,
        *,
        label_order: Sequence[Hashable] | None = None,
        allow_duplicates: bool = False,
    ) -> LabelTable:
        """Build from three equally long columns (lists or numpy arrays).

        Raises ``DuplicateAnnotationError`` when an annotator labelled an item
        twice, unless ``allow_duplicates`` (majority vote can count both; the
        agreement coefficients cannot).
        """
        import pandas as pd  # on first use: web processes that never aggregate skip it

        item_col = pd.Series(np.asarray(items, dtype=object))
        annotator_col = pd.Series(np.asarray(annotators, dtype=object))
        label_col = pd.Series(np.asarray(labels, dtype=object))
        if not len(item_col) == len(annotator_col) == len(label_col):
            raise ValueError("items, annotators and labels must have the same length")
        keep = label_col.notna().to_numpy()
        if not keep.all():
            item_col, annotator_col, label_col = (
                item_col[keep],
                annotator_col[keep],
                label_col[keep],
            )
        item_code, item_index = pd.factorize(item_col)
        annotator_code, annotator_index = pd.factorize(annotator_col)
        raw_code, raw_labels = pd.factorize(label_col)
        raw = list(raw_labels)
        if label_order is not None:
            order = list(label_order)
            unknown = [label for label in raw if label not in set(order)]
            if unknown:
                raise ValueError(f"labels not in label_order: {unknown[:5]!r}")
        elif raw and all(_is_number(label) for label in raw):
            order = sorted(raw)
        else:
            order = raw
        position = {label: i for i, label in enumerate(order)}
        remap = np.array([position[label] for label in raw], dtype=np.intp)
        label_code = remap[raw_code] if len(raw_code) else np.zeros(0, dtype=np.intp)
        table = cls(
            items=list(item_index),
            annotators=list(annotator_index),
            labels=order,
            item_code=np.asarray(item_code, dtype=np.intp),
            annotator_code=np.asarray(annotator_code, dtype=np.intp),
            label_code=np.asarray(label_code, dtype=np.intp),
        )
        if not allow_duplicates:
            table.check_unique()
        return table

    def __len__(self) -> int:
        return len(self.item_code)

    def check_unique(self) -> None:
        """Raise ``DuplicateAnnotationError`` naming one (item, annotator) given twice."""
        key = self.item_code.astype(np.int64) * max(len(self.annotators), 1) + self.annotator_code
        _, first, counts = np.unique(key, return_index=True, return_counts=True)
        if (counts > 1).any():
            k = first[np.argmax(counts > 1)]
            raise DuplicateAnnotationError(
                f"annotator {self.annotators[self.annotator_code[k]]!r} labelled item "
                f"{self.items[self.item_code[k]]!r} more than once"
            )

    @cached_property
    def value_counts(self) -> npt.NDArray[np.int64]:
        """``counts[i, v]``: how many annotators gave label ``v`` to item ``i`` (items x labels)."""
        n_items, n_labels = len(self.items), len(self.labels)
        flat = self.item_code.astype(np.int64) * n_labels + self.label_code
        return np.bincount(flat, minlength=n_items * n_labels).reshape(n_items, n_labels)

    def reliability_matrix(self) -> npt.NDArray[np.float64]:
        """Annotators x items of label codes, NaN where missing (the package's own layout)."""
        matrix = np.full((len(self.annotators), len(self.items)), np.nan)
        matrix[self.annotator_code, self.item_code] = self.label_code
        return matrix

    def numeric_labels(self) -> npt.NDArray[np.float64]:
        """The label domain as numbers; ``ValueError`` when a label is not a number."""
        bad = [label for label in self.labels if not _is_number(label)]
        if bad:
            raise ValueError(f"labels must be numbers for this level; got {bad[:5]!r}")
        return np.asarray(self.labels, dtype=np.float64)


def as_table(data: LabelTable | Iterable[Triple]) -> LabelTable:
    """``data`` itself when it is a table, else a table of the triples."""
    return data if isinstance(data, LabelTable) else LabelTable.from_triples(data)
