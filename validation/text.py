"""Agreement between free-text and sentence-selection answers; duplicate texts.

Pure functions over plain data:

- sentence-id overlap (WhyQA): len(A & B) / len(A | B) between two answers given as
  sets of sentence ids; "no answer" (None or an empty set) scores 1 against
  "no answer" and 0 against any answer. Summaries: the mean over all pairs of
  answers to the same item ("total average") and the mean best match per answer.
- ROUGE-1, ROUGE-2, ROUGE-L (the ``rouge-score`` package) and ROUGE-SU4 F-measures
  between answers to the same item, and the same over random pairs of answers to
  different items (the chance level to compare with).
- duplicates: texts equal after ``normalise_text`` and near duplicates whose
  content-token sets have a Jaccard similarity ≥ a threshold, found by prefix
  filtering (exact, no sampling).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations
from typing import TYPE_CHECKING, Any

import numpy as np

from campaigns.tasktypes.base import content_tokens, normalise_text

# What WhyQA's task type counts as overlap is what agreement measures too.
from campaigns.tasktypes.sentence_selection import sentence_overlap

if TYPE_CHECKING:
    from rouge_score import rouge_scorer, tokenizers

SentenceAnswer = Collection[int] | None  # None or empty: "no answer"

ROUGE_METRICS = ("rouge1", "rouge2", "rougeL", "rougeSU4")
_PACKAGE_METRICS = ["rouge1", "rouge2", "rougeL"]


# --- Sentence-id overlap -------------------------------------------------------------


def best_match_overlaps(answers: Sequence[SentenceAnswer]) -> list[float]:
    """For each answer, its highest overlap with another answer to the same item.

    Answers of an item with a single answer have no peer: the list is empty.
    """
    if len(answers) < 2:
        return []
    return [
        max(sentence_overlap(a, b) for j, b in enumerate(answers) if j != i)
        for i, a in enumerate(answers)
    ]


@dataclass(frozen=True)
class OverlapAgreement:
    total_average: float | None  # mean overlap over all pairs of answers to the same item
    best_match: float | None  # mean over answers of their best match with a peer
    pairs: int
    answers: int  # answers that have at least one peer


def sentence_overlap_agreement(
    answers_by_item: Mapping[Any, Sequence[SentenceAnswer]],
) -> OverlapAgreement:
    """Total-average and best-match sentence overlap, pooled over items.

    Pairs (and answers) of all items are pooled, so an item with many answers
    weighs more, as in WhyQA's totals. Items with one answer are left out.
    """
    pair_scores: list[float] = []
    best: list[float] = []
    for answers in answers_by_item.values():
        pair_scores.extend(sentence_overlap(a, b) for a, b in combinations(answers, 2))
        best.extend(best_match_overlaps(answers))
    return OverlapAgreement(
        total_average=float(np.mean(pair_scores)) if pair_scores else None,
        best_match=float(np.mean(best)) if best else None,
        pairs=len(pair_scores),
        answers=len(best),
    )


# --- ROUGE ---------------------------------------------------------------------------


# rouge-score is imported on first use: it pulls in nltk and scipy.stats (about 200 MB
# and over a second), which every web and worker process would pay at start otherwise.
@lru_cache(maxsize=2)
def _scorer(use_stemmer: bool) -> rouge_scorer.RougeScorer:
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(_PACKAGE_METRICS, use_stemmer=use_stemmer)


@lru_cache(maxsize=2)
def _tokenizer(use_stemmer: bool) -> tokenizers.DefaultTokenizer:
    from rouge_score import tokenizers

    return tokenizers.DefaultTokenizer(use_stemmer=use_stemmer)


def skip_bigrams_and_unigrams(
    tokens: Sequence[str], *, max_gap: int = 4
) -> Counter[tuple[str, ...]]:
    """The units of ROUGE-SU: unigrams plus ordered word pairs with ≤ ``max_gap`` words between.

    With ``max_gap=4`` these are the units of ROUGE-SU4 (Lin 2004; ROUGE-1.5.5
    ``-2 4 -u``): pairs (w_i, w_j) with 0 < j - i ≤ 5.
    """
    units: Counter[tuple[str, ...]] = Counter((t,) for t in tokens)
    for i, first in enumerate(tokens):
        for j in range(i + 1, min(len(tokens), i + max_gap + 2)):
            units[(first, tokens[j])] += 1
    return units


def _f_measure(hits: int, candidate: int, reference: int) -> float:
    if hits == 0:
        return 0.0
    precision, recall = hits / candidate, hits / reference
    return 2 * precision * recall / (precision + recall)


def rouge_su4(candidate: str, reference: str, *, use_stemmer: bool = False) -> float:
    """ROUGE-SU4 F-measure (clipped counts of unigrams and skip-bigrams, gap ≤ 4)."""
    tokenize = _tokenizer(use_stemmer).tokenize
    cand = skip_bigrams_and_unigrams(tokenize(candidate))
    ref = skip_bigrams_and_unigrams(tokenize(reference))
    hits = sum((cand & ref).values())
    return _f_measure(hits, sum(cand.values()), sum(ref.values()))


def rouge_f(candidate: str, reference: str, *, use_stemmer: bool = False) -> dict[str, float]:
    """F-measures ``{"rouge1", "rouge2", "rougeL", "rougeSU4"}`` of two texts (symmetric)."""
    scores = _scorer(use_stemmer).score(reference, candidate)
    result = {name: float(scores[name].fmeasure) for name in _PACKAGE_METRICS}
    result["rougeSU4"] = rouge_su4(candidate, reference, use_stemmer=use_stemmer)
    return result


@dataclass(frozen=True)
class RougeAgreement:
    within: dict[str, float]  # mean F over pairs of answers to the same item
    baseline: dict[str, float]  # mean F over random pairs of answers to different items
    pairs: int
    baseline_pairs: int


def _mean_scores(pairs: list[tuple[str, str]], use_stemmer: bool) -> dict[str, float]:
    if not pairs:
        return {}
    totals: Counter[str] = Counter()
    for a, b in pairs:
        totals.update(rouge_f(a, b, use_stemmer=use_stemmer))
    return {name: totals[name] / len(pairs) for name in ROUGE_METRICS}


def rouge_agreement(
    answers_by_item: Mapping[Any, Sequence[str]],
    *,
    baseline_pairs: int | None = None,
    seed: int = 0,
    use_stemmer: bool = False,
) -> RougeAgreement:
    """Mean ROUGE F between answers to the same item, and between random pairs of items.

    The baseline draws ``baseline_pairs`` (default: as many as there are
    within-item pairs) pairs of answers to two different items, uniformly over
    answers, with a seeded generator; it is empty with fewer than two items.
    """
    within = [(a, b) for answers in answers_by_item.values() for a, b in combinations(answers, 2)]
    flat = [(i, text) for i, answers in enumerate(answers_by_item.values()) for text in answers]
    wanted = len(within) if baseline_pairs is None else baseline_pairs
    rng = np.random.default_rng(seed)
    random_pairs: list[tuple[str, str]] = []
    if len({i for i, _ in flat}) >= 2:
        while len(random_pairs) < wanted:
            x, y = rng.integers(len(flat), size=2)
            if flat[x][0] != flat[y][0]:
                random_pairs.append((flat[x][1], flat[y][1]))
    return RougeAgreement(
        within=_mean_scores(within, use_stemmer),
        baseline=_mean_scores(random_pairs, use_stemmer),
        pairs=len(within),
        baseline_pairs=len(random_pairs),
    )


# --- Duplicates ----------------------------------------------------------------------


@dataclass(frozen=True)
class NearDuplicate:
    a: int  # index into texts (a < b)
    b: int
    similarity: float  # Jaccard of the token sets


@dataclass(frozen=True)
class Duplicates:
    exact_groups: list[list[int]]  # indices of texts equal after normalise_text (≥ 2 each)
    near_pairs: list[NearDuplicate]  # between the first texts of distinct normalised forms
    groups: list[list[int]]  # connected components of both relations (≥ 2 each)


def _token_set(text: str) -> frozenset[str]:
    tokens = content_tokens(text)
    return frozenset(tokens or normalise_text(text).split())


def find_duplicates(texts: Sequence[str], *, threshold: float = 0.8) -> Duplicates:
    """Exact and near-duplicate texts among ``texts``.

    Exact: equal ``normalise_text`` (case, punctuation, spacing). Near: Jaccard
    similarity ≥ ``threshold`` of the content-token sets (stop words dropped, as
    ``token_set_similarity`` does; a text of stop words only keeps all its
    tokens). Texts empty after normalising are never duplicates.

    Prefix filtering (Chaudhuri et al. 2006; Bayardo et al. 2007): tokens are
    ranked rarest first; two sets with Jaccard ≥ t share their rarest common
    token within the first |x| - ⌈t·|x|⌉ + 1 tokens of each, so only texts
    sharing one of those (and whose sizes allow it) are compared exactly. No
    pair is missed; the cost grows with the number of texts sharing rare
    tokens, not with the square of all texts.
    """
    if not 0 < threshold <= 1:
        raise ValueError("threshold must be in (0, 1]")
    by_key: dict[str, list[int]] = defaultdict(list)
    for i, text in enumerate(texts):
        key = normalise_text(text)
        if key:
            by_key[key].append(i)
    exact_groups = [group for group in by_key.values() if len(group) > 1]
    reps = [group[0] for group in by_key.values()]
    sets = [_token_set(texts[i]) for i in reps]
    frequency: Counter[str] = Counter(t for s in sets for t in s)
    rank = {
        t: r for r, (t, _) in enumerate(sorted(frequency.items(), key=lambda kv: (kv[1], kv[0])))
    }
    ordered = [sorted(rank[t] for t in s) for s in sets]
    sizes = [len(tokens) for tokens in ordered]
    # Sets are visited by increasing size, so each is probed only against smaller or
    # equal ones: those need to index only their first |y| - ceil(2t/(1+t)|y|) + 1
    # tokens, and an index entry too small for the current set is too small for
    # every later one (``start`` skips it for good).
    index: dict[int, list[int]] = defaultdict(list)
    start: dict[int, int] = defaultdict(int)
    index_share = 2 * threshold / (1 + threshold)
    near: list[NearDuplicate] = []
    for x in sorted(range(len(sets)), key=lambda k: (sizes[k], k)):
        tokens, size = ordered[x], sizes[x]
        if size == 0:
            continue
        probe = size - math.ceil(threshold * size - 1e-9) + 1
        min_size = threshold * size - 1e-9
        candidates: set[int] = set()
        for token in tokens[:probe]:
            entries = index.get(token)
            if not entries:
                continue
            first = start[token]
            while first < len(entries) and sizes[entries[first]] < min_size:
                first += 1
            start[token] = first
            candidates.update(entries[first:])
        for token in tokens[: size - math.ceil(index_share * size - 1e-9) + 1]:
            index[token].append(x)
        for y in candidates:
            overlap = len(sets[x] & sets[y])
            similarity = overlap / (size + sizes[y] - overlap)
            if similarity >= threshold - 1e-12:
                a, b = sorted((reps[x], reps[y]))
                near.append(NearDuplicate(a=a, b=b, similarity=similarity))
    near.sort(key=lambda p: (p.a, p.b))
    return Duplicates(
        exact_groups=exact_groups, near_pairs=near, groups=_components(exact_groups, near)
    )


def _components(exact_groups: list[list[int]], near: list[NearDuplicate]) -> list[list[int]]:
    parent: dict[int, int] = {}

    def find(i: int) -> int:
        parent.setdefault(i, i)
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(i: int, j: int) -> None:
        ri, rj = find(i), find(j)
        if ri != rj:
            parent[max(ri, rj)] = min(ri, rj)

    for group in exact_groups:
        for other in group[1:]:
            union(group[0], other)
    for pair in near:
        union(pair.a, pair.b)
    members: dict[int, list[int]] = defaultdict(list)
    for i in parent:
        members[find(i)].append(i)
    return sorted(sorted(m) for m in members.values() if len(m) > 1)
