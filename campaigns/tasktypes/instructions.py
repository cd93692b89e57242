"""A stage's notes to workers follow its settings: ``{questions_per_hit}`` in the
requester's instructions reads "three" once the stage asks for three questions.

The recipes write their numbers as placeholders rather than digits, so that editing a
stage (questions per HIT, sentences, items per HIT, the quiz's pass mark) changes what
workers read; a name the stage does not know is left as typed, so braces in ordinary
text survive.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from campaigns.tasktypes import task_type_get

_PLACEHOLDER = re.compile(r"\{([a-z][a-z0-9_]*)\}")
_WORDS = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
)


def number_words(value: float) -> str:
    """A count as running text reads it: words up to twelve, digits beyond."""
    if float(value).is_integer():
        n = int(value)
        return _WORDS[n] if 0 <= n < len(_WORDS) else str(n)
    return f"{value:g}"


def instructions_render(
    *,
    text: str,
    task_type: str,
    config: Mapping[str, Any] | None,
    items_per_hit: int,
    assignments_per_hit: int,
) -> str:
    """``text`` with each ``{name}`` the stage knows replaced by its current value:
    the task type's numbers (``TaskType.instruction_numbers``: its effective config's
    counts, e.g. ``questions_per_hit``, ``max_sentences``, a quiz's ``question_count``
    and ``pass_points``), ``items_per_hit`` and ``assignments_per_hit``."""
    if "{" not in text:
        return text
    numbers: dict[str, float] = {
        **task_type_get(task_type).instruction_numbers(config or {}),
        "items_per_hit": items_per_hit,
        "assignments_per_hit": assignments_per_hit,
    }

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        return number_words(numbers[name]) if name in numbers else match.group(0)

    return _PLACEHOLDER.sub(fill, text)


def stage_instructions(stage: Any) -> str:
    """The stage's instructions as workers read them (``instructions_render``)."""
    return instructions_render(
        text=stage.instructions or "",
        task_type=stage.task_type,
        config=stage.config,
        items_per_hit=stage.items_per_hit,
        assignments_per_hit=stage.assignments_per_hit,
    )
