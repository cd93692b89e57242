"""Answer agreement as WhyQA reports it (Mrozinski, Whittaker and Furui, ACL-08: HLT,
§3.2): pure functions over the answers to each answerable question.

An answer is ``(sentence ids, text)``; ``None`` ids is "No-Answer" (NoA). Two data
sets, as §3.2.1 defines them: *NoA not included* (NoA answers removed) and *NoA
included* (a NoA against an answer scores 0, two NoAs score 1). For each:

- sentence ids (§3.2.1, Table 3): Agreement = common ids / all ids of two answers;
  *Total Avg* is the mean over every pair of answers to the same question, *Best
  Match* the mean over answers of their best agreement with another answer to the
  same question;
- ROUGE (§3.2.2, Table 4): F-measures of ROUGE-1, -2, -SU4 and -L between the texts
  of every pair of answers to the same question (NoA scored as for sentence ids);

and the random lower bound of Table 4: the same ROUGE F-measures over random pairs of
answers to two different questions, NoAs included.

The paper's own figures (Table 3: 0.39 / 0.68 and 0.34 / 0.68; Table 4: 0.56 0.46 0.37
0.52, 0.42 0.35 0.28 0.39, random 0.13 0.01 0.02 0.09) come from its 536 answerable
questions, whose answers are not in this repository; ``PAPER`` keeps them for the
campaign page to show next to a campaign's own.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from statistics import mean

import numpy as np

from validation.text import ROUGE_METRICS, best_match_overlaps, rouge_f, sentence_overlap

Answer = tuple[Collection[int] | None, str]
TABLE_ROUGE = ("rouge1", "rouge2", "rougeSU4", "rougeL")  # Table 4's column order
WITHOUT, WITH, RANDOM = "noa_not_included", "noa_included", "random"

# §3.2, Tables 3 and 4.
PAPER: dict[str, dict[str, dict[str, float]]] = {
    "sentence_ids": {
        WITHOUT: {"total_average": 0.39, "best_match": 0.68},
        WITH: {"total_average": 0.34, "best_match": 0.68},
    },
    "rouge": {
        WITHOUT: {"rouge1": 0.56, "rouge2": 0.46, "rougeSU4": 0.37, "rougeL": 0.52},
        WITH: {"rouge1": 0.42, "rouge2": 0.35, "rougeSU4": 0.28, "rougeL": 0.39},
        RANDOM: {"rouge1": 0.13, "rouge2": 0.01, "rougeSU4": 0.02, "rougeL": 0.09},
    },
}


@dataclass(frozen=True)
class AnswerAgreement:
    questions: int
    answers: dict[str, int]  # data set -> answers counted
    pairs: dict[str, int]  # data set -> pairs of answers compared
    sentence_ids: dict[str, dict[str, float | None]] = field(default_factory=dict)
    rouge: dict[str, dict[str, float | None]] = field(default_factory=dict)

    def table(self) -> list[dict[str, object]]:
        """Rows as Tables 3 and 4 lay them out: NoA not included, NoA included, random;
        ``rouge`` in the order R-1, R-2, R-SU4, R-L."""
        labels = {WITHOUT: "NoA not included", WITH: "NoA included", RANDOM: "Random answers"}
        return [
            {
                "key": key,
                "label": label,
                "answers": self.answers.get(key),
                "pairs": self.pairs.get(key, 0),
                "total_average": self.sentence_ids.get(key, {}).get("total_average"),
                "best_match": self.sentence_ids.get(key, {}).get("best_match"),
                "rouge": [self.rouge.get(key, {}).get(m) for m in TABLE_ROUGE],
            }
            for key, label in labels.items()
        ]

    def as_json(self) -> dict[str, object]:
        return {
            "questions": self.questions,
            "answers": self.answers,
            "pairs": self.pairs,
            "sentence_ids": self.sentence_ids,
            "rouge": self.rouge,
            "paper": PAPER,
        }


def _rouge_pair(a: Answer, b: Answer) -> dict[str, float]:
    if a[0] is None or b[0] is None:
        same = a[0] is None and b[0] is None
        return dict.fromkeys(ROUGE_METRICS, 1.0 if same else 0.0)
    if not a[1].strip() or not b[1].strip():
        return dict.fromkeys(ROUGE_METRICS, 0.0)
    return rouge_f(a[1], b[1])


def _rouge_means(pairs: Sequence[tuple[Answer, Answer]]) -> dict[str, float | None]:
    if not pairs:
        return dict.fromkeys(ROUGE_METRICS)
    scores = [_rouge_pair(a, b) for a, b in pairs]
    return {m: round(mean(s[m] for s in scores), 4) for m in ROUGE_METRICS}


def _rounded(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def answer_agreement(
    answers_by_question: Mapping[Hashable, Sequence[Answer]],
    *,
    baseline_pairs: int | None = None,
    seed: int = 0,
) -> AnswerAgreement:
    """WhyQA's agreement measures over ``answers_by_question`` (answerable questions
    only, as §3.2 counts them). Pairs are pooled over questions, so a question with
    more answers weighs more. The random baseline draws ``baseline_pairs`` (default:
    as many as the NoA-included pairs) pairs of answers to different questions with a
    generator seeded by ``seed``."""
    sets: dict[str, list[list[Answer]]] = {
        WITH: [list(a) for a in answers_by_question.values()],
        WITHOUT: [[x for x in a if x[0] is not None] for a in answers_by_question.values()],
    }
    counts: dict[str, int] = {}
    pairs_n: dict[str, int] = {}
    sentence_ids: dict[str, dict[str, float | None]] = {}
    rouge: dict[str, dict[str, float | None]] = {}
    for name, questions in sets.items():
        pairs = [(a, b) for answers in questions for a, b in combinations(answers, 2)]
        ids = [[a[0] for a in answers] for answers in questions]
        pair_scores = [sentence_overlap(a[0], b[0]) for a, b in pairs]
        best = [x for answers in ids for x in best_match_overlaps(answers)]
        counts[name] = sum(len(a) for a in questions)
        pairs_n[name] = len(pairs)
        sentence_ids[name] = {
            "total_average": _rounded(mean(pair_scores)) if pair_scores else None,
            "best_match": _rounded(mean(best)) if best else None,
        }
        rouge[name] = _rouge_means(pairs)
    flat = [(q, a) for q, answers in enumerate(sets[WITH]) for a in answers]
    wanted = pairs_n[WITH] if baseline_pairs is None else baseline_pairs
    random_pairs: list[tuple[Answer, Answer]] = []
    if len({q for q, _ in flat}) >= 2:
        rng = np.random.default_rng(seed)
        while len(random_pairs) < wanted:
            x, y = rng.integers(len(flat), size=2)
            if flat[x][0] != flat[y][0]:
                random_pairs.append((flat[x][1], flat[y][1]))
    rouge[RANDOM] = _rouge_means(random_pairs)
    pairs_n[RANDOM] = len(random_pairs)
    return AnswerAgreement(
        questions=len(answers_by_question),
        answers=counts,
        pairs=pairs_n,
        sentence_ids=sentence_ids,
        rouge=rouge,
    )
