"""Agreement coefficients against published numbers and the reference packages."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from validation.agreement import (
    _alpha_from_counts,
    fleiss_kappa,
    krippendorff_alpha,
    pairwise_cohen_kappa,
    percent_agreement,
)
from validation.labels import DuplicateAnnotationError, LabelTable

N = None
# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C:
# 4 observers (A-D) x 12 units, values 1-5, missing values.
KRIPPENDORFF_2011 = {
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, N, N, N],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, N, 3],
    "C": [N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, N],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, N],
}


def _triples(matrix: dict[str, list[int | None]]) -> list[tuple[int, str, int]]:
    return [
        (unit, coder, value)
        for coder, row in matrix.items()
        for unit, value in enumerate(row, start=1)
        if value is not None
    ]


@pytest.mark.parametrize(
    ("level", "expected"),
    # The paper's results for this data: nominal .743, ordinal .815, interval .849.
    [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)],
)
def test_alpha_matches_krippendorff_2011(level, expected):
    alpha = krippendorff_alpha(_triples(KRIPPENDORFF_2011), level=level)
    assert alpha == pytest.approx(expected, abs=5e-4)


def test_alpha_nominal_exact_value_of_the_worked_example():
    # Paper: 1 - (n - 1) * sum o_ck / sum n_c n_k with n = 40 pairable values -> 0.743421...
    alpha = krippendorff_alpha(_triples(KRIPPENDORFF_2011), level="nominal")
    assert alpha == pytest.approx(0.743421052631579, abs=1e-12)


def test_alpha_is_the_same_with_string_labels_and_any_input_order():
    triples = [(u, c, f"v{v}") for u, c, v in _triples(KRIPPENDORFF_2011)]
    rng = np.random.default_rng(3)
    shuffled = [triples[i] for i in rng.permutation(len(triples))]
    assert krippendorff_alpha(shuffled) == pytest.approx(0.743421052631579, abs=1e-12)


def _random_matrix(rng, coders, units, values, missing):
    data = rng.integers(1, values + 1, size=(coders, units)).astype(float)
    data[rng.random(data.shape) < missing] = np.nan
    return data


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_alpha_equals_the_package_on_random_data_with_missing_values(level, seed):
    rng = np.random.default_rng(seed)
    # Skewed labels so that alpha is far from zero on some draws.
    data = _random_matrix(rng, coders=int(rng.integers(2, 9)), units=200, values=6, missing=0.3)
    data[:, :50] = np.where(np.isnan(data[:, :50]), np.nan, 2.0)
    triples = [
        (unit, f"c{coder}", int(data[coder, unit]))
        for coder, unit in zip(*np.nonzero(~np.isnan(data)), strict=True)
    ]
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    assert krippendorff_alpha(triples, level=level) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_matrix_product_path_equals_the_package(level):
    rng = np.random.default_rng(11)
    data = _random_matrix(rng, coders=5, units=300, values=7, missing=0.25)
    table = LabelTable.from_columns(
        *zip(
            *[(u, c, float(data[c, u])) for c, u in zip(*np.nonzero(~np.isnan(data)), strict=True)],
            strict=True,
        )
    )
    counts = table.value_counts[table.value_counts.sum(axis=1) >= 2]
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    own = _alpha_from_counts(counts, table.numeric_labels(), level)
    assert own == pytest.approx(expected, abs=1e-9)


def test_reliability_matrix_round_trips_to_the_package():
    table = LabelTable.from_triples(_triples(KRIPPENDORFF_2011))
    matrix = table.reliability_matrix()
    assert matrix.shape == (4, 12)
    assert krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal") == (
        pytest.approx(0.743421052631579)
    )


def test_alpha_is_none_when_undefined():
    assert krippendorff_alpha([("i1", "a", "x"), ("i2", "a", "y")]) is None  # nothing pairable
    assert krippendorff_alpha([("i1", "a", "x"), ("i1", "b", "x")]) is None  # no variation


def test_alpha_perfect_and_systematic_disagreement():
    perfect = [(i, a, i % 3) for i in range(9) for a in "ab"]
    assert krippendorff_alpha(perfect) == pytest.approx(1.0)
    # Two coders who always disagree on two values: D_o > D_e, alpha < 0.
    opposed = [(i, "a", i % 2) for i in range(10)] + [(i, "b", 1 - i % 2) for i in range(10)]
    alpha = krippendorff_alpha(opposed)
    assert alpha is not None
    assert alpha < 0


def test_interval_needs_numbers_and_ordinal_follows_label_order():
    with pytest.raises(ValueError, match="numbers"):
        krippendorff_alpha([("i", "a", "low"), ("i", "b", "high")], level="interval")
    names = {1: "very low", 2: "low", 3: "mid", 4: "high", 5: "very high"}
    triples = [(u, c, names[v]) for u, c, v in _triples(KRIPPENDORFF_2011)]
    table = LabelTable.from_triples(triples, label_order=list(names.values()))
    assert krippendorff_alpha(table, level="ordinal") == pytest.approx(0.8153875, abs=1e-6)


def test_missing_labels_are_dropped_and_duplicates_refused():
    table = LabelTable.from_triples([("i", "a", "x"), ("i", "b", None), ("i", "c", float("nan"))])
    assert len(table) == 1
    assert table.annotators == ["a"]
    with pytest.raises(DuplicateAnnotationError, match="'a' labelled item 'i'"):
        LabelTable.from_triples([("i", "a", "x"), ("i", "a", "y")])


def test_percent_agreement_hand_computed():
    triples = [
        ("i1", "a", "x"), ("i1", "b", "x"), ("i1", "c", "y"),  # 1 of 3 pairs agree
        ("i2", "a", "x"), ("i2", "b", "x"),  # 1 of 1
        ("i3", "a", "z"),  # a single label: left out
    ]  # fmt: skip
    assert percent_agreement(triples) == pytest.approx((1 / 3 + 1) / 2)
    assert percent_agreement([("i", "a", "x")]) is None


# Fleiss (1971) as reproduced on Wikipedia ("Fleiss' kappa", worked example):
# 10 subjects, 14 raters each, 5 categories; P-bar = 0.378, P_e = 0.213, kappa = 0.210.
FLEISS_TABLE = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def _fleiss_triples(rows):
    triples = []
    for subject, row in enumerate(rows):
        rater = 0
        for category, count in enumerate(row, start=1):
            for _ in range(count):
                triples.append((subject, f"r{rater}", category))
                rater += 1
    return triples


def test_fleiss_kappa_wikipedia_example():
    result = fleiss_kappa(_fleiss_triples(FLEISS_TABLE))
    assert result.kappa == pytest.approx(0.210, abs=5e-4)
    assert (result.items, result.raters, result.items_skipped) == (10, 14, 0)


def test_fleiss_kappa_unequal_raters():
    triples = [*_fleiss_triples(FLEISS_TABLE), (99, "r0", 1), (99, "r1", 2), (98, "r0", 3)]
    with pytest.raises(ValueError, match="same number of raters"):
        fleiss_kappa(triples)
    result = fleiss_kappa(triples, unequal="modal")
    assert result.kappa == pytest.approx(0.210, abs=5e-4)
    assert (result.items, result.items_skipped) == (10, 2)


def test_cohen_kappa_hand_computed_2x2():
    # 50 items: both yes 20, A yes B no 5, A no B yes 10, both no 15.
    # p_o = 35/50 = 0.7; p_e = 0.5*0.6 + 0.5*0.4 = 0.5; kappa = 0.4.
    cells = [("yes", "yes")] * 20 + [("yes", "no")] * 5 + [("no", "yes")] * 10 + [("no", "no")] * 15
    triples = [t for i, (a, b) in enumerate(cells) for t in ((i, "A", a), (i, "B", b))]
    result = pairwise_cohen_kappa(triples, min_shared=10)
    assert len(result.pairs) == 1
    pair = result.pairs[0]
    assert (pair.annotator_a, pair.annotator_b, pair.items) == ("A", "B", 50)
    assert pair.kappa == pytest.approx(0.4)
    assert result.mean_kappa == pytest.approx(0.4)


def test_pairwise_cohen_kappa_equals_sklearn_and_respects_min_shared():
    rng = np.random.default_rng(5)
    data = _random_matrix(rng, coders=5, units=60, values=3, missing=0.4)
    data[4, 10:] = np.nan  # coder 4 shares at most 10 items with anyone
    triples = [
        (int(u), f"c{c}", int(data[c, u]))
        for c, u in zip(*np.nonzero(~np.isnan(data)), strict=True)
    ]
    result = pairwise_cohen_kappa(triples, min_shared=15)
    assert result.pairs
    assert all("c4" not in (p.annotator_a, p.annotator_b) for p in result.pairs)
    for pair in result.pairs:
        a, b = int(str(pair.annotator_a)[1:]), int(str(pair.annotator_b)[1:])
        both = ~np.isnan(data[a]) & ~np.isnan(data[b])
        assert pair.items == both.sum()
        expected = cohen_kappa_score(data[a, both], data[b, both])
        assert pair.kappa == pytest.approx(expected, abs=1e-12)


def test_cohen_kappa_undefined_when_both_always_give_the_same_label():
    triples = [(i, a, "x") for i in range(12) for a in "AB"]
    result = pairwise_cohen_kappa(triples, min_shared=10)
    assert result.pairs[0].kappa is None
    assert result.mean_kappa is None


def test_empty_input():
    table = LabelTable.from_triples([])
    assert krippendorff_alpha(table) is None
    assert percent_agreement(table) is None
    assert fleiss_kappa(table).kappa is None
    assert pairwise_cohen_kappa(table).pairs == []
