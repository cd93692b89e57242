"""Prolific's published OpenAPI document as the contract a request must meet.

``request_problems(method, path, query, body)`` finds the operation (by method and
path template, literal paths before templated ones), then checks the query string
and the JSON body against that operation's parameters and request schema with
``jsonschema`` (draft 2020-12, as OpenAPI 3.1 says; ``$ref``s resolved through a
``referencing`` registry holding the whole document). Nothing here is typed by hand:
what the document refuses is refused, what it allows is allowed. The fake adds, on
top, only the behaviour Prolific's prose documents (state machines, minimums).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import ValidationError
from referencing import Registry
from referencing.jsonschema import DRAFT202012

SPEC = Path(__file__).parent / "reference" / "openapi.yml"
BASE = "urn:prolific:openapi"


@dataclass(frozen=True)
class Operation:
    method: str
    template: str
    pattern: re.Pattern[str]
    spec: dict[str, Any]

    @property
    def operation_id(self) -> str:
        return str(self.spec.get("operationId", ""))


@cache
def document() -> dict[str, Any]:
    with SPEC.open() as fh:
        return dict(yaml.load(fh, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))


@cache
def _registry() -> Registry:
    return Registry().with_resource(BASE, DRAFT202012.create_resource(document()))


@cache
def operations() -> tuple[Operation, ...]:
    """Every operation, literal paths first (``bulk-approve/`` before ``{id}/``)."""
    found = []
    for template, item in document()["paths"].items():
        regex = "^" + re.sub(r"\\\{[^}]+\\\}", "([^/]+)", re.escape(template)) + "$"
        for method, spec in item.items():
            if isinstance(spec, dict) and "operationId" in spec:
                found.append(Operation(method.upper(), template, re.compile(regex), spec))
    return tuple(sorted(found, key=lambda o: (o.template.count("{"), o.template)))


def operation_find(method: str, path: str) -> Operation | None:
    for op in operations():
        if op.method == method and op.pattern.match(path):
            return op
    return None


def operation_by_id(operation_id: str) -> Operation:
    return next(o for o in operations() if o.operation_id == operation_id)


def _anchored(schema: Any) -> Any:
    """``schema`` with its document-local ``$ref``s pointing into the registered document."""
    if isinstance(schema, dict):
        return {
            k: (BASE + v if k == "$ref" and str(v).startswith("#") else _anchored(v))
            for k, v in schema.items()
        }
    if isinstance(schema, list):
        return [_anchored(v) for v in schema]
    return schema


def _validator(schema: dict[str, Any]) -> Draft202012Validator:
    return Draft202012Validator(
        _anchored(schema), registry=_registry(), format_checker=FormatChecker()
    )


def _resolved(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = document()["components"]["schemas"][name]
    return schema


def _coerce(raw: str, schema: dict[str, Any]) -> Any:
    """A query string value as the parameter's schema types it (form style)."""
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if "integer" in kinds and re.fullmatch(r"-?\d+", raw):
        return int(raw)
    if "number" in kinds and re.fullmatch(r"-?\d+(\.\d+)?", raw):
        return float(raw)
    if "boolean" in kinds and raw in ("true", "false"):
        return raw == "true"
    return raw


def _closest(error: ValidationError) -> ValidationError:
    """Into a oneOf / anyOf: the error of the branch the value meant (the one whose
    discriminating ``enum`` matched), deepest first."""
    while error.context:
        branches: dict[Any, list[ValidationError]] = {}
        for c in error.context:
            branches.setdefault(c.relative_schema_path[0], []).append(c)
        meant = [
            errs
            for errs in branches.values()
            if not any(c.validator in ("enum", "const") for c in errs)
        ] or list(branches.values())
        closest = min(
            meant, key=lambda errs: (sum(c.validator == "required" for c in errs), len(errs))
        )
        error = max(closest, key=lambda c: len(c.absolute_path))
    return error


def _errors(validator: Draft202012Validator, value: Any, where: str) -> list[str]:
    out = []
    for error in sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path)):
        best = _closest(error)
        at = "/".join(str(p) for p in best.absolute_path)
        out.append(f"{where}{('.' + at) if at else ''}: {best.message}")
    return out


def request_problems(
    method: str, path: str, query: dict[str, list[str]], body: Any, *, has_body: bool
) -> tuple[Operation | None, list[str]]:
    """The operation the request is, and what the reference refuses in it ([] if nothing).

    Unknown operation: (None, [reason]). Query parameters the operation does not list
    are refused (an API that ignores them would leave the caller reading page 1 for
    ever); object parameters are read in OpenAPI's default form/explode style.
    """
    op = operation_find(method, path)
    if op is None:
        return None, [f"{method} {path} is not an operation of Prolific's API reference."]
    problems: list[str] = []
    params = [p for p in op.spec.get("parameters", []) if p.get("in") == "query"]
    seen: set[str] = set()
    for param in params:
        schema = param.get("schema") or {}
        target = _resolved(schema)
        branches = [_resolved(s) for s in target.get("oneOf", [])] or [target]
        if all(b.get("type") == "object" for b in branches):  # form, explode: its properties
            names = {n for b in branches for n in b.get("properties", {})}
            value: Any = {n: query[n][-1] for n in names if n in query}
            seen |= names & set(query)
            if not value and not param.get("required"):
                continue
            # property values are strings in a query: type them from the branch that names them
            problems += _errors(_validator(schema), value, f"query {param['name']}")
            continue
        name = param["name"]
        if name not in query:
            if param.get("required"):
                problems.append(f"query {name}: required.")
            continue
        seen.add(name)
        problems += _errors(_validator(schema), _coerce(query[name][-1], target), f"query {name}")
    for extra in sorted(set(query) - seen):
        problems.append(f"query {extra}: not a parameter of {op.operation_id}.")
    content = (op.spec.get("requestBody") or {}).get("content") or {}
    schema = (content.get("application/json") or {}).get("schema")
    if schema is None:
        if has_body:
            problems.append(f"body: {op.operation_id} takes no request body.")
    elif not has_body:
        if (op.spec.get("requestBody") or {}).get("required"):
            problems.append("body: required.")
    else:
        problems += _errors(_validator(schema), body, "body")
    return op, problems
