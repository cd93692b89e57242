"""Rephrasing: write one rephrasing of each question in the HIT.

Item data: ``{"question": str, "context"?: str}``; a HIT holds ``items_per_hit``
questions (WhyQA: 5). Answer::

    {"items": [{"external_id": str, "rephrasing": str}, ...]}

A rephrasing is rejected when it is trivially the same as the original (see
``base.trivial_variant_reason``): equal after normalising case, punctuation and
whitespace, or a content-word token-set Jaccard similarity (stop words and word
order ignored) of at least ``max_similarity`` (default 0.8).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from campaigns.tasktypes import base as tt
from campaigns.tasktypes.per_item import Entry, PerItemTask, item_entries_of


class Rephrase(PerItemTask):
    writes_free_text = True
    name = "rephrase"
    rows_key = "rows"
    label = "Rephrase questions"
    description = "Rewrite each question in different words, keeping its meaning."
    input_schema: ClassVar[dict] = tt.object_schema(
        {
            "question": {"type": "string", "minLength": 1, "maxLength": 2000},
            "context": {"type": "string"},
        },
        required=["question"],
    )
    config_schema: ClassVar[dict] = {
        "type": "object",
        "properties": {
            "max_similarity": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 1,
                "description": "Highest word overlap with the question a rephrasing may have.",
            },
            "require_question_mark": {
                "type": "boolean",
                "description": "Each rephrasing must end with a question mark.",
            },
        },
    }
    config_defaults: ClassVar[dict[str, Any]] = {
        "max_similarity": 0.8,
        "require_question_mark": True,
    }
    answer_schema: ClassVar[dict] = tt.per_item_answer_schema({"rephrasing": {"type": "string"}})
    handoff_schema: ClassVar[dict] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"include_original": {"type": "boolean"}},
    }

    def entry_from_form(self, form: Mapping[str, Any], at: str, cfg: tt.Config) -> Entry:
        return {"rephrasing": tt.form_text(form, f"{at}/rephrasing")}

    def entry_errors(
        self, entry: Entry, data: Entry, at: str, cfg: tt.Config
    ) -> list[tt.FieldError]:
        path, text = f"{at}/rephrasing", entry["rephrasing"]
        problems = tt.text_errors(path, text, what="The rephrasing")
        if not problems and cfg["require_question_mark"] and not text.endswith("?"):
            problems.append(tt.FieldError(path, 'End the question with "?".'))
        if not problems:
            reason = tt.trivial_variant_reason(
                text, data["question"], max_similarity=cfg["max_similarity"]
            )
            if reason:
                problems.append(tt.FieldError(path, reason))
        return problems

    def aggregate(self, *, answers: list[dict[str, Any]], item: dict[str, Any]) -> dict[str, Any]:
        """``{"rephrasings": [str, ...]}``: every worker's rephrasing of the item."""
        found = item_entries_of(answers, item)
        return {"rephrasings": [e["rephrasing"] for e in found if e.get("rephrasing")]}

    def next_items(
        self, *, answer: dict[str, Any], items: list[dict[str, Any]], handoff: dict[str, Any]
    ) -> Iterable[dict[str, Any]]:
        """Each rephrasing as ``{"question": ...}`` (plus ``original_question`` if asked)."""
        out = []
        for i, entry in enumerate(answer.get("items", [])):
            if i >= len(items):
                break
            data: dict[str, Any] = {"question": entry["rephrasing"]}
            if handoff.get("include_original", True):
                data["original_question"] = items[i]["data"]["question"]
            out.append(
                {
                    "external_id": tt.derived_external_id(
                        str(items[i].get("external_id", "")), "r", entry["rephrasing"]
                    ),
                    "data": data,
                }
            )
        return out

    def row(self, form: tt.FormView, data: Entry, at: str, entry: Entry, cfg: tt.Config) -> Entry:
        return {
            "question": data.get("question", ""),
            "context": data.get("context", ""),
            "field": form.field(f"{at}/rephrasing", entry.get("rephrasing")),
        }

    def model_task(self, *, data: Mapping[str, Any], config: Mapping[str, Any]) -> tuple[str, Any]:
        """Asks for a rephrasing of the item's question (the passage: that question)."""
        question = str(data.get("question", ""))
        return (
            f"Rewrite this question in different words, keeping its meaning: {question}",
            [question],
        )

    def simulate(
        self, items: tt.Items, cfg: tt.Config, profile: str, rng: tt.Rng
    ) -> tt.SimulatedForm:
        """Good workers reword each question; sloppy ones sometimes only change its case
        or drop the "?"; spammers paste the original or junk."""
        form: dict[str, list[str]] = {}
        # A sloppy worker slips on at most one question of the HIT.
        careless = rng.randrange(len(items)) if items and rng.random() < 0.3 else -1
        for i, item in enumerate(items):
            original = str(item.get("data", {}).get("question", ""))
            text = tt.simulated_rephrasing(original, rng=rng, max_similarity=cfg["max_similarity"])
            if profile == "sloppy" and i == careless:
                text = rng.choice([original.lower(), text.rstrip("?")])
            elif profile == "spammer":
                text = rng.choice([original, original, f"{rng.choice(tt.SIM_NOISE_WORDS)}?", text])
            form[f"items/{i}/rephrasing"] = [text]
        return form
