"""Gold items: comparing an answer with the gold answer, and what gold earns. Pure functions.

How an answer is compared with its gold is the task type's business
(``TaskType.gold_correct``); ``gold_correct`` here asks the stage's task type:

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

from campaigns.tasktypes import task_type_reading
from campaigns.tasktypes.base import DEFAULT_SENTENCE_THRESHOLD, gold_match_choice
from campaigns.tasktypes.entity_linking import gold_match_links
from campaigns.tasktypes.sentence_selection import gold_match_sentences

__all__ = [
    "DEFAULT_SENTENCE_THRESHOLD",
    "gold_accuracy",
    "gold_bonus_blocks",
    "gold_correct",
    "gold_match_choice",
    "gold_match_links",
    "gold_match_sentences",
]


def gold_correct(
    task_type: str,
    entry: Mapping[str, Any] | None,
    gold: Any,
    *,
    sentence_threshold: float = DEFAULT_SENTENCE_THRESHOLD,
    dimension: str = "answerable",
) -> bool | None:
    """Whether ``entry`` matches ``gold`` for ``task_type``; None when it cannot be told
    (no entry, no gold, or an answer with nothing to compare)."""
    return task_type_reading(task_type).gold_correct(
        entry, gold, sentence_threshold=sentence_threshold, dimension=dimension
    )


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
