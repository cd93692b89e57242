"""The stage form's settings as forms: qualification requirements, review rules, bonus
rules, the escalation rule and the hand-off, one row of inputs per entry, written into
the same JSON the API takes (the JSON stays a click away).

What each setting may hold comes from the rooms that check it: the requirements from
``campaigns.design.requirement_checks``, the rules from the registry every rule-running
room fills (``stage_rule_kinds``), the hand-off from the task type's ``handoff_schema``.
The form builds the JSON from the rows and asks the same checks saving runs; their
messages are put beside the input they name. Plain HTML and POST: *Add* sends the form
back with one more row, nothing is saved until *Save stage*.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from campaigns.design.requirement_checks import REQUIREMENT_PARAMS
from campaigns.design.stage_rules import stage_rule_help, stage_rule_kinds

EMPTY = ""


@dataclass(frozen=True)
class Param:
    """One input of a row: a parameter of a rule or requirement."""

    name: str
    label: str
    kind: str  # number, integer, boolean, choice, names, list, money, qualification, stage, text
    default: Any = None
    required: bool = False
    options: tuple[tuple[str, str], ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    help: str = ""


@dataclass(frozen=True)
class Kind:
    """One kind of entry (a rule, a requirement) and its parameters."""

    name: str
    label: str
    params: tuple[Param, ...]
    help: str = ""
    offered: bool = True  # offered for new rows (a recipe's older spelling is not)


def label_of(name: str) -> str:
    return name.replace("_", " ").capitalize()


def _raw(param: Param, value: Any) -> str:
    """``value`` as its input shows it."""
    if value is None:
        return EMPTY
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list) and param.kind in ("names", "list"):
        return ", ".join(str(v) for v in value)
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


_INT = re.compile(r"^[+-]?\d+$")


def _value(param: Param, raw: str) -> Any:
    """What the input ``raw`` says, as the JSON holds it; a text that is not what the
    parameter takes is kept as it is, so the check says what is wrong with it."""
    raw = raw.strip()
    if param.kind in ("number", "integer", "stage", "qualification"):
        if _INT.match(raw):
            return int(raw)
        try:
            return float(raw) if param.kind == "number" or "." in raw else raw
        except ValueError:
            return raw
    if param.kind == "boolean":
        return {"true": True, "false": False}.get(raw, raw)
    if param.kind in ("names", "list"):
        return [part.strip() for part in raw.split(",") if part.strip()]
    return raw


def _rule_kind(name: str, params: Mapping[str, tuple[Any, Any]]) -> Kind:
    out = []
    for key, (check, default) in params.items():
        kind = getattr(check, "kind", "text")
        options = tuple((str(o), str(o)) for o in getattr(check, "options", ()))
        out.append(
            Param(
                name=key,
                label=label_of(key),
                kind=kind,
                default=default,
                required=default is None and kind not in ("qualification",),
                options=options,
                minimum=getattr(check, "minimum", None),
                maximum=getattr(check, "maximum", None),
            )
        )
    return Kind(name=name, label=label_of(name), params=tuple(out), help=stage_rule_help(name))


@dataclass
class Row:
    """One entry as the form shows it: its kind, the inputs' texts, the entry it came
    from (kept as it is when the inputs are untouched) and the problems beside each."""

    kind: Kind | None  # None: an entry the form cannot show (the JSON edits it)
    raw: dict[str, str]
    original: Any = None
    removed: bool = False
    errors: dict[str, list[str]] = field(default_factory=dict)
    row_errors: list[str] = field(default_factory=list)


class SettingRows:
    """One setting (a list of entries, or one object) as rows of inputs."""

    # The key an entry names its kind by ("rule"), or None (requirements).
    kind_key: str | None = "rule"
    single = False  # the setting is one object ({} for none), not a list
    title = ""
    plain = False  # one object with fixed inputs (no kinds to add or remove)
    add_label = "Add"
    empty_text = "None."

    def __init__(self, *, name: str, prefix: str, kinds: list[Kind]) -> None:
        self.name = name
        self.prefix = prefix
        self.kinds = {k.name: k for k in kinds}
        self.rows: list[Row] = []
        self.errors: list[str] = []
        self.disabled = False

    # --- entries <-> kinds -----------------------------------------------------------

    def kind_of(self, entry: Any) -> Kind | None:
        if not isinstance(entry, Mapping) or self.kind_key is None:
            return None
        kind = self.kinds.get(str(entry.get(self.kind_key)))
        if kind is None:
            return None
        known = {p.name for p in kind.params} | {self.kind_key}
        return kind if set(entry) <= known else None

    def entry_of(self, kind: Kind, values: dict[str, Any], original: Any) -> dict[str, Any]:
        base = dict(original) if isinstance(original, Mapping) else {}
        for p in kind.params:
            base.pop(p.name, None)
        if self.kind_key is not None:
            base[self.kind_key] = kind.name
        base.update(values)
        return base

    def entries(self, value: Any) -> list[Any]:
        if self.single:
            return [value] if isinstance(value, Mapping) and value else []
        return list(value) if isinstance(value, list) else []

    # --- building the rows ------------------------------------------------------------

    def raw_of(self, kind: Kind, entry: Mapping[str, Any]) -> dict[str, str]:
        """The inputs' texts that show ``entry``."""
        return {p.name: _raw(p, entry.get(p.name)) for p in kind.params}

    def load(self, value: Any) -> None:
        """Rows from the stored (or posted JSON) value."""
        self.rows = []
        for entry in self.entries(value):
            kind = self.kind_of(entry)
            raw = self.raw_of(kind, entry) if kind is not None else {}
            self.rows.append(Row(kind=kind, raw=raw, original=entry))

    def posted(self, data: Mapping[str, Any]) -> bool:
        return f"{self.prefix}-rows" in data

    def load_posted(self, data: Mapping[str, Any], *, adding: bool) -> None:
        """Rows from the inputs posted; ``adding``: one more row of the kind chosen."""
        self.rows = []
        try:
            count = min(int(data.get(f"{self.prefix}-rows", 0)), 200)
        except (TypeError, ValueError):
            count = 0
        for n in range(count):
            at = f"{self.prefix}-{n}"
            try:
                original = json.loads(data.get(f"{at}-json") or "null")
            except json.JSONDecodeError:
                original = None
            kind = self.kinds.get(str(data.get(f"{at}-kind", "")))
            raw = {p.name: str(data.get(f"{at}-{p.name}", "")) for p in kind.params} if kind else {}
            removed = bool(data.get(f"{at}-remove"))
            self.rows.append(Row(kind=kind, raw=raw, original=original, removed=removed))
        new = self.kinds.get(str(data.get(f"{self.prefix}-add", "")))
        if adding and new is not None and not (self.single and self.live_rows()):
            self.rows.append(Row(kind=new, raw={p.name: EMPTY for p in new.params}))

    def live_rows(self) -> list[Row]:
        return [r for r in self.rows if not r.removed]

    def value(self) -> Any:
        """The setting as the JSON holds it, from the rows."""
        entries = []
        for row in self.live_rows():
            if row.kind is None:
                if row.original is not None:
                    entries.append(row.original)
                continue
            untouched = row.original is not None and self.kind_of(row.original) is row.kind
            if untouched and row.raw == self.raw_of(row.kind, row.original):
                entries.append(row.original)
                continue
            values = {p.name: _value(p, t) for p, t in self._inputs(row) if t.strip() != EMPTY}
            entries.append(self.entry_of(row.kind, values, row.original))
        if self.single:
            return entries[0] if entries else {}
        return entries

    def _inputs(self, row: Row) -> list[tuple[Param, str]]:
        assert row.kind is not None
        return [(p, row.raw.get(p.name, EMPTY)) for p in row.kind.params]

    # --- the checks' messages beside the inputs -------------------------------------

    def message_place(self, message: str) -> tuple[int, str] | None:
        """``(row index among the live rows, parameter or "")`` a check's message is
        about (None: the whole setting)."""
        match = re.match(rf"^{self.name}(?:\[(\d+)\])?(?: \(([^)]*)\))?: (\S+)", message)
        if match is None:
            return None
        rows = self.live_rows()
        index = int(match.group(1)) if match.group(1) else 0
        named = match.group(2)
        if named:
            same = [n for n, r in enumerate(rows) if r.kind is not None and r.kind.name == named]
            if len(same) == 1:
                index = same[0]
        return self._place(index, match.group(3))

    def _place(self, index: int, word: str) -> tuple[int, str] | None:
        rows = self.live_rows()
        if not 0 <= index < len(rows):
            return None
        kind = rows[index].kind
        param = word if kind is not None and word in {p.name for p in kind.params} else ""
        return index, param

    def place_messages(self, messages: list[str]) -> None:
        """Put each message beside its input (or on its row, or on the setting)."""
        rows = self.live_rows()
        for message in messages:
            place = self.message_place(message)
            if place is None:
                self.errors.append(message)
                continue
            index, param = place
            if param:
                rows[index].errors.setdefault(param, []).append(message)
            else:
                rows[index].row_errors.append(message)

    # --- what the template draws ----------------------------------------------------

    def context(self) -> dict[str, Any]:
        rows = []
        shown = list(self.rows)
        for n, row in enumerate(shown):
            at = f"{self.prefix}-{n}"
            inputs = []
            if row.kind is not None:
                for p, text in self._inputs(row):
                    inputs.append(self._input(at, p, text, row.errors.get(p.name, [])))
            rows.append(
                {
                    "id": at,
                    "number": n + 1,
                    "kind": row.kind,
                    "kind_name": row.kind.name if row.kind else "",
                    "original_json": json.dumps(row.original) if row.original is not None else "",
                    "raw_json": json.dumps(row.original, ensure_ascii=False)
                    if row.original is not None
                    else "",
                    "inputs": inputs,
                    "removed": row.removed,
                    "row_errors": row.row_errors,
                }
            )
        can_add = not (self.single and self.live_rows())
        return {
            "setting": self,
            "rows": rows,
            "count": len(shown),
            "can_add": can_add,
            "add_choices": [(k.name, k.label) for k in self.kinds.values() if k.offered],
        }

    @staticmethod
    def _input(at: str, p: Param, text: str, errors: list[str]) -> dict[str, Any]:
        default = p.default
        if isinstance(default, bool):
            default_text = "yes" if default else "no"
        elif isinstance(default, list):
            default_text = ", ".join(map(str, default))
        else:
            default_text = "" if default is None else str(default)
        help_parts = [p.help] if p.help else []
        if p.required:
            help_parts.append("Required.")
        elif default_text:
            help_parts.append(f"Default: {default_text}.")
        if p.kind in ("names", "list") and p.options:
            allowed = ", ".join(v for v, _ in p.options)
            help_parts.append(f"One or more of {allowed}, separated by commas.")
        elif p.kind in ("names", "list"):
            help_parts.append("Separate several with commas.")
        if p.minimum is not None or p.maximum is not None:
            low = "" if p.minimum is None else f"{p.minimum:g}"
            high = "" if p.maximum is None else f"{p.maximum:g}"
            help_parts.append(f"From {low} to {high}." if low and high else f"At least {low}.")
        widget = "text"
        options: list[tuple[str, str]] = []
        if p.kind == "boolean":
            widget = "select"
            empty = f"Default ({default_text})" if default_text else "—"
            options = [("", empty), ("true", "yes"), ("false", "no")]
        elif p.kind in ("choice", "stage", "qualification"):
            widget = "select"
            empty = f"Default ({default_text})" if default_text else "— choose —"
            if p.kind == "qualification" or (p.kind == "stage" and not p.required):
                empty = "None"
            options = [("", empty), *p.options]
            if text and text not in {v for v, _ in options}:
                options.append((text, text))  # what was typed stays, and is refused
        elif p.kind in ("number", "integer", "money"):
            widget = "number"
        return {
            "id": f"{at}-{p.name}",
            "name": f"{at}-{p.name}",
            "label": p.label,
            "value": text,
            "widget": widget,
            "step": "1" if p.kind == "integer" else "any",
            "options": options,
            "help": " ".join(help_parts),
            "errors": errors,
        }


