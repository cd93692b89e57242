"""Gold items: comparing an answer with the gold answer, and what gold earns. Pure functions.

How an answer is compared with its gold is the task type's business; this
module has one helper per answer shape and ``gold_correct`` to pick it:

- categorical choice (``mc_validation``, ``entity_link_validation``, rubric
  dimension, anything with a ``choice``/``label``/``verdict``): equal as text;
- sentence selection (WhyQA): sentence-id overlap ≥ a threshold (default 0.5);
  "no answer" is right only against a "no answer" gold;
- entity links: the set of (start, end, qid | not-in-Wikidata) equals the gold set.

Gold values as uploaded (``Item.gold``): a bare value (``2``, ``"invalid"``), or
the entry shape of the task type (``{"choice": 2}``, ``{"sentences": [4, 5]}``,
``{"no_answer": true}``, ``{"links": [...]}``); a bare list is the sentence ids
or the links.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from campaigns.tasktypes import task_type_shape
from validation.projections import categorical_label, link_set, sentence_set
from validation.text import sentence_overlap

DEFAULT_SENTENCE_THRESHOLD = 0.5


def gold_match_choice(label: Any, gold: Any) -> bool:
    """A categorical label equals the gold label (compared as text: 2 == "2")."""
    if isinstance(gold, Mapping):
        gold = next((gold[k] for k in ("choice", "label", "verdict") if k in gold), None)
    return label is not None and gold is not None and str(label) == str(gold)


def gold_match_sentences(
    entry: Mapping[str, Any], gold: Any, *, threshold: float = DEFAULT_SENTENCE_THRESHOLD
) -> bool:
    """Sentence-id overlap with the gold selection ≥ ``threshold`` (no answer = no answer)."""
    if isinstance(gold, Mapping):
        gold_set = None if gold.get("no_answer") else sentence_set(gold)
    elif isinstance(gold, Sequence) and not isinstance(gold, str):
        gold_set = frozenset(s for s in gold if isinstance(s, int)) or None
    else:
        gold_set = None
    return sentence_overlap(sentence_set(entry), gold_set) >= threshold - 1e-12


def gold_match_links(entry: Mapping[str, Any], gold: Any) -> bool:
    """The entry's links are exactly the gold links."""
    gold_links = gold.get("links", []) if isinstance(gold, Mapping) else gold
    return link_set(entry) == link_set(gold_links if isinstance(gold_links, list) else [])


def gold_correct(
    task_type: str,
    entry: Mapping[str, Any] | None,
    gold: Any,
    *,
    sentence_threshold: float = DEFAULT_SENTENCE_THRESHOLD,
    dimension: str = "answerable",
) -> bool | None:
    """Whether ``entry`` matches ``gold`` for ``task_type``; None when it cannot be told
    (no entry, no gold, or an answer shape with no gold comparison)."""
    if gold is None or not isinstance(entry, Mapping):
        return None
    shape = task_type_shape(task_type)
    if shape == "sentences":
        return gold_match_sentences(entry, gold, threshold=sentence_threshold)
    if shape == "links":
        return gold_match_links(entry, gold)
    label = categorical_label(task_type, entry, dimension=dimension)
    if label is None and not any(k in entry for k in ("choice", "label", "verdict", dimension)):
        return None
    return gold_match_choice(label, gold)


def gold_accuracy(correct: int, total: int) -> float | None:
    """correct / total; None without gold answers."""
    return correct / total if total else None


def gold_bonus_blocks(outcomes: Sequence[bool], *, block: int = 4, correct: int = 3) -> list[int]:
    """Indices of the complete blocks of ``block`` gold answers (in answer order) with at
    least ``correct`` right: "a bonus for every 3 of 4 gold correct".

    Blocks are consecutive and fixed once complete, so a block's index is a stable
    idempotency key: answers coming later never change an earlier block.
    """
    if block < 1 or not 0 < correct <= block:
        raise ValueError("need block >= 1 and 0 < correct <= block")
    return [
        n
        for n in range(len(outcomes) // block)
        if sum(outcomes[n * block : (n + 1) * block]) >= correct
    ]
