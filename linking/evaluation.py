"""Measuring span proposals against Mintaka's gold question entities (pure functions)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from linking.spans import Span


@dataclass(frozen=True)
class Coverage:
    """How well proposals cover gold spans of one entity type.

    ``exact``: gold spans proposed with the same offsets; ``inside``: gold spans
    lying inside a proposed span (exact included); ``proposals``: all proposals
    over ``questions`` questions.
    """

    gold: int
    exact: int
    inside: int
    questions: int
    proposals: int

    @property
    def exact_rate(self) -> float:
        return self.exact / self.gold if self.gold else 1.0

    @property
    def inside_rate(self) -> float:
        return self.inside / self.gold if self.gold else 1.0

    @property
    def proposals_per_question(self) -> float:
        return self.proposals / self.questions if self.questions else 0.0


def load_mintaka(path: str | Path) -> list[dict[str, Any]]:
    """The questions of a Mintaka JSON file (a list of question objects)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of Mintaka questions")
    return data


def gold_spans(
    question: Mapping[str, Any], *, entity_types: Iterable[str]
) -> list[tuple[int, int]]:
    """Gold (start, end) of the question entities of the given Mintaka entity types."""
    wanted = set(entity_types)
    return [
        (int(e["span"][0]), int(e["span"][1]))
        for e in question.get("questionEntity") or []
        if e.get("entityType") in wanted and e.get("span")
    ]


def span_coverage(
    questions: Sequence[Mapping[str, Any]],
    proposals: Sequence[Sequence[Span]],
    *,
    entity_types: Iterable[str] = ("entity",),
    kinds: Iterable[str] | None = None,
) -> Coverage:
    """Coverage of the gold spans of ``entity_types`` by proposals (optionally only
    those of ``kinds``); ``proposals[i]`` belongs to ``questions[i]``."""
    types = tuple(entity_types)
    allowed = set(kinds) if kinds is not None else None
    gold = exact = inside = total = 0
    for question, spans in zip(questions, proposals, strict=True):
        usable = [s for s in spans if allowed is None or s.kind in allowed]
        total += len(spans)
        offsets = {(s.start, s.end) for s in usable}
        for start, end in gold_spans(question, entity_types=types):
            gold += 1
            exact += (start, end) in offsets
            inside += any(s.start <= start and end <= s.end for s in usable)
    return Coverage(gold, exact, inside, len(questions), total)
