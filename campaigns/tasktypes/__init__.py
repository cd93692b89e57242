"""Registry of task types. Adding a task type: one module, one line here."""

from __future__ import annotations

from campaigns.tasktypes.base import FieldError, TaskType
from campaigns.tasktypes.question_writing import QuestionWriting

_REGISTRY: dict[str, TaskType] = {t.name: t for t in (QuestionWriting(),)}


class UnknownTaskType(LookupError):
    pass


def task_type_get(name: str) -> TaskType:
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise UnknownTaskType(f"Unknown task type {name!r}; known task types: {known}.") from None


def task_type_names() -> list[str]:
    return sorted(_REGISTRY)


__all__ = ["FieldError", "TaskType", "UnknownTaskType", "task_type_get", "task_type_names"]
