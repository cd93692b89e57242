"""What the review rules read out of a stored answer, per task type: pure functions.

An answer is stored per HIT; rules look at one item's *entry* in it (the
task-type convention ``{"items": [{"external_id", ...}]}``; answers without
``items`` — question writing, why-questions — are one entry for the HIT's item).

- ``categorical_label`` — the one categorical value of an entry that agreement
  and consensus compare: ``mc_validation`` choice, ``entity_link_validation``
  verdict, ``rubric_evaluation`` one rubric dimension (default "answerable"),
  ``sentence_selection_answer`` "no_answer" vs "answered", entity linking the
  whole set of links (equal sets agree). Other task types: a ``choice``,
  ``label`` or ``verdict`` key when there is one, else None (not categorical).
- ``entry_texts`` — the free texts an entry holds (questions, rephrasings,
  paraphrases, justifications, …), for duplicate, ROUGE and paste checks.
- ``is_no_answer`` / ``sentence_set`` — WhyQA's "no answer" and selected ids.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

from campaigns.tasktypes import task_type_shape
from campaigns.tasktypes.base import answer_for_item

NO_ANSWER = "no_answer"
ANSWERED = "answered"
# Keys holding free text written by the worker (strings, lists of strings, or lists
# of dicts with such keys). Span texts of entity links are copies, not writing.
DEFAULT_TEXT_FIELDS = (
    "question",
    "questions",
    "rephrasing",
    "paraphrases",
    "justification",
)


def entries_by_item(answer: Any, items: Sequence[Mapping[str, Any]]) -> dict[Any, dict[str, Any]]:
    """``{item id: entry}`` for the HIT's ``items`` (``{"id", "external_id", ...}``)."""
    out: dict[Any, dict[str, Any]] = {}
    for item in items:
        entry = answer_for_item(answer, item)
        if entry is not None:
            out[item["id"]] = entry
    return out


def link_key(link: Mapping[str, Any]) -> tuple[Any, Any, str]:
    """A link as (start, end, qid or "NONE"), as the entity-linking task types compare them."""
    return (
        link.get("start"),
        link.get("end"),
        "NONE" if link.get("none") else str(link.get("qid")),
    )


def link_set(entry: Mapping[str, Any] | Sequence[Any] | None) -> frozenset[tuple[Any, Any, str]]:
    """The set of links of an entry (or of a bare list of links)."""
    links = entry.get("links", []) if isinstance(entry, Mapping) else entry or []
    return frozenset(link_key(link) for link in links if isinstance(link, Mapping))


def categorical_label(
    task_type: str, entry: Mapping[str, Any] | None, *, dimension: str = "answerable"
) -> Hashable | None:
    """The categorical value of ``entry`` compared by agreement and consensus (see module)."""
    if not isinstance(entry, Mapping):
        return None
    shape = task_type_shape(task_type)
    if shape == "sentences":
        return NO_ANSWER if entry.get("no_answer") else ANSWERED
    if shape == "links":
        return json.dumps(sorted(link_set(entry), key=str))
    if shape == "rubric":
        value = entry.get(dimension)
    elif shape == "verdict":
        value = entry.get("verdict")
    else:
        value = next(
            (entry[k] for k in ("choice", "label", "verdict") if entry.get(k) is not None), None
        )
    if value is None or value == "":
        return None
    return str(value)


def is_no_answer(task_type: str, entry: Mapping[str, Any] | None) -> bool | None:
    """True/False for answers that can say "no answer" (sentence selection); None otherwise."""
    if task_type_shape(task_type) != "sentences" or not isinstance(entry, Mapping):
        return None
    return bool(entry.get("no_answer"))


def sentence_set(entry: Mapping[str, Any] | None) -> frozenset[int] | None:
    """Selected sentence ids; None for "no answer" (what ``validation.text`` expects)."""
    if not isinstance(entry, Mapping) or entry.get("no_answer"):
        return None
    return frozenset(s for s in entry.get("sentences", []) if isinstance(s, int))


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
