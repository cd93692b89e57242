"""The task-type interface. One module per task type; the registry lists them.

A task type owns: the schema of its items' data, the schema of its stage
config, validation of a worker's answer, its worker template, the aggregation
of several answers, and the mapping of accepted output to the next stage's items.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import jsonschema
from jsonschema.exceptions import best_match


@dataclass(frozen=True)
class FieldError:
    """A validation problem, addressed by a JSON-pointer-like path."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


def schema_errors(schema: dict[str, Any], instance: Any) -> list[FieldError]:
    """All jsonschema violations of ``instance``, most relevant first, readable."""
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.path))
    out = []
    for error in errors:
        leaf = best_match([error]) or error
        path = "/".join(str(p) for p in leaf.absolute_path)
        out.append(FieldError(path=path, message=leaf.message))
    return out


class TaskType:
    """Base class. Subclasses set the class attributes and override the hooks."""

    name: ClassVar[str]
    label: ClassVar[str]
    description: ClassVar[str] = ""
    input_schema: ClassVar[dict[str, Any]] = {"type": "object"}
    config_schema: ClassVar[dict[str, Any]] = {"type": "object"}
    answer_schema: ClassVar[dict[str, Any]] = {"type": "object"}
    # Template included inside the worker page's <form>. Context: ``items`` (list of
    # {"id", "external_id", "data"}), ``config`` (stage config), ``answer`` (the
    # worker's answer so far, to refill the form after an error), ``errors``
    # ({path: message}), ``stage``, ``preview`` (True before accept: read-only).
    template_name: ClassVar[str] = ""

    def validate_item(self, data: Any) -> list[FieldError]:
        """Problems with one item's data (empty list when valid)."""
        return schema_errors(self.input_schema, data)

    def validate_config(self, config: Any) -> list[FieldError]:
        """Problems with a stage's task-type config (empty list when valid)."""
        return schema_errors(self.config_schema, config)

    def validate_answer(
        self, *, answer: Any, items: list[dict[str, Any]], config: dict[str, Any]
    ) -> list[FieldError]:
        """Problems with a worker's answer to a HIT holding ``items``."""
        return schema_errors(self.answer_schema, answer)

    def parse_form(
        self, *, form: Mapping[str, Any], items: list[dict[str, Any]], config: dict[str, Any]
    ) -> dict[str, Any]:
        """Turn the posted form (a QueryDict-like mapping) into an answer.

        Must keep every piece of text the worker typed, even when it is invalid,
        so the page can come back filled after an error.
        """
        raise NotImplementedError

    def exclusive_key(self, *, item: dict[str, Any]) -> str | None:
        """Items with the same key may be worked on by a worker only once per stage."""
        return None

    def aggregate(self, *, answers: list[dict[str, Any]], item: dict[str, Any]) -> Any:
        """Combine several workers' answers on one item (None: nothing to combine)."""
        return None

    def next_items(
        self, *, answer: dict[str, Any], items: list[dict[str, Any]], handoff: dict[str, Any]
    ) -> Iterable[dict[str, Any]]:
        """Items for the next stage made from one accepted answer (none by default)."""
        return ()
