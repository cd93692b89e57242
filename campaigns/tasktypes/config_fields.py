"""A task type's stage configuration as a list of simple fields, read from its
``config_schema``: what a form needs to show one input per setting (kind, label, help
text, default, bounds, choices). Settings that are not a single number, yes/no or
choice (lists of questions, nested objects) are left to the raw JSON."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from campaigns.tasktypes.base import TaskType


@dataclass(frozen=True)
class ConfigField:
    """One scalar setting of a task type's stage configuration."""

    name: str
    kind: str  # "integer", "number", "boolean", "choice" or "text"
    label: str
    help: str
    default: Any
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    choices: tuple[Any, ...] = ()


def _kind(spec: dict[str, Any]) -> str | None:
    if "enum" in spec:
        return "choice"
    kind = spec.get("type")
    if kind in ("integer", "number", "boolean"):
        return str(kind)
    if kind == "string" and "enum" not in spec:
        return "text"
    return None


def config_fields(task_type: TaskType) -> list[ConfigField]:
    """The scalar settings of ``task_type``'s configuration, in schema order."""
    fields = []
    defaults = task_type.config_defaults
    for name, spec in task_type.config_schema.get("properties", {}).items():
        kind = _kind(spec)
        if kind is None:
            continue
        exclusive = "exclusiveMinimum" in spec
        fields.append(
            ConfigField(
                name=name,
                kind=kind,
                label=str(spec.get("title") or name.replace("_", " ").capitalize()),
                help=str(spec.get("description", "")),
                default=defaults.get(name, spec.get("default")),
                minimum=spec.get("exclusiveMinimum") if exclusive else spec.get("minimum"),
                maximum=spec.get("maximum"),
                exclusive_minimum=exclusive,
                choices=tuple(spec.get("enum", ())),
            )
        )
    return fields


def config_complex_keys(task_type: TaskType) -> list[str]:
    """The settings ``config_fields`` leaves to the raw JSON (lists, nested objects)."""
    simple = {f.name for f in config_fields(task_type)}
    return [k for k in task_type.config_schema.get("properties", {}) if k not in simple]
