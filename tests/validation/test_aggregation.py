"""Majority vote, Dawid-Skene / MACE and the human performance estimate."""

from __future__ import annotations

import numpy as np
import pytest

from validation.aggregation import (
    DISCARD_LABEL,
    NO_MAJORITY,
    TIE,
    dawid_skene,
    human_performance,
    mace,
    majority_vote,
)

VOTES = [
    ("q1", "v1", "A"), ("q1", "v2", "A"), ("q1", "v3", "B"),  # clear majority
    ("q2", "v1", "B"), ("q2", "v2", "C"),  # tie, C voted second
    ("q3", "v1", "invalid"), ("q3", "v2", "invalid"), ("q3", "v3", "A"),
]  # fmt: skip


def test_majority_vote_ties_none():
    result = majority_vote(VOTES)
    assert result.labels == {"q1": "A", "q3": "invalid"}
    assert result.discarded == {"q2": TIE}


def test_majority_vote_ties_first_takes_the_earliest_vote():
    assert majority_vote(VOTES, ties="first").labels["q2"] == "B"
    reordered = [VOTES[4], VOTES[3], *VOTES[:3], *VOTES[5:]]
    assert majority_vote(reordered, ties="first").labels["q2"] == "C"


def test_majority_vote_ties_random_is_seeded():
    votes = [(f"q{i}", a, a) for i in range(200) for a in ("x", "y")]  # every item a tie
    first = majority_vote(votes, ties="random", seed=7).labels
    assert first == majority_vote(votes, ties="random", seed=7).labels
    assert first != majority_vote(votes, ties="random", seed=8).labels
    assert 60 < sum(v == "x" for v in first.values()) < 140


def test_discard_label_and_absolute_majority():
    result = majority_vote(VOTES, discard_labels=["invalid"])
    assert result.discarded == {"q2": TIE, "q3": DISCARD_LABEL}
    assert result.majority["q3"] == "invalid"
    plurality = [
        ("q", "a", "x"),
        ("q", "b", "x"),
        ("q", "c", "y"),
        ("q", "d", "z"),
        ("q", "e", "w"),
    ]
    assert majority_vote(plurality).labels == {"q": "x"}
    assert majority_vote(plurality, require="absolute").discarded == {"q": NO_MAJORITY}


def test_writer_label_counts_as_one_vote_nangia_style():
    # 2-way validation: validators split A / B; the writer's A decides (gold = majority
    # over writer + validators). q2: writer B, validators C and invalid -> no majority.
    validators = [
        ("q1", "v1", "A"), ("q1", "v2", "B"),
        ("q2", "v1", "C"), ("q2", "v2", "invalid"),
        ("q3", "v1", "invalid"), ("q3", "v2", "invalid"),
    ]  # fmt: skip
    writers = {"q1": "A", "q2": "B", "q3": "D"}
    result = majority_vote(
        validators, writer_labels=writers, require="absolute", discard_labels=["invalid"]
    )
    assert result.labels == {"q1": "A"}
    assert result.discarded == {"q2": TIE, "q3": DISCARD_LABEL}
    # Without the writer, q1 is a tie.
    assert majority_vote(validators).discarded["q1"] == TIE
    # With ties="first", the writer's vote wins its ties.
    assert majority_vote(validators, writer_labels=writers, ties="first").labels["q2"] == "B"


def _simulated_crowd(seed=0, items=300):
    """Three good annotators (90 % right) and two spammers (uniform at random)."""
    rng = np.random.default_rng(seed)
    truth = {f"i{k}": int(rng.integers(3)) for k in range(items)}
    triples = []
    for item, true in truth.items():
        for worker, accuracy in (("g1", 0.9), ("g2", 0.9), ("g3", 0.9), ("s1", 0.0), ("s2", 0.0)):
            label = true if rng.random() < accuracy else int(rng.integers(3))
            triples.append((item, worker, label))
    return truth, triples


def test_dawid_skene_recovers_labels_and_ranks_spammers_last():
    truth, triples = _simulated_crowd()
    result = dawid_skene(triples)
    accuracy = np.mean([result.labels[i] == t for i, t in truth.items()])
    assert accuracy > 0.95
    assert min(result.reliability[w] for w in ("g1", "g2", "g3")) > 0.85
    assert max(result.reliability[w] for w in ("s1", "s2")) < 0.5


def test_mace_recovers_labels_and_competence():
    truth, triples = _simulated_crowd(seed=1)
    result = mace(triples, n_restarts=2, n_iter=30, seed=0)
    accuracy = np.mean([result.labels[i] == t for i, t in truth.items()])
    assert accuracy > 0.95
    assert min(result.reliability[w] for w in ("g1", "g2", "g3")) > 0.7
    assert max(result.reliability[w] for w in ("s1", "s2")) < 0.3


def test_human_performance_hand_computed():
    # Every item: three "x" and one "y". Holding out one label: with p = 3/4 an "x"
    # (gold from x, x, y is x: right); with p = 1/4 the "y" (gold x: wrong).
    triples = [(i, a, "y" if a == "d" else "x") for i in range(400) for a in "abcd"]
    result = human_performance(triples, holdout=1, repetitions=20, seed=1)
    assert result.accuracy == pytest.approx(0.75, abs=0.02)
    assert result.items == 400
    assert result.repetitions == 20
    assert human_performance(triples, repetitions=20, seed=1) == result  # seeded


def test_human_performance_skips_small_items_and_gold_ties():
    # Items with 2 labels (x, y): gold is the other label -> always wrong.
    pairs = [(i, a, a) for i in range(10) for a in ("x", "y")]
    assert human_performance(pairs, repetitions=3).accuracy == 0.0
    # holdout=2 needs 3 labels: nothing to score.
    result = human_performance(pairs, holdout=2, repetitions=3)
    assert result.accuracy is None
    assert result.items == 0
    # Four labels x, x, y, y: holding out one always leaves a majority for the other.
    four = [(i, a, "x" if a in "ab" else "y") for i in range(200) for a in "abcd"]
    assert human_performance(four, holdout=1, repetitions=5).accuracy == 0.0
