"""The built-in baseline: passage QA by BM25 retrieval over the passage's sentences.

Pure functions, no network and no dependency: a passage holds tens of sentences, so a
plain Okapi BM25 (k1 = 1.5, b = 0.75, the Lucene IDF) in Python answers in well under a
millisecond. Its answer is the sentence of the passage that best matches the question,
the usual sentence-retrieval baseline for WhyQA-like and Nangia-like passages.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

MODEL_ID = "baseline-bm25"
MODEL_VERSION = "1"

_WORD = re.compile(r"\w+", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")
# Question words and function words: matching them says nothing about the answer.
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "their",
        "this",
        "to",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "whose",
        "why",
        "will",
        "with",
    ]
)


def sentences_split(text: str) -> list[str]:
    """The sentences of ``text``: split after ``.``, ``!`` or ``?`` and whitespace."""
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def tokens(text: str) -> list[str]:
    """Lower-cased words of ``text`` without stop words."""
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP]


def bm25_scores(
    *, query: str, documents: Sequence[str], k1: float = 1.5, b: float = 0.75
) -> list[float]:
    """Okapi BM25 score of each of ``documents`` for ``query``."""
    docs = [tokens(d) for d in documents]
    if not docs:
        return []
    n = len(docs)
    average = sum(len(d) for d in docs) / n or 1.0
    frequency = Counter(word for d in docs for word in set(d))
    scores = []
    for doc in docs:
        counts = Counter(doc)
        score = 0.0
        for word in set(tokens(query)):
            tf = counts.get(word, 0)
            if not tf:
                continue
            idf = math.log(1 + (n - frequency[word] + 0.5) / (frequency[word] + 0.5))
            score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(doc) / average))
        scores.append(score)
    return scores


def baseline_answer(*, question: str, context: str | Sequence[str]) -> str:
    """The sentence of ``context`` (a passage, or its sentences) that best answers
    ``question`` by BM25; the first one on a tie; ``""`` for an empty passage."""
    sentences = sentences_split(context) if isinstance(context, str) else [str(s) for s in context]
    sentences = [s for s in sentences if s.strip()]
    if not sentences:
        return ""
    scores = bm25_scores(query=question, documents=sentences)
    best = max(range(len(sentences)), key=lambda i: (scores[i], -i))
    return sentences[best]
