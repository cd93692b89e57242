"""Translation: translate each question of the HIT into one target language.

Mintaka §4.4 (Sen, Aji and Saffari, COLING 2022) translated its 20,000 English
questions into eight languages with professional translators, not the crowd: early
crowd trials gave poor results and too few workers in some languages. This task
type is meant for such translators on the local workforce.

Item data: ``{"question": str, "language": str (a code, e.g. "ja"),
"source_id"?: str (the example the question belongs to)}``. Config: ``languages``
(the codes offered, default Mintaka's eight). Answer::

    {"items": [{"external_id": str, "translation": str}, ...]}

A translation is refused when empty, too long, or the question copied unchanged.
``question_writing`` hands its pairs here when its hand-off names this stage
(``translate_to``) and the languages wanted (``translate_languages``); the Mintaka
export puts accepted translations in ``translations``.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from campaigns.tasktypes.base import (
    FieldError,
    FormView,
    TaskType,
    answer_for_item,
    form_text,
    get_path,
    item_entry_errors,
    per_item_answer_schema,
    schema_errors,
    simulation_profile_check,
    text_errors,
)

# Mintaka §4.4: the languages and the locales its translators wrote for.
MINTAKA_LANGUAGES: dict[str, str] = {
    "ar": "Arabic (Saudi Arabia)",
    "de": "German (Germany)",
    "es": "Spanish (Mexico)",
    "fr": "French (France)",
    "hi": "Hindi (India)",
    "it": "Italian (Italy)",
    "ja": "Japanese (Japan)",
    "pt": "Portuguese (Brazil)",
}
LANGUAGE_CODE = r"^[a-z]{2,3}(?:-[A-Za-z0-9]{2,8})?$"


def translation_external_id(source_id: str, language: str) -> str:
    """The id of the item translating example ``source_id`` into ``language``."""
    return f"{source_id}/tr-{language}"


class Translation(TaskType):
    name = "translation"
    dataset_part = "translations"
    label = "Translate questions"
    description = "Translate each question into the target language (professional translators)."
    template_name = "tasktypes/translation.html"
    input_schema: ClassVar[dict] = {
        "type": "object",
        "required": ["question", "language"],
        "properties": {
            "question": {"type": "string", "minLength": 1, "maxLength": 2000},
            "language": {"type": "string", "pattern": LANGUAGE_CODE},
            "source_id": {"type": "string", "maxLength": 255},
        },
    }
    # The upload template's example row (a language code, not a placeholder word).
    example_item: ClassVar[dict[str, Any] | None] = {
        "question": "Which river is longer, the Nile or the Amazon?",
        "language": "de",
    }
    config_schema: ClassVar[dict] = {
        "type": "object",
        "properties": {
            "languages": {
                "type": "array",
                "items": {"type": "string", "pattern": LANGUAGE_CODE},
                "minItems": 1,
                "uniqueItems": True,
            }
        },
    }
    config_defaults: ClassVar[dict[str, Any]] = {"languages": sorted(MINTAKA_LANGUAGES)}
    answer_schema: ClassVar[dict] = per_item_answer_schema({"translation": {"type": "string"}})

    def parse_form(
        self, *, form: Mapping[str, Any], items: list[dict[str, Any]], config: dict[str, Any]
    ) -> dict[str, Any]:
        return {
            "items": [
                {
                    "external_id": item["external_id"],
                    "translation": form_text(form, f"items/{i}/translation"),
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
        offered = set(self.effective_config(config)["languages"])
        for i, (entry, item) in enumerate(zip(answer["items"], items, strict=True)):
            path = f"items/{i}/translation"
            text = entry["translation"]
            problems = text_errors(path, text, what="The translation")
            original = str(item["data"].get("question", ""))
            if not problems and " ".join(text.split()) == " ".join(original.split()):
                problems.append(FieldError(path, "This is the question unchanged: translate it."))
            if item["data"].get("language") not in offered:
                problems.append(FieldError(path, "This stage does not offer that language."))
            errors += problems
        return errors

    def aggregate(self, *, answers: list[dict[str, Any]], item: dict[str, Any]) -> dict[str, Any]:
        """``{"language": code, "translations": [str, ...]}`` of the item."""
        found = [answer_for_item(a, item) for a in answers]
        return {
            "language": item.get("data", {}).get("language", ""),
            "translations": [e["translation"] for e in found if e and e.get("translation")],
        }

    def next_items(
        self, *, answer: dict[str, Any], items: list[dict[str, Any]], handoff: dict[str, Any]
    ) -> Iterable[dict[str, Any]]:
        return []

    def view(
        self,
        *,
        items: list[dict[str, Any]],
        config: dict[str, Any],
        answer: Any,
        errors: Mapping[str, str],
        preview: bool,
    ) -> dict[str, Any]:
        form = FormView(errors=errors, preview=preview)
        rows = []
        for i, item in enumerate(items):
            data = item.get("data", {})
            code = str(data.get("language", ""))
            rows.append(
                {
                    "number": i + 1,
                    "question": data.get("question", ""),
                    "language": code,
                    "language_name": MINTAKA_LANGUAGES.get(code, code),
                    "field": form.field(
                        f"items/{i}/translation", get_path(answer, "items", i, "translation")
                    ),
                }
            )
        return {"rows": rows, "general_errors": form.general_errors()}

    def simulate_form(
        self,
        *,
        items: list[dict[str, Any]],
        config: dict[str, Any],
        profile: str,
        rng: random.Random,
    ) -> dict[str, list[str]]:
        """A stand-in translation (the language code and the question reworded);
        sloppy translators sometimes paste the question unchanged."""
        simulation_profile_check(profile)
        form: dict[str, list[str]] = {}
        for i, item in enumerate(items):
            data = item.get("data", {})
            question = str(data.get("question", ""))
            text = f"[{data.get('language', '')}] {question}"
            if profile != "good" and rng.random() < 0.3:
                text = question
            form[f"items/{i}/translation"] = [text]
        return form
