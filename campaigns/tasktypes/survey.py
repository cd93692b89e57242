"""A free-form survey (demographics, feedback, exit questions).

Config::

    {"anonymous": false,
     "questions": [{"id": "age", "text": "How old are you?", "kind": "number",
                    "required": true, "min"?: 18, "max"?: 120, "help"?: str},
                   {"id": "lang", "text": str, "kind": "single" | "multiple",
                    "options": [str, ...], "required": false},
                   {"id": "notes", "text": str, "kind": "text" | "long_text",
                    "max_length"?: int}]}

``anonymous: true`` means the responses must be stored apart from the worker's
identity; that storage is done outside this module (the task type only exposes
the flag; it never sees who answers). Items are ignored. Answer::

    {"responses": {"age": 34 | "thirty" (invalid kept) | None,
                   "lang": "English", "notes": str, "multi": [str, ...]}}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from campaigns.tasktypes import base as tt

KINDS = ["text", "long_text", "single", "multiple", "number"]


class Survey(tt.TaskType):
    name = "survey"
    label = "Survey"
    description = "Free-form questions: text, choices and numbers; optionally anonymous."
    config_schema: ClassVar[dict] = {
        "type": "object",
        "required": ["questions"],
        "properties": {
            "anonymous": {
                "type": "boolean",
                "description": "Store answers without the worker's pseudonym.",
            },
            "questions": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "required": ["id", "text", "kind"],
                    "properties": {
                        "id": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,40}$"},
                        "text": {"type": "string", "minLength": 1},
                        "help": {"type": "string"},
                        "kind": {"enum": KINDS},
                        "required": {"type": "boolean"},
                        "options": {"type": "array", "items": {"type": "string", "minLength": 1}},
                        "min": {"type": "number"},
                        "max": {"type": "number"},
                        "max_length": {
                            "type": "integer",
                            "minimum": 1,
                            "maximum": tt.MAX_TEXT_LENGTH,
                        },
                    },
                    "if": {"properties": {"kind": {"enum": ["single", "multiple"]}}},
                    "then": {"required": ["options"], "properties": {"options": {"minItems": 1}}},
                },
            },
        },
    }
    config_defaults: ClassVar[dict[str, Any]] = {"anonymous": False}
    answer_schema: ClassVar[dict] = {
        "type": "object",
        "required": ["responses"],
        "properties": {"responses": {"type": "object"}},
    }

    def validate_config(self, config: Any) -> list[tt.FieldError]:
        errors = super().validate_config(config)
        if not errors:
            ids = [q["id"] for q in config["questions"]]
            if len(set(ids)) != len(ids):
                errors.append(tt.FieldError("questions", "Question ids must be unique."))
        return errors

    def parse_form(
        self, *, form: Mapping[str, Any], items: list[dict[str, Any]], config: dict[str, Any]
    ) -> dict[str, Any]:
        responses: dict[str, Any] = {}
        for q in config.get("questions", []):
            name = f"responses/{q['id']}"
            if q["kind"] == "multiple":
                responses[q["id"]] = tt.form_list(form, name)
            elif q["kind"] == "number":
                responses[q["id"]] = tt.parse_number_or_text(tt.form_text(form, name))
            else:
                responses[q["id"]] = tt.form_text(form, name)
        return {"responses": responses}

    def answer_errors(self, answer: Any, items: tt.Items, cfg: tt.Config) -> list[tt.FieldError]:
        errors: list[tt.FieldError] = []
        responses = answer["responses"]
        known = {q["id"] for q in cfg.get("questions", [])}
        for key in responses:
            if key not in known:
                errors.append(tt.FieldError(f"responses/{key}", "Unknown question."))
        for q in cfg.get("questions", []):
            errors += self._response_errors(q, responses.get(q["id"]))
        return errors

    def _response_errors(self, q: Mapping[str, Any], value: Any) -> list[tt.FieldError]:
        path = f"responses/{q['id']}"
        required = bool(q.get("required"))
        empty = value is None or value == "" or value == []
        if empty:
            return [tt.FieldError(path, "Please answer this question.")] if required else []
        kind = q["kind"]
        if kind in {"text", "long_text"}:
            return tt.text_errors(
                path, value, required=required, max_length=q.get("max_length", tt.MAX_TEXT_LENGTH)
            )
        if kind == "single":
            if value not in q["options"]:
                return [tt.FieldError(path, "Choose one of the options.")]
            return []
        if kind == "multiple":
            if not isinstance(value, list) or any(v not in q["options"] for v in value):
                return [tt.FieldError(path, "Choose among the options shown.")]
            return []
        if isinstance(value, bool) or not isinstance(value, int | float):
            return [tt.FieldError(path, "Enter a number.")]
        if "min" in q and value < q["min"]:
            return [tt.FieldError(path, f"Enter a number of at least {q['min']}.")]
        if "max" in q and value > q["max"]:
            return [tt.FieldError(path, f"Enter a number of at most {q['max']}.")]
        return []

    def page(
        self, form: tt.FormView, items: tt.Items, cfg: tt.Config, answer: Any
    ) -> dict[str, Any]:
        blocks = []
        for q in cfg.get("questions", []):
            value = tt.get_path(answer, "responses", q["id"])
            f = form.field(f"responses/{q['id']}", value)
            chosen = set(value) if isinstance(value, list) else {value}
            blocks.append(
                {
                    "q": q,
                    "field": f,
                    "multiple": q["kind"] == "multiple",
                    "options": [
                        {"value": o, "label": o, "id": f"{f.id}-{n}", "checked": o in chosen}
                        for n, o in enumerate(q.get("options", []))
                    ],
                }
            )
        return {
            "questions": blocks,
            "anonymous": cfg["anonymous"],
        }

    def simulate(
        self, items: tt.Items, cfg: tt.Config, profile: str, rng: tt.Rng
    ) -> tt.SimulatedForm:
        """Good workers answer every question within its limits; sloppy ones skip
        optional ones and sometimes type a number in words; spammers type junk."""
        form: dict[str, list[str]] = {}
        for q in cfg.get("questions", []):
            name = f"responses/{q['id']}"
            kind = q["kind"]
            if profile == "sloppy" and not q.get("required") and rng.random() < 0.5:
                continue
            if profile == "spammer" and rng.random() < 0.6:
                form[name] = [rng.choice(tt.SIM_NOISE_WORDS)]
                continue
            if kind == "number":
                low = float(q.get("min", 18))
                high = float(q.get("max", max(low, 99)))
                value = str(int(rng.uniform(low, high))) if low.is_integer() else str(low)
                if profile == "sloppy" and rng.random() < 0.2:
                    value = "about " + value
                form[name] = [value]
            elif kind == "single":
                form[name] = [rng.choice(q["options"])]
            elif kind == "multiple":
                form[name] = rng.sample(q["options"], rng.randint(1, len(q["options"])))
            else:
                limit = q.get("max_length", tt.MAX_TEXT_LENGTH)
                form[name] = ["Everything worked well for me, thank you."[:limit]]
        return form
