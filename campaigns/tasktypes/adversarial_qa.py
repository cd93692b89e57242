"""Adversarial QA on passages ("Beat the AI", Bartolo et al. 2020; Dynabench, Kiela et
al. 2021): write a question about a passage whose answer sentence a model gets wrong,
then have others confirm the claimed fools.

Writing item data (one passage per item)::

    {"passage_id"?: str, "title"?: str, "sentences": ["...", ...]}

Writing answer (one entry per item; sentence ids are 0-based)::

    {"items": [{"external_id": str, "question": str, "sentences": [int]}]}

With the stage's ``adversarial`` option (``base.adversarial_config``) the worker puts the
question to the model before submitting; the app judges the model's answer itself
(``model_answer_judge``: the sentence the model answered with, against the worker's),
and the tries are recorded by the assist room, which adds what the writer claimed to the
stored answer under ``"adversarial"`` (``{"<external id>": {"try", "question",
"sentences", "model_answer", "model_id", "fooled"}}``). ``next_items`` hands each claimed
fool to the validation stage (``adversarial_fool_validation``) with the model's answer.

Validation item data (``fool_items`` makes them; one of three kinds of writer's answer)::

    {"question": str, "model_answer": str,
     "source": {"assignment": int, "item": int, "try": int},
     # a passage question: the passage and the writer's sentences
     "title"?: str, "sentences"?: [...], "writer_sentences"?: [int],
     # Mintaka's question writing: the answer as written, its Wikidata id if given
     "topic"?: str, "writer_answer"?: str, "writer_entity"?: str,
     # multiple-choice writing: the passage, the lettered options and the writer's mark
     "passage"?: str, "options"?: [{"id": "A", "text": str}, ...], "writer_option"?: str}

Validation answer: ``{"items": [{"external_id", "verdict": "fooled" | "model_right" |
"invalid"}]}``; "fooled" confirms the fool (``fool_verdict``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar

from campaigns.tasktypes.base import (
    Config,
    FieldError,
    FormView,
    Items,
    Rng,
    SimulatedForm,
    TaskType,
    content_tokens,
    count_setting,
    derived_external_id,
    form_list,
    form_text,
    normalise_text,
    object_schema,
    parse_int_or_text,
    per_item_answer_schema,
    text_errors,
)
from campaigns.tasktypes.per_item import Entry, PerItemTask

PASSAGE_SCHEMA: dict[str, Any] = object_schema(
    {
        "passage_id": {"type": "string", "maxLength": 200},
        "title": {"type": "string", "maxLength": 300},
        "sentences": {
            "type": "array",
            "minItems": 1,
            "maxItems": 400,
            "items": {"type": "string", "minLength": 1},
        },
    },
    required=["sentences"],
)

VERDICTS = ("fooled", "model_right", "invalid")
VERDICT_LABELS = {
    "fooled": "The writer's answer is right and the model's is wrong",
    "model_right": "The model's answer is right too",
    "invalid": "The question or the writer's answer is wrong",
}


def sentences_matching(sentences: list[str], answer: str) -> frozenset[int]:
    """The sentences an answer text points at: those it equals or lies within, else
    those it quotes whole; empty when it matches none."""
    wanted = normalise_text(answer)
    if not wanted:
        return frozenset()
    normalised = [normalise_text(s) for s in sentences]
    within = frozenset(i for i, s in enumerate(normalised) if s and wanted in s)
    if within:
        return within
    return frozenset(i for i, s in enumerate(normalised) if s and s in wanted)


def _sentence_ids(value: Any) -> frozenset[int]:
    return frozenset(s for s in value or () if isinstance(s, int))


def fool_items(
    *,
    answer: Mapping[str, Any],
    items: list[dict[str, Any]],
    handoff: Mapping[str, Any],
    shown: Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, Any]],
    route: str | None = None,
) -> list[dict[str, Any]]:
    """The hand-off of claimed fools to ``adversarial_fool_validation``, for any task
    type writing adversarially: each item's claim recorded under ``answer["adversarial"]``
    (the try the writer ended on) that fooled the model (every claim with ``{"only_fools":
    false}``) becomes a validation item with the question, the model's answer and the
    try (``source``), and what ``shown(item data, claim)`` adds of the writer's answer.
    ``route`` marks the items for a side stage of the hand-off (None: the next stage)."""
    claimed = answer.get("adversarial")
    if not isinstance(claimed, Mapping):
        return []
    only_fools = handoff.get("only_fools", True)
    out = []
    for item in items:
        external_id = str(item.get("external_id", ""))
        record = claimed.get(external_id)
        if not isinstance(record, Mapping) or (only_fools and record.get("fooled") is not True):
            continue
        produced = {
            **shown(item.get("data", {}), record),
            "question": str(record.get("question", "")),
            "model_answer": str(record.get("model_answer", "")),
            "source": {
                "assignment": int(record.get("assignment", 0)),
                "item": int(record.get("item", 0)),
                "try": int(record.get("try", 1)),
            },
        }
        made = {
            "external_id": derived_external_id(external_id, "v", produced["question"]),
            "data": produced,
        }
        if route is not None:
            made["route"] = route
        out.append(made)
    return out


class FoolsHandingWriter(TaskType):
    """A writing task type whose hand-off, with the adversarial option, sends claimed
    fools (``fool_items``) to the next stage with ``target:
    "adversarial_fool_validation"`` (only them), or beside its usual items to the stage
    ``fools_to`` names (``fools_beside``)."""

    def fool_routes(self, *, handoff: Mapping[str, Any]) -> frozenset[str | None]:
        """The next stage with ``target: "adversarial_fool_validation"``; ``fools_to``."""
        routes: set[str | None] = set()
        if handoff.get("target") == "adversarial_fool_validation":
            routes.add(None)
        if handoff.get("fools_to") is not None:
            routes.add("fools_to")
        return frozenset(routes)

    def fools_beside(
        self,
        *,
        answer: Mapping[str, Any],
        items: list[dict[str, Any]],
        handoff: Mapping[str, Any],
        shown: Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, Any]],
    ) -> list[dict[str, Any]]:
        """The claimed fools for the stage ``fools_to`` names (``route: "fools_to"``),
        handed on beside the usual items; none without ``fools_to``."""
        if handoff.get("fools_to") is None:
            return []
        return fool_items(
            answer=answer, items=items, handoff=handoff, shown=shown, route="fools_to"
        )


def _passage_shown(data: Mapping[str, Any], record: Mapping[str, Any]) -> dict[str, Any]:
    shown: dict[str, Any] = {
        "sentences": list(data.get("sentences", [])),
        "writer_sentences": list(_sentence_ids(record.get("sentences"))),
    }
    if data.get("title"):
        shown["title"] = str(data["title"])
    return shown


class AdversarialPassageQuestion(PerItemTask):
    name = "adversarial_passage_question"
    label = "Write a question the model gets wrong (passage)"
    description = (
        "Write a question about a passage and select the sentence that answers it; "
        "with the adversarial option a model answers it and the worker tries to beat it."
    )
    writes_adversarially = True
    input_schema: ClassVar[dict] = PASSAGE_SCHEMA
    config_schema: ClassVar[dict] = {
        "type": "object",
        "properties": {
            "max_sentences": count_setting(5, "Most sentences a worker may select as the answer."),
        },
    }
    config_defaults: ClassVar[dict[str, Any]] = {"max_sentences": 1}
    handoff_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"only_fools": {"type": "boolean"}},
    }
    answer_schema: ClassVar[dict] = per_item_answer_schema(
        {
            "question": {"type": "string"},
            "sentences": {"type": "array", "items": {"type": ["integer", "string"]}},
        }
    )
    text_fields: ClassVar[tuple[str, ...]] = ("question",)

    def entry_from_form(self, form: Mapping[str, Any], at: str, cfg: Config) -> Entry:
        return {
            "question": form_text(form, f"{at}/question"),
            "sentences": [parse_int_or_text(v) for v in form_list(form, f"{at}/sentences")],
        }

    def entry_errors(self, entry: Entry, data: Entry, at: str, cfg: Config) -> list[FieldError]:
        errors = text_errors(f"{at}/question", entry["question"], what="The question")
        question = entry["question"]
        if not errors and not question.rstrip().endswith("?"):
            errors.append(FieldError(f"{at}/question", 'End the question with "?".'))
        chosen = entry["sentences"]
        count = len(data.get("sentences", []))
        limit, path = cfg["max_sentences"], f"{at}/sentences"
        if not chosen:
            errors.append(FieldError(path, "Select the sentence that answers your question."))
        elif len(chosen) > limit:
            errors.append(FieldError(path, f"Select at most {limit} sentences."))
        elif any(not isinstance(s, int) or not 0 <= s < count for s in chosen):
            errors.append(FieldError(path, "Select sentences from the passage."))
        elif len(set(chosen)) != len(chosen):
            errors.append(FieldError(path, "Each sentence can be selected once."))
        return errors

    def row(self, form: FormView, data: Entry, at: str, entry: Entry, cfg: Config) -> Entry:
        chosen = {str(s) for s in entry.get("sentences", [])}
        field = form.field(f"{at}/sentences")
        return {
            "title": data.get("title", ""),
            "question": form.field(f"{at}/question", entry.get("question")),
            "sentences_field": field,
            "sentences": [
                {
                    "index": j,
                    "number": j + 1,
                    "text": text,
                    "checked": str(j) in chosen,
                    "id": f"{field.id}-{j}",
                }
                for j, text in enumerate(data.get("sentences", []))
            ],
            "max_sentences": cfg["max_sentences"],
        }

    # --- Model in the loop ---------------------------------------------------------------

    def adversarial_question(
        self, *, entry: Mapping[str, Any], data: Mapping[str, Any]
    ) -> tuple[str, Any]:
        """The worker's question, asked on the passage's sentences."""
        return str(entry.get("question", "")), [str(s) for s in data.get("sentences", [])]

    def model_answer_judge(
        self, *, entry: Mapping[str, Any], data: Mapping[str, Any], model_answer: str
    ) -> bool | None:
        """Sentence ids: the model is right when the sentences its answer points at are
        among the worker's, wrong when none is; None when its answer matches no sentence
        or straddles the worker's and others (the worker marks it), unless the entry
        states a typed answer too (an entity id, number, date or option: the base's)."""
        mine = _sentence_ids(entry.get("sentences"))
        theirs = sentences_matching([str(s) for s in data.get("sentences", [])], model_answer)
        if not mine or not theirs:
            return super().model_answer_judge(entry=entry, data=data, model_answer=model_answer)
        if theirs <= mine:
            return True
        if not theirs & mine:
            return False
        return None

    def fool_routes(self, *, handoff: Mapping[str, Any]) -> frozenset[str | None]:
        return frozenset({None})

    def next_items(
        self, *, answer: dict[str, Any], items: list[dict[str, Any]], handoff: dict[str, Any]
    ) -> Iterable[dict[str, Any]]:
        """Each claimed fool (the try the writer ended on, recorded under
        ``answer["adversarial"]``) becomes a validation item carrying the passage, the
        question, the writer's sentences and the model's answer; with ``{"only_fools":
        false}`` tries that did not fool the model are handed on too."""
        return fool_items(answer=answer, items=items, handoff=handoff, shown=_passage_shown)

    def simulate(self, items: Items, cfg: Config, profile: str, rng: Rng) -> SimulatedForm:
        """Good workers ask about a sentence with a word or two of it, or (two times in
        five) with words of the next sentence, which leads word-overlap retrieval astray;
        sloppy ones sometimes forget the "?"; spammers type noise or nothing and tick
        every sentence."""
        form: dict[str, list[str]] = {}
        for i, item in enumerate(items):
            sentences = [str(s) for s in item.get("data", {}).get("sentences", [])]
            j = rng.randrange(len(sentences))
            words = sorted(content_tokens(sentences[j])) or ["this"]
            if profile == "good" and len(sentences) > 1 and rng.random() < 0.4:
                # An adversarial phrasing: the words of a neighbouring sentence lead a
                # word-overlap model astray from the answer.
                other = sorted(content_tokens(sentences[(j + 1) % len(sentences)]))
                words = other or words
            if profile == "good":
                picked = rng.sample(words, min(len(words), rng.randint(1, 2)))
                question = f"What does the passage say about {' and '.join(picked)}?"
            elif profile == "sloppy":
                mark = "?" if rng.random() < 0.8 else ""
                question = f"what about {rng.choice(words)}{mark}"
            else:
                question = "asdf" if rng.random() < 0.5 else ""
            chosen = [str(j)]
            if profile == "spammer" and rng.random() < 0.5:
                chosen = [str(k) for k in range(len(sentences))]
            form[f"items/{i}/question"] = [question]
            form[f"items/{i}/sentences"] = chosen
        return form


class AdversarialFoolValidation(PerItemTask):
    name = "adversarial_fool_validation"
    label = "Confirm that a question fooled the model"
    description = (
        "Read a question, the writer's answer (on its passage, where there is one) and the "
        "model's answer, and say whether the writer is right and the model wrong."
    )
    # The upload template's example row: the writer's answer as written (one of the three
    # shapes ``anyOf`` allows; the template's columns name the others).
    example_item: ClassVar[dict[str, Any] | None] = {
        "question": "Who wrote The Hitchhiker's Guide to the Galaxy?",
        "topic": "books",
        "writer_answer": "Douglas Adams",
        "writer_entity": "Q42",
        "model_answer": "Terry Pratchett",
    }
    verifies_fools = True
    judges_others_work = True
    input_schema: ClassVar[dict] = {
        "type": "object",
        "required": ["question", "model_answer"],
        # The writer's answer: sentences of a passage, an answer as written (Mintaka's
        # question writing), or the option the writer marked (multiple choice).
        "anyOf": [
            {"required": ["sentences", "writer_sentences"]},
            {"required": ["writer_answer"]},
            {"required": ["options", "writer_option"]},
        ],
        "properties": {
            **PASSAGE_SCHEMA["properties"],
            "question": {"type": "string", "minLength": 1},
            "writer_sentences": {"type": "array", "items": {"type": "integer", "minimum": 0}},
            "topic": {"type": "string", "maxLength": 300},
            "writer_answer": {"type": "string", "minLength": 1},
            "writer_entity": {"type": "string", "maxLength": 100},
            "passage": {"type": "string"},
            "options": {
                "type": "array",
                "maxItems": 10,
                "items": {
                    "type": "object",
                    "required": ["id", "text"],
                    "properties": {"id": {"type": "string"}, "text": {"type": "string"}},
                },
            },
            "writer_option": {"type": "string"},
            "model_answer": {"type": "string"},
            "source": {
                "type": "object",
                "properties": {
                    "assignment": {"type": "integer"},
                    "item": {"type": "integer"},
                    "try": {"type": "integer"},
                },
            },
        },
    }
    config_schema: ClassVar[dict] = {"type": "object", "properties": {}}
    answer_schema: ClassVar[dict] = per_item_answer_schema({"verdict": {"type": "string"}})

    def entry_from_form(self, form: Mapping[str, Any], at: str, cfg: Config) -> Entry:
        return {"verdict": form_text(form, f"{at}/verdict")}

    def entry_errors(self, entry: Entry, data: Entry, at: str, cfg: Config) -> list[FieldError]:
        if entry["verdict"] not in VERDICTS:
            return [FieldError(f"{at}/verdict", "Choose one of the three answers.")]
        return []

    def fool_verdict(self, entry: Mapping[str, Any] | None) -> bool | None:
        if not isinstance(entry, Mapping) or entry.get("verdict") not in VERDICTS:
            return None
        return entry.get("verdict") == "fooled"

    def row(self, form: FormView, data: Entry, at: str, entry: Entry, cfg: Config) -> Entry:
        writer = set(_sentence_ids(data.get("writer_sentences")))
        mark = str(data.get("writer_option", ""))
        field = form.field(f"{at}/verdict", entry.get("verdict"))
        return {
            "title": data.get("title", ""),
            "topic": data.get("topic", ""),
            "passage": data.get("passage", ""),
            "question": data.get("question", ""),
            "model_answer": data.get("model_answer", ""),
            "sentences": [
                {"number": j + 1, "text": text, "writer": j in writer}
                for j, text in enumerate(data.get("sentences", []))
            ],
            "writer_answer": data.get("writer_answer", ""),
            "writer_entity": data.get("writer_entity", ""),
            "options": [
                {"id": o.get("id", ""), "text": o.get("text", ""), "writer": o.get("id") == mark}
                for o in data.get("options", [])
                if isinstance(o, Mapping)
            ],
            "verdict": field,
            "choices": [
                {
                    "value": v,
                    "label": VERDICT_LABELS[v],
                    "checked": field.value == v,
                    "id": f"{field.id}-{v}",
                }
                for v in VERDICTS
            ],
        }

    def simulate(self, items: Items, cfg: Config, profile: str, rng: Rng) -> SimulatedForm:
        """Good validators confirm a fool when the model's answer does not name the
        writer's (sentences, entity id or answer text, option); sloppy ones answer at
        random; spammers often skip it."""
        form: dict[str, list[str]] = {}
        for i, item in enumerate(items):
            data = item.get("data", {})
            if profile == "good":
                verdict = "model_right" if _model_looks_right(data) else "fooled"
            elif profile == "sloppy":
                verdict = rng.choice(VERDICTS)
            else:
                verdict = rng.choice(("", "fooled", "model_right"))
            form[f"items/{i}/verdict"] = [verdict] if verdict else []
        return form


def _model_looks_right(data: Mapping[str, Any]) -> bool:
    """A good simulated validator's reading: the model's answer names the writer's."""
    said = str(data.get("model_answer", ""))
    if data.get("sentences"):
        hits = sentences_matching([str(s) for s in data.get("sentences", [])], said)
        return bool(hits) and hits <= _sentence_ids(data.get("writer_sentences"))
    mark = str(data.get("writer_option", ""))
    option = next((o for o in data.get("options", []) if o.get("id") == mark), None)
    wanted = [str(data.get("writer_entity", "")), str(data.get("writer_answer", ""))]
    if option is not None:
        wanted = [str(option.get("text", ""))]
    normalised = normalise_text(said)
    return any(w and normalise_text(w) in normalised for w in wanted)