class RuleRows(SettingRows):
    add_label = "Add the rule"


class ReviewRuleRows(RuleRows):
    title = "Review rules"
    empty_text = "No review rules: a person reviews every submission in the review queue."

    def __init__(self) -> None:
        kinds = [_rule_kind(n, p) for n, p in stage_rule_kinds("review_rules").items()]
        super().__init__(name="review_rules", prefix="rr", kinds=kinds)


class BonusRuleRows(RuleRows):
    title = "Bonus rules"
    empty_text = "No bonus rules."

    def __init__(self) -> None:
        kinds = [_rule_kind(n, p) for n, p in stage_rule_kinds("bonus_rules").items()]
        super().__init__(name="bonus_rules", prefix="br", kinds=kinds)


class EscalationRows(RuleRows):
    title = "Escalation"
    single = True
    empty_text = "No escalation: each HIT gets its assignments and no more."

    def __init__(self) -> None:
        kinds = [_rule_kind(n, p) for n, p in stage_rule_kinds("escalation_rule").items()]
        super().__init__(name="escalation_rule", prefix="esc", kinds=kinds)


# Requirements the form offers: the system ones (their parameters from the checks that
# saving runs) and those naming a stage or a qualification type.
REQUIREMENT_LABELS = {
    "approval_rate": ("Approval rate", {"min": "Minimum approval rate (%)"}),
    "approved_count": ("Approved assignments", {"min": "Minimum approved assignments"}),
    "country": ("Countries", {"countries": "Countries (ISO codes)", "exclude": "Exclude them"}),
    "locale": ("Countries (locale)", {"countries": "Countries (ISO codes)", "exclude": "Exclude"}),
    "masters": ("Masters", {}),
    "adult": ("Adult content", {}),
}
REFERENCE_LABELS = {
    "quiz_stage": "Passed the quiz of stage",
    "round_stage": "Qualified in a round of stage",
    "graders_stage": "Promoted grader of stage",
}


