"""GraphQuestions-style paraphrasing of a canonical (machine-generated) question.

Item data::

    {"canonical_question": "what is the number of films directed by steven spielberg?",
     "characteristics": {"edges": 1, "function": "count", "commonness": -12.3,
                         "answer_cardinality": 1},
     "entities": [{"label": "Steven Spielberg", "forms": ["Spielberg", "Steven Spielberg"]}],
     "answer"?: [str]}

``function`` is one of none/count/superlative/comparative. Answer::

    {"items": [{"external_id": str, "paraphrases": [str, ...]}]}

with ``paraphrases_per_item`` (default 1) paraphrases per item. Each must be a
question ("?"), not a trivial variant of the canonical question or of another
paraphrase (``base.trivial_variant_reason``, threshold ``max_similarity``,
default 0.8), and - when ``require_entity_mention`` (default on) - mention
every entity through one of its lexical forms (or its label).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from campaigns.tasktypes.base import (
    SIM_NOISE_WORDS,
    FieldError,
    FormView,
    TaskType,
    answer_for_item,
    derived_external_id,
    form_text,
    get_path,
    item_entry_errors,
    normalise_text,
    per_item_answer_schema,
    schema_errors,
    simulated_rephrasing,
    simulation_profile_check,
    text_errors,
    trivial_variant_reason,
)

FUNCTIONS = ["none", "count", "superlative", "comparative"]


def mentions(text: str, forms: list[str]) -> bool:
    """Whether ``text`` contains one of ``forms`` as whole words (case/punctuation-insensitive)."""
    haystack = f" {normalise_text(text)} "
    return any(f" {normalise_text(form)} " in haystack for form in forms if normalise_text(form))


class ParaphraseCanonical(TaskType):
    name = "paraphrase_canonical"
    label = "Paraphrase a canonical question"
    description = "Rewrite a machine-generated question as a person would ask it."
    template_name = "tasktypes/paraphrase_canonical.html"
    input_schema: ClassVar[dict] = {
        "type": "object",
        "required": ["canonical_question", "characteristics", "entities"],
        "properties": {
            "canonical_question": {"type": "string", "minLength": 1, "maxLength": 2000},
            "characteristics": {
                "type": "object",
                "properties": {
                    "edges": {"type": "integer", "minimum": 0},
                    "function": {"enum": FUNCTIONS},
                    "commonness": {"type": "number"},
                    "answer_cardinality": {"type": "integer", "minimum": 0},
                },
            },
            "entities": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["label"],
                    "properties": {
                        "label": {"type": "string", "minLength": 1},
                        "id": {"type": "string"},
                        "forms": {"type": "array", "items": {"type": "string"}},
                    },
                },
            },
            "answer": {"type": "array", "items": {"type": "string"}},
        },
    }
    config_schema: ClassVar[dict] = {
        "type": "object",
        "properties": {
            "paraphrases_per_item": {
                "type": "integer",
                "minimum": 1,
                "maximum": 5,
                "description": "Paraphrases a worker writes for each canonical question.",
            },
            "max_similarity": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 1,
                "description": "Highest word overlap with the original a paraphrase may have.",
            },
            "require_entity_mention": {
                "type": "boolean",
                "description": "The paraphrase must still name the question's entity.",
            },
        },
    }
    config_defaults: ClassVar[dict[str, Any]] = {
        "paraphrases_per_item": 1,
        "max_similarity": 0.8,
        "require_entity_mention": True,
    }
    answer_schema: ClassVar[dict] = per_item_answer_schema(
        {"paraphrases": {"type": "array", "items": {"type": "string"}}}
    )

    def parse_form(
        self, *, form: Mapping[str, Any], items: list[dict[str, Any]], config: dict[str, Any]
    ) -> dict[str, Any]:
        n = self.effective_config(config)["paraphrases_per_item"]
        return {
            "items": [
                {
                    "external_id": item["external_id"],
                    "paraphrases": [
                        form_text(form, f"items/{i}/paraphrases/{j}") for j in range(n)
                    ],
                }
                for i, item in enumerate(items)
            ]
        }

    def validate_answer(
        self, *, answer: Any, items: list[dict[str, Any]], config: dict[str, Any]
    ) -> list[FieldError]:
        errors = schema_errors(self.answer_schema, answer) or item_entry_errors(answer, items)
        if errors:
            return errors
        cfg = self.effective_config(config)
        for i, (entry, item) in enumerate(zip(answer["items"], items, strict=True)):
            data = item["data"]
            paraphrases = entry["paraphrases"]
            if len(paraphrases) != cfg["paraphrases_per_item"]:
                errors.append(
                    FieldError(
                        f"items/{i}/paraphrases",
                        f"Write exactly {cfg['paraphrases_per_item']} paraphrase(s).",
                    )
                )
            for j, text in enumerate(paraphrases):
                errors += self._paraphrase_errors(
                    f"items/{i}/paraphrases/{j}", text, data, paraphrases[:j], cfg
                )
        return errors

    def _paraphrase_errors(
        self, path: str, text: str, data: dict[str, Any], earlier: list[str], cfg: dict[str, Any]
    ) -> list[FieldError]:
        problems = text_errors(path, text, what="The paraphrase")
        if problems:
            return problems
        if not text.endswith("?"):
            return [FieldError(path, 'Write a question ending with "?".')]
        reason = trivial_variant_reason(
            text, data["canonical_question"], max_similarity=cfg["max_similarity"]
        )
        if reason:
            return [FieldError(path, reason)]
        for other in earlier:
            if trivial_variant_reason(text, other, max_similarity=cfg["max_similarity"]):
                return [FieldError(path, "This paraphrase is almost the same as an earlier one.")]
        if cfg["require_entity_mention"]:
            missing = [
                e["label"]
                for e in data.get("entities", [])
                if not mentions(text, [e["label"], *e.get("forms", [])])
            ]
            if missing:
                return [
                    FieldError(
                        path, "Mention " + ", ".join(missing) + " (or a listed name for it)."
                    )
                ]
        return []

    def aggregate(self, *, answers: list[dict[str, Any]], item: dict[str, Any]) -> dict[str, Any]:
        """``{"paraphrases": [str, ...]}`` without normalised duplicates."""
        seen: set[str] = set()
        out = []
        for answer in answers:
            entry = answer_for_item(answer, item) or {}
            for text in entry.get("paraphrases", []):
                key = normalise_text(text)
                if key and key not in seen:
                    seen.add(key)
                    out.append(text)
        return {"paraphrases": out}

    def next_items(
        self, *, answer: dict[str, Any], items: list[dict[str, Any]], handoff: dict[str, Any]
    ) -> Iterable[dict[str, Any]]:
        """Each paraphrase as ``{"question", "canonical_question", "characteristics"}``."""
        out = []
        for i, entry in enumerate(answer.get("items", [])[: len(items)]):
            data = items[i]["data"]
            for j, text in enumerate(entry.get("paraphrases", [])):
                out.append(
                    {
                        "external_id": derived_external_id(
                            str(items[i].get("external_id", "")), f"p{j + 1}", text
                        ),
                        "data": {
                            "question": text,
                            "canonical_question": data["canonical_question"],
                            "characteristics": data.get("characteristics", {}),
                        },
                    }
                )
        return out

    def view(
        self,
        *,
        items: list[dict[str, Any]],
        config: dict[str, Any],
        answer: Any,
        errors: Mapping[str, str],
        preview: bool,
    ) -> dict[str, Any]:
        cfg = self.effective_config(config)
        form = FormView(errors=errors, preview=preview)
        blocks = []
        for i, item in enumerate(items):
            data = item.get("data", {})
            blocks.append(
                {
                    "number": i + 1,
                    "canonical_question": data.get("canonical_question", ""),
                    "characteristics": data.get("characteristics", {}),
                    "entities": data.get("entities", []),
                    "count_error": form.error(f"items/{i}/paraphrases"),
                    "fields": [
                        form.field(
                            f"items/{i}/paraphrases/{j}",
                            get_path(answer, "items", i, "paraphrases", j),
                        )
                        for j in range(cfg["paraphrases_per_item"])
                    ],
                }
            )
        return {"items": blocks, "general_errors": form.general_errors()}

    def simulate_form(
        self,
        *,
        items: list[dict[str, Any]],
        config: dict[str, Any],
        profile: str,
        rng: random.Random,
    ) -> dict[str, list[str]]:
        """Good workers reword the canonical question, keeping every entity's label;
        sloppy ones sometimes drop an entity or the "?"; spammers paste the
        canonical question or junk."""
        simulation_profile_check(profile)
        cfg = self.effective_config(config)
        n = cfg["paraphrases_per_item"]
        form: dict[str, list[str]] = {}
        # A sloppy worker slips on at most one paraphrase of the HIT.
        careless = rng.randrange(len(items) * n) if items and rng.random() < 0.3 else -1
        for i, item in enumerate(items):
            data = item.get("data", {})
            canonical = str(data.get("canonical_question", ""))
            labels = [str(e.get("label", "")) for e in data.get("entities", []) if e.get("label")]
            core = canonical
            missing = [label for label in labels if not mentions(core, [label])]
            if missing:  # a canonical question may name an entity by another form
                core = f"{canonical.rstrip('?').strip()} ({', '.join(missing)})?"
            done: list[str] = []
            for j in range(n):
                text = simulated_rephrasing(
                    core, rng=rng, max_similarity=cfg["max_similarity"], avoid=[canonical, *done]
                )
                if profile == "sloppy" and i * n + j == careless:
                    text = rng.choice([text.rstrip("?"), canonical.upper()])
                elif profile == "spammer":
                    text = rng.choice([canonical, f"{rng.choice(SIM_NOISE_WORDS)}?", text])
                done.append(text)
                form[f"items/{i}/paraphrases/{j}"] = [text]
        return form
