"""Sentence overlap, ROUGE and duplicate detection on hand-computed cases."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from campaigns.tasktypes.base import token_set_similarity
from validation.text import (
    best_match_overlaps,
    find_duplicates,
    rouge_agreement,
    rouge_f,
    rouge_su4,
    sentence_overlap,
    sentence_overlap_agreement,
    skip_bigrams_and_unigrams,
)


def test_sentence_overlap_and_no_answer_as_whyqa():
    assert sentence_overlap({1, 2}, {2, 3}) == pytest.approx(1 / 3)
    assert sentence_overlap([4], [4]) == 1.0
    assert sentence_overlap(None, None) == 1.0
    assert sentence_overlap(None, set()) == 1.0  # an empty selection is "no answer"
    assert sentence_overlap(None, {1}) == 0.0
    assert sentence_overlap({1}, set()) == 0.0


def test_total_average_and_best_match():
    answers: dict[str, list[set[int] | None]] = {
        # pairs: {1,2}-{2} = 1/2, {1,2}-NoA = 0, {2}-NoA = 0; best: 1/2, 1/2, 0
        "q1": [{1, 2}, {2}, None],
        # one pair NoA-NoA = 1; best 1, 1
        "q2": [None, None],
        "q3": [{5}],  # no peer: left out
    }
    result = sentence_overlap_agreement(answers)
    assert result.total_average == pytest.approx((0.5 + 0 + 0 + 1) / 4)
    assert result.best_match == pytest.approx((0.5 + 0.5 + 0 + 1 + 1) / 5)
    assert (result.pairs, result.answers) == (4, 5)
    assert best_match_overlaps([{5}]) == []
    assert sentence_overlap_agreement({"q": [{1}]}).total_average is None


def test_skip_bigram_units_respect_the_gap():
    units = skip_bigrams_and_unigrams(["a", "b", "c", "d", "e", "f", "g"])
    assert sum(1 for u in units if len(u) == 1) == 7
    # 21 ordered pairs of 7 tokens minus (a, g), six apart (5 words between).
    assert sum(1 for u in units if len(u) == 2) == 20
    assert ("a", "f") in units
    assert ("a", "g") not in units


def test_rouge_su4_hand_computed():
    # Lin (2004): "police killed the gunman" vs "police kill the gunman". Skip-bigrams
    # 6 each, 3 shared (police-the, police-gunman, the-gunman) -> ROUGE-S 0.5; with the
    # 4 unigrams each (3 shared): 6 / 10 both ways -> ROUGE-SU4 0.6.
    assert rouge_su4("police killed the gunman", "police kill the gunman") == pytest.approx(0.6)
    # Gap boundary: "a f" is 4 words apart in the candidate (kept), "a g" 5 (dropped).
    # Candidate units 7 + 20 = 27; reference "a f": a, f, (a, f), all 3 hit:
    # P = 3/27, R = 1 -> F = 0.2. Reference "a g": 3 units, 2 hit: P = 2/27,
    # R = 2/3 -> F = 2/15.
    assert rouge_su4("a b c d e f g", "a f") == pytest.approx(0.2)
    assert rouge_su4("a b c d e f g", "a g") == pytest.approx(2 / 15)
    assert rouge_su4("", "a b") == 0.0


def test_rouge_f_hand_computed():
    scores = rouge_f("the cat sat on the mat", "the cat lay on the mat")
    # 5 of 6 unigrams shared; bigrams "the cat", "on the", "the mat" of 5 -> 0.6;
    # LCS "the cat on the mat" = 5 of 6.
    assert scores["rouge1"] == pytest.approx(5 / 6)
    assert scores["rouge2"] == pytest.approx(0.6)
    assert scores["rougeL"] == pytest.approx(5 / 6)
    # Units: 6 unigrams + 15 skip-bigrams (all pairs of 6 are within the gap) = 21;
    # shared: 5 unigrams + the pairs not involving sat/lay: C(5, 2) = 10 -> 15 / 21.
    assert scores["rougeSU4"] == pytest.approx(15 / 21)
    assert rouge_f("a b", "a b") == {"rouge1": 1.0, "rouge2": 1.0, "rougeL": 1.0, "rougeSU4": 1.0}


def test_rouge_agreement_against_random_pairing_baseline():
    answers = {
        "q1": ["the war ended the empire", "the empire ended with the war"],
        "q2": ["rain fell on the crops", "crops failed after rain"],
        "q3": ["prices rose quickly", "prices went up fast"],
    }
    result = rouge_agreement(answers, seed=4)
    assert result.pairs == 3
    assert result.baseline_pairs == 3
    assert result.within["rouge1"] > result.baseline["rouge1"]
    assert result.within["rougeSU4"] > result.baseline["rougeSU4"]
    assert rouge_agreement(answers, seed=4) == result
    large = rouge_agreement(answers, baseline_pairs=50, seed=1)
    assert large.baseline_pairs == 50
    single = rouge_agreement({"q": ["a", "b"]})
    assert single.baseline == {}
    assert single.baseline_pairs == 0


def test_find_duplicates_exact_and_near():
    # Content tokens ("did", "the", "so" are stop words):
    texts = [
        "Why did Rome fall?",  # 0: {why, rome, fall}
        "why did  ROME fall",  # 1: exact duplicate of 0 after normalising
        "Rome, why did it fall?",  # 2: {why, rome, fall}: near duplicate of 0 (1.0)
        "Why did the Roman empire collapse?",  # 3: {why, roman, empire, collapse}
        "Why did Rome fall so quickly?",  # 4: {why, rome, fall, quickly}: 3/4 with 0
        "",  # 5: never a duplicate
        "Why did the Roman empire collapse so suddenly?",  # 6: 4/5 with 3
    ]
    result = find_duplicates(texts, threshold=0.8)
    assert result.exact_groups == [[0, 1]]
    assert [(p.a, p.b, p.similarity) for p in result.near_pairs] == [(0, 2, 1.0), (3, 6, 0.8)]
    assert result.groups == [[0, 1, 2], [3, 6]]
    looser = find_duplicates(texts, threshold=0.75)
    assert {(p.a, p.b) for p in looser.near_pairs} == {(0, 2), (0, 4), (2, 4), (3, 6)}
    assert looser.groups == [[0, 1, 2, 4], [3, 6]]


def test_find_duplicates_matches_brute_force_on_random_texts():
    rng = np.random.default_rng(0)
    vocabulary = [f"w{k}" for k in range(30)]
    texts = [" ".join(rng.choice(vocabulary, size=int(rng.integers(2, 8)))) for _ in range(300)]
    for threshold in (0.5, 0.7, 0.9):
        result = find_duplicates(texts, threshold=threshold)
        found = {(p.a, p.b) for p in result.near_pairs}
        reps: dict[str, int] = {}
        for i, text in enumerate(texts):
            reps.setdefault(" ".join(text.split()), i)
        expected = {
            (a, b)
            for a, b in itertools.combinations(sorted(reps.values()), 2)
            if token_set_similarity(texts[a], texts[b]) >= threshold
        }
        assert found == expected
