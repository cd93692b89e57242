"""Validation of a multiple-choice question: pick the right option, or flag it invalid.

Item data: ``{"passage", "question", "options": [4 x str], "title"?: str,
"writer_correct"?: 0..3}`` (``writer_correct`` is never rendered). Answer
(one entry per item)::

    {"items": [{"external_id": str, "choice": 0..3 | "invalid" | None | str}]}

``aggregate`` takes the majority vote over the validators and the writer's
label (Nangia et al. 2021): no strict majority, or a majority for "invalid",
means the example is discarded.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, ClassVar

from campaigns.tasktypes import base as tt
from campaigns.tasktypes.mc_question_writing import OPTION_LETTERS
from campaigns.tasktypes.per_item import Entry, PerItemTask

INVALID = "invalid"


class MCValidation(PerItemTask):
    name = "mc_validation"
    judges_others_work = True
    label = "Validate a multiple-choice question"
    description = "Answer a multiple-choice question, or flag it as invalid."
    input_schema: ClassVar[dict] = tt.object_schema(
        {
            "passage": {"type": "string", "minLength": 1},
            "title": {"type": "string"},
            "question": {"type": "string", "minLength": 1},
            "options": {"type": "array", "minItems": 4, "maxItems": 4, "items": {"type": "string"}},
            "writer_correct": {"type": "integer", "minimum": 0, "maximum": 3},
        },
        required=["passage", "question", "options"],
    )
    # ``ten_way`` (Nangia et al. §4): a random subset validated by ``annotators`` people,
    # ``gold_votes`` of them voting the gold label (``validation.ten_way``).
    config_schema: ClassVar[dict] = {
        "type": "object",
        "properties": {
            "ten_way": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "enabled": {"type": "boolean"},
                    "per_arm": {"type": "integer", "minimum": 1},
                    "annotators": {"type": "integer", "minimum": 2, "maximum": 100},
                    "gold_votes": {"type": "integer", "minimum": 1, "maximum": 99},
                },
            }
        },
    }
    answer_schema: ClassVar[dict] = tt.per_item_answer_schema(
        {"choice": {"type": ["integer", "string", "null"]}}
    )

    def entry_from_form(self, form: Mapping[str, Any], at: str, cfg: tt.Config) -> Entry:
        return {"choice": tt.parse_int_or_text(tt.form_text(form, f"{at}/choice"))}

    def entry_errors(
        self, entry: Entry, data: Entry, at: str, cfg: tt.Config
    ) -> list[tt.FieldError]:
        choice, n = entry["choice"], len(data.get("options", []))
        if choice != INVALID and not (isinstance(choice, int) and 0 <= choice < n):
            return [
                tt.FieldError(f"{at}/choice", "Choose an option, or mark the question invalid.")
            ]
        return []

    def aggregate(self, *, answers: list[dict[str, Any]], item: dict[str, Any]) -> dict[str, Any]:
        """``{"votes": {"0".."3"|"invalid": n}, "majority": label | None, "keep": bool,
        "writer_agrees": bool | None}``; the writer's label counts as one vote."""
        data = item.get("data", {})
        votes: Counter[str] = Counter()
        for answer in answers:
            entry = tt.answer_for_item(answer, item)
            if entry is not None and entry.get("choice") is not None:
                votes[str(entry["choice"])] += 1
        validator_votes = dict(votes)
        writer = data.get("writer_correct")
        if isinstance(writer, int):
            votes[str(writer)] += 1
        total = sum(votes.values())
        top = votes.most_common(1)
        majority = top[0][0] if top and top[0][1] * 2 > total else None
        return {
            "votes": validator_votes,
            "majority": majority,
            "keep": majority is not None and majority != INVALID,
            "writer_agrees": None if not isinstance(writer, int) else majority == str(writer),
        }

    def row(self, form: tt.FormView, data: Entry, at: str, entry: Entry, cfg: tt.Config) -> Entry:
        f = form.field(f"{at}/choice", entry.get("choice"))
        choices: list[dict[str, Any]] = [
            {"value": str(o), "label": f"{OPTION_LETTERS[o]}. {t}", "id": f"{f.id}-{o}"}
            for o, t in enumerate(data.get("options", [])[:4])
        ]
        choices.append(
            {
                "value": INVALID,
                "label": "The question is invalid: no option or more than one option is correct",
                "id": f"{f.id}-{INVALID}",
            }
        )
        for c in choices:
            c["checked"] = str(f.value) == c["value"] and f.value != ""
        return {
            "title": data.get("title", ""),
            "passage": data.get("passage", ""),
            "question": data.get("question", ""),
            "field": f,
            "choices": choices,
        }

    def simulate(
        self, items: tt.Items, cfg: tt.Config, profile: str, rng: tt.Rng
    ) -> tt.SimulatedForm:
        """Good workers mostly find the writer's option; sloppy ones guess; spammers
        always pick A or leave the question unanswered."""
        form: dict[str, list[str]] = {}
        for i, item in enumerate(items):
            data = item.get("data", {})
            n = len(data.get("options", [])) or 4
            writer = data.get("writer_correct")
            if profile == "good":
                choice = str(writer) if isinstance(writer, int) and rng.random() < 0.9 else None
                choice = choice or (INVALID if rng.random() < 0.05 else str(rng.randrange(n)))
            elif profile == "sloppy":
                choice = rng.choice([*(str(o) for o in range(n)), INVALID, ""])
            else:
                choice = rng.choice(["0", "0", ""])
            if choice:
                form[f"items/{i}/choice"] = [choice]
        return form
