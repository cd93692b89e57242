"""Small builders shared by the task-type tests."""

from __future__ import annotations

from typing import Any

from django.http import QueryDict


def qd(fields: dict[str, Any]) -> QueryDict:
    """A POST-like QueryDict; list values become repeated fields."""
    form = QueryDict(mutable=True)
    for key, value in fields.items():
        if isinstance(value, list):
            form.setlist(key, [str(v) for v in value])
        else:
            form[key] = str(value)
    return form


def item(external_id: str, data: dict[str, Any], pk: int = 1) -> dict[str, Any]:
    return {"id": pk, "external_id": external_id, "data": data}


def paths(errors: list[Any]) -> set[str]:
    return {e.path for e in errors}
