"""What a stage's qualification requirement may say, checked where the stage is saved
(``stage_add``, ``stage_update``, so the API and the stage form alike) and read by the
stage form for its inputs: what each requirement names, the system requirements'
parameters and their checks (``REQUIREMENT_PARAMS``)."""

from __future__ import annotations

from typing import Any

from campaigns.design.stage_rules import ParamCheck
from campaigns.models import QualificationKind

# What a requirement names: a platform filter ("kind"), one of the owner's
# qualification types, another stage of the campaign (a quiz passed, a round qualified,
# its graders) or an MTurk qualification by its own id.
REQUIREMENT_ANCHORS = (
    "kind",
    "qualification_type_id",
    "quiz_stage",
    "round_stage",
    "graders_stage",
    "mturk_qualification_id",
)
REQUIREMENT_KINDS = frozenset(str(k) for k in QualificationKind) | {"country"}
REQUIREMENT_EXAMPLE = '{"kind": "approval_rate", "min": 95}'
# Requirements that name a stage of the campaign by id (``workforce.requirements``), and
# the round number the round ones may add.
STAGE_REFERENCE_KEYS = ("quiz_stage", "round_stage", "graders_stage")


def _whole(lowest: int, highest: int | None = None) -> ParamCheck:
    def check(value: Any) -> str | None:
        ok = isinstance(value, int) and not isinstance(value, bool)
        if ok and value >= lowest and (highest is None or value <= highest):
            return None
        upper = f" to {highest}" if highest is not None else " or more"
        return f"must be a whole number from {lowest}{upper}"

    return ParamCheck(check, "integer", minimum=lowest, maximum=highest)


def _is_codes(value: Any) -> str | None:
    ok = isinstance(value, list) and value and all(isinstance(c, str) and c for c in value)
    return None if ok else "must be a non-empty list of country codes (US, GB, …)"


def _is_bool(value: Any) -> str | None:
    return None if isinstance(value, bool) else "must be true or false"


_COUNTRY = {
    "countries": (ParamCheck(_is_codes, "names"), None),
    "exclude": (ParamCheck(_is_bool, "boolean"), False),
}
# The system requirements a stage form offers, with their parameters: kind ->
# {parameter: (check, default)}; a default of None means required.
REQUIREMENT_PARAMS: dict[str, dict[str, tuple[ParamCheck, Any]]] = {
    "approval_rate": {"min": (_whole(0, 100), None)},
    "approved_count": {"min": (_whole(0), None)},
    "country": _COUNTRY,
    "locale": _COUNTRY,
    "masters": {},
    "adult": {},
}


def _params_problems(n: int, req: dict[str, Any]) -> list[str]:
    kind = str(req.get("kind"))
    spec = REQUIREMENT_PARAMS.get(kind)
    if spec is None:
        return []
    problems: list[str] = []
    values = dict(req)
    if kind in ("country", "locale") and "countries" not in values and "values" in values:
        values["countries"] = values.pop("values")  # the recipes' older spelling
    for key, (check, default) in spec.items():
        if key not in values:
            if default is None:
                problems.append(f"requirement {n} ({kind}): {key} is required")
            continue
        problem = check(values[key])
        if problem:
            problems.append(f"requirement {n} ({kind}): {key} {problem}")
    return problems


def requirement_problems(requirements: Any) -> list[str]:
    """Problems with a stage's ``qualification_requirements`` (empty when valid): a
    requirement that names nothing qaportal knows (stored, it would silently enforce
    nothing), an unknown kind, a system requirement's missing or wrong parameter, a stage
    reference or round that is not a whole number. Requirements count from 1."""
    if requirements is None:
        return []
    if not isinstance(requirements, list):
        return [f"qualification_requirements is a list, e.g. [{REQUIREMENT_EXAMPLE}]"]
    problems: list[str] = []
    for n, req in enumerate(requirements, start=1):
        if not isinstance(req, dict):
            problems.append(f"requirement {n} is not an object, e.g. {REQUIREMENT_EXAMPLE}")
        elif not any(req.get(k) is not None for k in REQUIREMENT_ANCHORS):
            keys = ", ".join(sorted(str(k) for k in req)) or "none"
            problems.append(
                f"requirement {n} (keys: {keys}) names none of "
                f"{', '.join(REQUIREMENT_ANCHORS)}; e.g. {REQUIREMENT_EXAMPLE}"
            )
        elif "kind" in req and str(req["kind"]) not in REQUIREMENT_KINDS:
            problems.append(
                f"requirement {n}: unknown kind {str(req['kind'])[:40]!r} "
                f"(known: {', '.join(sorted(REQUIREMENT_KINDS))})"
            )
        else:
            problems += _params_problems(n, req)
            problems += _reference_problems(n, req)
    return problems


def _whole_number(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _reference_problems(n: int, req: dict[str, Any]) -> list[str]:
    problems = [
        f"requirement {n}: {key} must be a stage's id (a whole number), not {req[key]!r:.40}"
        for key in STAGE_REFERENCE_KEYS
        if req.get(key) is not None and not _whole_number(req[key])
    ]
    if req.get("round") is not None and not _whole_number(req["round"]):
        problems.append(
            f"requirement {n}: round must be a whole number from 1, not {req['round']!r:.40}"
        )
    return problems


def requirement_stage_ids(requirements: Any) -> list[tuple[int, str, int]]:
    """``(requirement number from 1, key, stage id)`` of every stage a requirement names."""
    out: list[tuple[int, str, int]] = []
    for n, req in enumerate(requirements if isinstance(requirements, list) else [], start=1):
        if isinstance(req, dict):
            out += [(n, k, req[k]) for k in STAGE_REFERENCE_KEYS if _whole_number(req.get(k))]
    return out
