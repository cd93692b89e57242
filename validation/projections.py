"""What the review rules read out of a stored answer: pure functions.

An answer is stored per HIT; rules look at one item's *entry* in it (the
task-type convention ``{"items": [{"external_id", ...}]}``; answers without
``items`` — question writing, why-questions — are one entry for the HIT's item).

What an entry means is its task type's business (``campaigns.tasktypes``): these
functions take the stage's task-type name and ask the task type.

- ``categorical_label`` — the one categorical value of an entry that agreement
  and consensus compare (``TaskType.label_of``).
- ``entry_texts`` — the free texts an entry holds (questions, rephrasings,
  paraphrases, justifications, …), for duplicate, ROUGE and paste checks.
- ``is_no_answer`` / ``sentence_set`` — WhyQA's "no answer" and selected ids.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

from campaigns.tasktypes import task_type_reading
from campaigns.tasktypes.base import TEXT_FIELDS, answer_for_item
from campaigns.tasktypes.sentence_selection import sentence_set

# The keys the text checks read when a rule names none.
DEFAULT_TEXT_FIELDS = TEXT_FIELDS

__all__ = [
    "DEFAULT_TEXT_FIELDS",
    "categorical_label",
    "entries_by_item",
    "entry_texts",
    "is_no_answer",
    "sentence_set",
]


def entries_by_item(answer: Any, items: Sequence[Mapping[str, Any]]) -> dict[Any, dict[str, Any]]:
    """``{item id: entry}`` for the HIT's ``items`` (``{"id", "external_id", ...}``)."""
    out: dict[Any, dict[str, Any]] = {}
    for item in items:
        entry = answer_for_item(answer, item)
        if entry is not None:
            out[item["id"]] = entry
    return out


def categorical_label(
    task_type: str, entry: Mapping[str, Any] | None, *, dimension: str = "answerable"
) -> Hashable | None:
    """The categorical value of ``entry`` compared by agreement and consensus, as the
    task type ``task_type`` reads it (None: no categorical value)."""
    return task_type_reading(task_type).label_of(entry, dimension=dimension)


def is_no_answer(task_type: str, entry: Mapping[str, Any] | None) -> bool | None:
    """True/False for answers that can say "no answer" (sentence selection); None otherwise."""
    return task_type_reading(task_type).is_no_answer(entry)


def _texts(value: Any, fields: tuple[str, ...]) -> Iterable[str]:
    if isinstance(value, str):
        if value.strip():
            yield value
    elif isinstance(value, list):
        for part in value:
            yield from _texts(part, fields)
    elif isinstance(value, Mapping):
        for key in fields:
            if key in value:
                yield from _texts(value[key], fields)


def entry_texts(entry: Any, *, fields: Sequence[str] = DEFAULT_TEXT_FIELDS) -> list[str]:
    """The worker's free texts in ``entry`` (or a whole answer), in order."""
    return list(_texts(entry, tuple(fields))) if isinstance(entry, Mapping) else []
