"""Upload templates from a task type's item schema: the columns a stage's items need,
and a CSV or JSON Lines file with a header and one example row that the upload
(``campaigns.services.items.items_upload``) accepts as it is."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from typing import Any

from campaigns.tasktypes.base import TaskType

ID_COLUMN = "external_id"
JSON_SUFFIX = ":json"


@dataclass(frozen=True)
class ItemColumn:
    """One key of an item's data: its CSV column, whether it is required, what it holds."""

    name: str
    column: str
    required: bool
    kind: str
    help: str


def _describe(spec: dict[str, Any]) -> str:
    if "enum" in spec:
        return "one of " + ", ".join(str(v) for v in spec["enum"])
    kind = spec.get("type", "any JSON value")
    kind = " or ".join(kind) if isinstance(kind, list) else str(kind)
    bits = [str(spec.get("description", "")).rstrip(".")] if spec.get("description") else []
    bits.append(kind)
    if "maxLength" in spec:
        bits.append(f"at most {spec['maxLength']} characters")
    return ", ".join(b for b in bits if b)


def item_columns(task_type: TaskType) -> list[ItemColumn]:
    """The keys of ``task_type``'s item data in schema order, required first."""
    schema = task_type.input_schema
    required = set(schema.get("required", ()))
    columns = []
    for name, spec in schema.get("properties", {}).items():
        is_text = spec.get("type") == "string" or (
            "enum" in spec and all(isinstance(v, str) for v in spec["enum"])
        )
        columns.append(
            ItemColumn(
                name=name,
                column=name if is_text else name + JSON_SUFFIX,
                required=name in required,
                kind="text" if is_text else "json",
                help=_describe(spec),
            )
        )
    return sorted(columns, key=lambda c: not c.required)


def _placeholder(spec: dict[str, Any], name: str) -> Any:
    """A value that ``spec`` accepts, for the example row (a best effort for patterns:
    Wikidata ids are the one pattern item schemas use)."""
    if "enum" in spec:
        return spec["enum"][0]
    kind = spec.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "string":
        if str(spec.get("pattern", "")).startswith("^Q"):
            return "Q42"
        text = f"example {name.replace('_', ' ')}"
        return text[: spec.get("maxLength", len(text))]
    if kind in ("integer", "number"):
        return spec.get("minimum", 0)
    if kind == "boolean":
        return False
    if kind == "array":
        count = max(int(spec.get("minItems", 1)), 1)
        return [_placeholder(spec.get("items", {}), name) for _ in range(count)]
    if kind == "object":
        props = spec.get("properties", {})
        keys = spec.get("required") or list(props)
        return {k: _placeholder(props.get(k, {}), k) for k in keys}
    return None


def item_example(task_type: TaskType, *, sample: dict[str, Any] | None = None) -> dict[str, Any]:
    """An item's data for the template's example row: ``sample`` (a real item of the
    stage) when given, else a placeholder for each required key."""
    if sample is not None:
        return sample
    if task_type.example_item is not None:
        return dict(task_type.example_item)
    schema = task_type.input_schema
    props = schema.get("properties", {})
    return {k: _placeholder(props.get(k, {}), k) for k in schema.get("required", ())}


def item_template_csv(task_type: TaskType, *, sample: dict[str, Any] | None = None) -> str:
    """A CSV file: header with ``external_id`` and the example's columns (the required
    ones, and optional ones the example fills: an empty cell would be stored as an empty
    text, which not every optional key accepts), one example row."""
    example = item_example(task_type, sample=sample)
    columns = [c for c in item_columns(task_type) if c.required or c.name in example]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([ID_COLUMN] + [c.column for c in columns])
    row = ["example-1"]
    for c in columns:
        value = example.get(c.name)
        if value is None:
            row.append("")
        elif c.kind == "json":
            row.append(json.dumps(value, ensure_ascii=False))
        else:
            row.append(str(value))
    writer.writerow(row)
    return out.getvalue()


def item_template_jsonl(task_type: TaskType, *, sample: dict[str, Any] | None = None) -> str:
    """A JSON Lines file: one example item with its ``external_id``."""
    example = item_example(task_type, sample=sample)
    return json.dumps({ID_COLUMN: "example-1", **example}, ensure_ascii=False) + "\n"
