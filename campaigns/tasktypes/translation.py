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

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from campaigns.tasktypes.base import (
    Config,
    FieldError,
    FormView,
    Items,
    Rng,
    SimulatedForm,
    form_text,
    object_schema,
    per_item_answer_schema,
    text_errors,
)
from campaigns.tasktypes.per_item import Entry, PerItemTask, item_entries_of

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


class Translation(PerItemTask):
    writes_free_text = True
    name = "translation"
    rows_key = "rows"
    dataset_part = "translations"
    label = "Translate questions"
    description = "Translate each question into the target language (professional translators)."
    input_schema: ClassVar[dict] = object_schema(
        {
            "question": {"type": "string", "minLength": 1, "maxLength": 2000},
            "language": {"type": "string", "pattern": LANGUAGE_CODE},
            "source_id": {"type": "string", "maxLength": 255},
        },
        required=["question", "language"],
    )
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

    def entry_from_form(self, form: Mapping[str, Any], at: str, cfg: Config) -> Entry:
        return {"translation": form_text(form, f"{at}/translation")}

    def entry_errors(self, entry: Entry, data: Entry, at: str, cfg: Config) -> list[FieldError]:
        path, text = f"{at}/translation", entry["translation"]
        problems = text_errors(path, text, what="The translation")
        original = str(data.get("question", ""))
        if not problems and " ".join(text.split()) == " ".join(original.split()):
            problems.append(FieldError(path, "This is the question unchanged: translate it."))
        if data.get("language") not in cfg["languages"]:
            problems.append(FieldError(path, "This stage does not offer that language."))
        return problems

    def aggregate(self, *, answers: list[dict[str, Any]], item: dict[str, Any]) -> dict[str, Any]:
        """``{"language": code, "translations": [str, ...]}`` of the item."""
        found = item_entries_of(answers, item)
        return {
            "language": item.get("data", {}).get("language", ""),
            "translations": [e["translation"] for e in found if e.get("translation")],
        }

    def next_items(
        self, *, answer: dict[str, Any], items: list[dict[str, Any]], handoff: dict[str, Any]
    ) -> Iterable[dict[str, Any]]:
        return []

    def row(self, form: FormView, data: Entry, at: str, entry: Entry, cfg: Config) -> Entry:
        code = str(data.get("language", ""))
        return {
            "question": data.get("question", ""),
            "language": code,
            "language_name": MINTAKA_LANGUAGES.get(code, code),
            "field": form.field(f"{at}/translation", entry.get("translation")),
        }

    def simulate(self, items: Items, cfg: Config, profile: str, rng: Rng) -> SimulatedForm:
        """A stand-in translation (the language code and the question reworded);
        sloppy translators sometimes paste the question unchanged."""
        form: dict[str, list[str]] = {}
        for i, item in enumerate(items):
            data = item.get("data", {})
            question = str(data.get("question", ""))
            text = f"[{data.get('language', '')}] {question}"
            if profile != "good" and rng.random() < 0.3:
                text = question
            form[f"items/{i}/translation"] = [text]
        return form