class RequirementRows(SettingRows):
    """Requirements: a system ``kind``, or the key of a stage reference or a qualification."""

    kind_key = None
    title = "Qualification requirements"
    add_label = "Add the requirement"
    empty_text = "No requirements: any worker of the platform may take the work."

    def __init__(
        self,
        *,
        stages: list[tuple[int, str]],
        qualifications: list[tuple[int, str]],
    ) -> None:
        kinds: list[Kind] = []
        for name, spec in REQUIREMENT_PARAMS.items():
            label, labels = REQUIREMENT_LABELS.get(name, (label_of(name), {}))
            params = tuple(
                Param(
                    name=key,
                    label=labels.get(key, label_of(key)),
                    kind=check.kind,
                    default=default,
                    required=default is None,
                    minimum=check.minimum,
                    maximum=check.maximum,
                )
                for key, (check, default) in spec.items()
            )
            kinds.append(Kind(name=name, label=label, params=params, offered=name != "locale"))
        stage_options = tuple((str(pk), name) for pk, name in stages)
        rounds = Param(name="round", label="Round", kind="integer", default=1, minimum=1)
        for key, label in REFERENCE_LABELS.items():
            stage = Param(
                name=key, label="Stage", kind="stage", required=True, options=stage_options
            )
            extra = (rounds,) if key != "quiz_stage" else ()
            kinds.append(Kind(name=key, label=label, params=(stage, *extra), offered=bool(stages)))
        qualification = Param(
            name="qualification_type_id",
            label="Qualification",
            kind="stage",  # a required choice among the owner's types
            required=True,
            options=tuple((str(pk), name) for pk, name in qualifications),
        )
        score = Param(name="min", label="Minimum score", kind="integer", help="Optional.")
        kinds.append(
            Kind(
                name="qualification_type_id",
                label="Holds your qualification",
                params=(qualification, score),
                offered=bool(qualifications),
            )
        )
        super().__init__(name="qualification_requirements", prefix="req", kinds=kinds)

    def kind_of(self, entry: Any) -> Kind | None:
        if not isinstance(entry, Mapping):
            return None
        if entry.get("kind") is not None:
            name = str(entry["kind"])
        else:
            name = next((k for k in self.kinds if k in entry and k not in REQUIREMENT_PARAMS), "")
        kind = self.kinds.get(name)
        if kind is None:
            return None
        known = {p.name for p in kind.params} | ({"kind"} if name in REQUIREMENT_PARAMS else set())
        if name in ("country", "locale"):
            known |= {"values"}
        return kind if set(entry) <= known else None

    def raw_of(self, kind: Kind, entry: Mapping[str, Any]) -> dict[str, str]:
        raw = super().raw_of(kind, entry)
        if "values" in entry and "countries" not in entry:  # the recipes' older spelling
            raw["countries"] = _raw(
                Param(name="countries", label="", kind="names"), entry["values"]
            )
        return raw

    def entry_of(self, kind: Kind, values: dict[str, Any], original: Any) -> dict[str, Any]:
        base = dict(original) if isinstance(original, Mapping) else {}
        for p in kind.params:
            base.pop(p.name, None)
        if kind.name in ("country", "locale"):
            base.pop("values", None)
        if kind.name in REQUIREMENT_PARAMS:
            base["kind"] = kind.name
        base.update(values)
        return base

    def message_place(self, message: str) -> tuple[int, str] | None:
        match = re.match(r"^requirement (\d+)(?: \([^)]*\))?:? (\S+)", message)
        if match is None:
            return None
        return self._place(int(match.group(1)) - 1, match.group(2))


class HandoffRows(SettingRows):
    """The hand-off: one object whose inputs come from the task type's schema."""

    kind_key = None
    single = True
    plain = True
    title = "Hand-off options"

    def __init__(
        self,
        *,
        schema: Mapping[str, Any],
        stage_keys: tuple[str, ...],
        stages: list[tuple[int, str]],
    ) -> None:
        params = []
        for key, spec in (schema.get("properties") or {}).items():
            params.append(_schema_param(key, spec, stage_keys=stage_keys, stages=stages))
        self.kind = Kind(name="handoff", label="Hand-off", params=tuple(params))
        super().__init__(name="handoff", prefix="ho", kinds=[self.kind])

    def kind_of(self, entry: Any) -> Kind | None:
        if not isinstance(entry, Mapping):
            return None
        return self.kind if set(entry) <= {p.name for p in self.kind.params} else None

    def load(self, value: Any) -> None:
        entry = value if isinstance(value, Mapping) else {}
        kind = self.kind_of(entry)
        raw = {p.name: _raw(p, entry.get(p.name)) for p in self.kind.params} if kind else {}
        self.rows = [Row(kind=kind, raw=raw, original=dict(entry))]

    def load_posted(self, data: Mapping[str, Any], *, adding: bool) -> None:
        super().load_posted(data, adding=False)
        if not self.rows:
            self.rows = [Row(kind=self.kind, raw={p.name: EMPTY for p in self.kind.params})]

    def value(self) -> Any:
        row = self.rows[0] if self.rows else None
        if row is None or row.kind is None:
            return (
                dict(row.original) if row is not None and isinstance(row.original, Mapping) else {}
            )
        if isinstance(row.original, Mapping) and row.raw == {
            p.name: _raw(p, row.original.get(p.name)) for p in self.kind.params
        }:
            return dict(row.original)
        out: dict[str, Any] = {}
        for p, text in self._inputs(row):
            if text.strip():
                out[p.name] = _value(p, text)
        return out

    def message_place(self, message: str) -> tuple[int, str] | None:
        key = message.split(":", 1)[0].split("/", 1)[0].strip()
        return self._place(0, key) if self.rows else None


def _schema_param(
    key: str, spec: Mapping[str, Any], *, stage_keys: tuple[str, ...], stages: list[tuple[int, str]]
) -> Param:
    label = str(spec.get("title") or label_of(key))
    help_text = str(spec.get("description", ""))
    if "enum" in spec or "const" in spec:
        values = spec.get("enum") or [spec.get("const")]
        return Param(
            key, label, "choice", options=tuple((str(v), str(v)) for v in values), help=help_text
        )
    kind = spec.get("type")
    if kind == "boolean":
        return Param(key, label, "boolean", help=help_text)
    if kind == "integer" and key in stage_keys:
        options = tuple((str(pk), name) for pk, name in stages)
        return Param(key, label, "stage", options=options, help=help_text)
    if kind == "integer":
        return Param(key, label, "integer", minimum=spec.get("minimum"), help=help_text)
    if kind == "array":
        items = spec.get("items") or {}
        if "enum" in items:
            options = tuple((str(v), str(v)) for v in items["enum"])
            return Param(key, label, "names", options=options, help=help_text)
        return Param(key, label, "names", help=help_text)
    return Param(key, label, "text", help=help_text)
