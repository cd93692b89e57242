"""Mintaka-style question writing: one topic x complexity-type cell per item.

Item data: ``{"topic": "movies", "complexity_type": "count", "topic_hint"?: str}``
(one item per HIT). Config: ``questions_per_hit`` (default 5) and ``examples``
(per complexity type, overriding the built-in ones). Answer::

    {"questions": [{"question": str, "answer": str,
                    "numeric_value": number | str | None,   # str: invalid input kept
                    "counted_entities": [str]}, ...]}

Rules (Mintaka, Sen, Aji and Saffari, COLING 2022, §4.1): exactly ``questions_per_hit`` pairs;
questions end with "?" and are distinct; count and superlative answers carry a
numeric value (a superlative's may carry its unit: "2,341 miles"); count answers
list the counted entities (all of them when the count is at most 5, else at least
5), and those entities are what answer linking links; yes/no questions are answered yes or no.
A worker may do one HIT per cell (``exclusive_key``).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from campaigns.tasktypes import base as tt
from campaigns.tasktypes.adversarial_qa import FoolsHandingWriter, fool_items
from campaigns.tasktypes.answer_match import entity_ids
from campaigns.tasktypes.answer_types import AnswerType
from campaigns.tasktypes.answer_types import detect_answer_type as linking_answer_type
from campaigns.tasktypes.translation import LANGUAGE_CODE, translation_external_id

COMPLEXITY_TYPES = [
    "count",
    "comparative",
    "superlative",
    "ordinal",
    "multihop",
    "intersection",
    "difference",
    "yesno",
    "generic",
]

# What each complexity type means, in the worker's words (Mintaka's definitions).
COMPLEXITY_DEFINITIONS: dict[str, str] = {
    "count": "a question whose answer is a number of things; give the number and list the "
    "things you counted.",
    "comparative": "a question that compares two things on some property (older, larger, "
    "earlier, ...).",
    "superlative": "a question about the thing with the most or least of some property "
    "(tallest, first released, best-selling, ...); give the value as a number too.",
    "ordinal": "a question about the position of something in an ordered list (the third "
    "president, the second album, ...).",
    "multihop": "a question that needs two or more steps of reasoning: you must first find "
    "an intermediate answer (e.g. the director of a film) to answer it.",
    "intersection": "a question with two conditions that the answer must both satisfy.",
    "difference": "a question with a condition that the answer must NOT satisfy (uses "
    '"not", "except", "other than", ...).',
    "yesno": "a question whose answer is yes or no.",
    "generic": "a plain factual question about the topic (who, what, where, when).",
}

COMPLEXITY_LABELS: dict[str, str] = {
    "count": "Count",
    "comparative": "Comparative",
    "superlative": "Superlative",
    "ordinal": "Ordinal",
    "multihop": "Multi-hop",
    "intersection": "Intersection",
    "difference": "Difference",
    "yesno": "Yes/No",
    "generic": "Generic",
}

DEFAULT_EXAMPLES: dict[str, list[dict[str, Any]]] = {
    "count": [
        {
            "question": "How many Lord of the Rings films did Peter Jackson direct?",
            "answer": "3",
            "numeric_value": 3,
            "counted_entities": [
                "The Fellowship of the Ring",
                "The Two Towers",
                "The Return of the King",
            ],
        }
    ],
    "comparative": [
        {"question": "Who is older, Brad Pitt or George Clooney?", "answer": "George Clooney"}
    ],
    "superlative": [
        {
            "question": "What is the longest river in South America?",
            "answer": "Amazon River",
            "numeric_value": 6400,
        }
    ],
    "ordinal": [
        {
            "question": "Who was the third president of the United States?",
            "answer": "Thomas Jefferson",
        }
    ],
    "multihop": [
        {
            "question": "Who directed the film in which Leonardo DiCaprio played Jack Dawson?",
            "answer": "James Cameron",
        }
    ],
    "intersection": [
        {
            "question": "Which member of the Beatles was also a member of the Traveling Wilburys?",
            "answer": "George Harrison",
        }
    ],
    "difference": [
        {
            "question": "Which of the Great Lakes is not shared with Canada?",
            "answer": "Lake Michigan",
        }
    ],
    "yesno": [{"question": "Did Tom Hanks win an Oscar for Forrest Gump?", "answer": "Yes"}],
    "generic": [{"question": "Where was Albert Einstein born?", "answer": "Ulm"}],
}

NUMERIC_TYPES = frozenset({"count", "superlative"})
YES_NO = {"yes": True, "no": False}
ANSWER_TYPES = ["entity", "boolean", "numeric", "date", "string"]
MIN_LISTED_ENTITIES = 5


def yes_no_value(text: str) -> bool | None:
    """True/False for a yes/no answer ("Yes.", "no"), None for anything else."""
    return YES_NO.get(text.strip().rstrip(".!").strip().casefold())


def linked_answer_text(pair: Mapping[str, Any], *, complexity_type: str) -> str:
    """The answer text that answer linking works on and the export's ``mention``: for a
    count question the entities counted, comma-separated (Mintaka §4.1: the number
    and "the entities that make up that answer"; the release's count answers are
    those entities with ``answerNum``), else the answer as written."""
    entities = [str(e).strip() for e in pair.get("counted_entities") or [] if str(e).strip()]
    if complexity_type == "count" and entities:
        return ", ".join(entities)
    return str(pair.get("answer", ""))


def detect_answer_type(
    *,
    question: str,
    answer: str,
    complexity_type: str,
    counted_entities: Iterable[str] = (),
) -> str:
    """The answer's type: entity, boolean, numeric, date or string
    (``campaigns.tasktypes.answer_types.detect_answer_type``), with what the cell says: a count
    answer is typed by the entities counted (a list of names is ``entity``, of years
    ``date``; Mintaka links the counted entities, §4.1-4.2) and is a number only when
    none are listed; a quoted answer is a string."""
    if yes_no_value(answer) is not None:
        return AnswerType.BOOLEAN.value
    if complexity_type == "count":
        listed = [str(e).strip() for e in counted_entities if str(e).strip()]
        if not listed:
            return AnswerType.NUMERIC.value
        # No question context: "how many" would make a listed year a number.
        return linking_answer_type(", ".join(listed)).value
    stripped = answer.strip()
    if len(stripped) >= 2 and stripped[0] in "\"'“" and stripped[-1] in "\"'”":
        return AnswerType.STRING.value
    return linking_answer_type(stripped, question=question).value


def _example_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["question", "answer"],
        "properties": {
            "question": {"type": "string", "minLength": 1},
            "answer": {"type": "string", "minLength": 1},
            "numeric_value": {"type": "number"},
            "counted_entities": {"type": "array", "items": {"type": "string"}},
            "note": {"type": "string"},
        },
    }


class QuestionWriting(FoolsHandingWriter):
    writes_free_text = True
    # Model in the loop: with the stage's ``adversarial`` option (one question per HIT)
    # the worker puts the question, without its answer, to a model; the app judges an
    # entity answer given with its Wikidata id, a number or a date (``adversarial_entry``).
    writes_adversarially = True
    questions_key = "questions_per_hit"
    adversarial_baseline_fits = False  # closed book: no passage
    name = "question_writing"
    dataset_part = "qa_pairs"
    label = "Question writing (topic x complexity type)"
    description = "Write question/answer pairs of one complexity type about one topic."
    input_schema: ClassVar[dict] = tt.object_schema(
        {
            "topic": {"type": "string", "minLength": 1, "maxLength": 100},
            "complexity_type": {"enum": COMPLEXITY_TYPES},
            "topic_hint": {"type": "string", "maxLength": 500},
        },
        required=["topic", "complexity_type"],
    )
    config_schema: ClassVar[dict] = {
        "type": "object",
        "properties": {
            "questions_per_hit": tt.count_setting(
                20, "Question-answer pairs a worker writes in one HIT."
            ),
            "examples": {
                "type": "object",
                "propertyNames": {"enum": COMPLEXITY_TYPES},
                "additionalProperties": {"type": "array", "items": _example_schema()},
            },
        },
    }
    config_defaults: ClassVar[dict[str, Any]] = {"questions_per_hit": 5}
    answer_schema: ClassVar[dict] = tt.answer_list_schema(
        "questions",
        {
            "question": {"type": "string"},
            "answer": {"type": "string"},
            "numeric_value": {"type": ["number", "string", "null"]},
            "counted_entities": {"type": "array", "items": {"type": "string"}},
            # Only with the adversarial option: the answer's Wikidata id, optional.
            "answer_entity": {"type": "string"},
        },
        required=["question", "answer"],
    )
    handoff_schema: ClassVar[dict] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "target": {
                "enum": [
                    "answer_entity_linking",
                    "question_entity_linking",
                    "adversarial_fool_validation",
                ]
            },
            "fools_to": {"type": "integer", "minimum": 1},
            "only_fools": {"type": "boolean"},
            "exclude_answer_types": {
                "type": "array",
                "items": {"enum": ANSWER_TYPES},
                "uniqueItems": True,
            },
            "unlinked_to": {"type": "integer", "minimum": 1},
            "translate_to": {"type": "integer", "minimum": 1},
            "translate_languages": {
                "type": "array",
                "items": {"type": "string", "pattern": LANGUAGE_CODE},
                "uniqueItems": True,
            },
        },
    }
    handoff_stage_keys: ClassVar[tuple[str, ...]] = ("unlinked_to", "translate_to", "fools_to")

    def exclusive_key(self, *, item: dict[str, Any]) -> str | None:
        """``topic|complexity_type``: a worker does at most one HIT per cell."""
        data = item.get("data", item)
        topic = " ".join(str(data.get("topic", "")).split()).casefold()
        return f"{topic}|{data.get('complexity_type', '')}"

    def parse_form(
        self, *, form: Mapping[str, Any], items: list[dict[str, Any]], config: dict[str, Any]
    ) -> dict[str, Any]:
        n = self.effective_config(config)["questions_per_hit"]
        adversarial = tt.adversarial_config(config) is not None
        questions = []
        for i in range(n):
            entities_text = tt.form_text(form, f"questions/{i}/counted_entities")
            questions.append(
                {
                    "question": tt.form_text(form, f"questions/{i}/question"),
                    "answer": tt.form_text(form, f"questions/{i}/answer"),
                    "numeric_value": tt.parse_number_or_text(
                        tt.form_text(form, f"questions/{i}/numeric_value")
                    ),
                    "counted_entities": [
                        line.strip() for line in entities_text.split("\n") if line.strip()
                    ],
                }
            )
            if adversarial:
                questions[-1]["answer_entity"] = tt.form_text(form, f"questions/{i}/answer_entity")
        return {"questions": questions}

    def answer_errors(self, answer: Any, items: tt.Items, cfg: tt.Config) -> list[tt.FieldError]:
        ctype = tt.get_path(items, 0, "data", "complexity_type", default="generic")
        pairs = answer["questions"]
        errors = self.questions_count_errors(pairs, cfg)
        for i, pair in enumerate(pairs):
            errors += self._pair_errors(i, pair, ctype)
        errors += tt.duplicate_errors(
            [(f"questions/{i}/question", p["question"]) for i, p in enumerate(pairs)],
            what="question",
        )
        return errors

    def _pair_errors(self, i: int, pair: dict[str, Any], ctype: str) -> list[tt.FieldError]:
        base = f"questions/{i}"
        question, answer = pair["question"], pair["answer"]
        errors = tt.text_errors(f"{base}/question", question, what="The question")
        if not errors and not question.rstrip().endswith("?"):
            errors.append(tt.FieldError(f"{base}/question", 'End the question with "?".'))
        answer_errors = tt.text_errors(f"{base}/answer", answer, what="The answer")
        if not answer_errors and ctype == "yesno" and yes_no_value(answer) is None:
            answer_errors.append(tt.FieldError(f"{base}/answer", 'Answer "Yes" or "No".'))
        errors += answer_errors

        value = pair.get("numeric_value")
        if isinstance(value, str) and ctype == "superlative" and _is_value_with_unit(value):
            value = None  # "2,341 miles": the value that makes it the most (§4.1)
        elif isinstance(value, str):
            errors.append(tt.FieldError(f"{base}/numeric_value", "Enter a number, e.g. 42 or 3.5."))
            value = None
        elif value is None and ctype in NUMERIC_TYPES and not pair.get("numeric_value"):
            errors.append(
                tt.FieldError(f"{base}/numeric_value", "This question type needs a numeric value.")
            )
        qid = str(pair.get("answer_entity") or "").strip()
        if qid and (len(entity_ids(qid)) != 1 or len(qid) > 100):
            errors.append(
                tt.FieldError(
                    f"{base}/answer_entity", "Give one Wikidata id, e.g. Q42, or leave it empty."
                )
            )
        entities = pair.get("counted_entities") or []
        if ctype == "count":
            if value is not None and (value < 0 or value != int(value)):
                errors.append(
                    tt.FieldError(f"{base}/numeric_value", "A count is a whole number (0 or more).")
                )
            elif value is not None:
                need = min(int(value), MIN_LISTED_ENTITIES)
                if int(value) <= MIN_LISTED_ENTITIES and len(entities) != int(value):
                    errors.append(
                        tt.FieldError(
                            f"{base}/counted_entities",
                            f"List all {int(value)} counted items, one per line "
                            f"(you listed {len(entities)}).",
                        )
                    )
                elif len(entities) < need:
                    errors.append(
                        tt.FieldError(
                            f"{base}/counted_entities",
                            f"List at least {need} of the counted items, one per line.",
                        )
                    )
        for entity in entities:
            if len(entity) > tt.MAX_TEXT_LENGTH:
                errors.append(tt.FieldError(f"{base}/counted_entities", "An item is too long."))
                break
        return errors

    # --- Model in the loop ---------------------------------------------------------------

    def adversarial_entry(
        self, *, entry: Mapping[str, Any], data: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The HIT's (first) pair as the try records it, with its typed answer for
        ``model_answer_judge``: the Wikidata id the worker gave (``entity``, the answer
        as its label), else a count's or a numeric answer's number (``numeric``), else
        the answer as written with its detected type (a date is judged; a name without
        an id, yes/no and strings are left to the worker)."""
        pairs = entry.get("questions") or [{}]
        pair = pairs[0] if isinstance(pairs[0], Mapping) else {}
        ctype = str(data.get("complexity_type", "generic"))
        text = str(pair.get("answer", ""))
        value = pair.get("numeric_value")
        number = value if isinstance(value, int | float) and not isinstance(value, bool) else None
        counted = [str(e) for e in pair.get("counted_entities") or []]
        recorded: dict[str, Any] = {"question": str(pair.get("question", "")), "answer_text": text}
        if number is not None:
            recorded["numeric_value"] = number
        if counted:
            recorded["counted_entities"] = counted
        ids = entity_ids(str(pair.get("answer_entity") or ""))
        answer_type = detect_answer_type(
            question=recorded["question"],
            answer=text,
            complexity_type=ctype,
            counted_entities=counted,
        )
        if ids:
            typed = {"answer": ids[0], "answer_type": "entity", "answer_label": text}
        elif number is not None and (ctype == "count" or answer_type == "numeric"):
            typed = {"answer": str(number), "answer_type": "numeric"}
        else:
            typed = {"answer": text, "answer_type": answer_type}
        return {**recorded, **typed}

    def next_items(
        self, *, answer: dict[str, Any], items: list[dict[str, Any]], handoff: dict[str, Any]
    ) -> Iterable[dict[str, Any]]:
        """QA pairs as items for ``answer_entity_linking`` (default) or question linking.

        ``handoff``: ``target`` ("answer_entity_linking" | "question_entity_linking"),
        ``exclude_answer_types`` (e.g. ["boolean", "numeric", "date"]: yes/no and
        values need no answer linking) and ``unlinked_to`` (a question-linking stage's
        id): the excluded pairs go there instead (marked ``route: "unlinked_to"``), so
        every question is linked whatever its answer (Mintaka §4.3). Their id is the
        one answer linking would have handed on (``<pair id>/q-<digest>``).
        ``translate_to`` (a ``translation`` stage's id) with ``translate_languages``
        (codes; empty: translation off) adds one translation item per question and
        language (``<pair id>/tr-<code>``, Mintaka §4.4). With the adversarial option,
        claimed fools go to ``adversarial_fool_validation`` (``adversarial_qa.fool_items``:
        the question, the answer as written, its Wikidata id, the model's answer):
        ``target: "adversarial_fool_validation"`` hands on only them, ``fools_to`` (that
        stage's id) beside the pairs; ``only_fools: false`` hands on every claim.
        """
        if not items:
            return []
        target = handoff.get("target", "answer_entity_linking")
        if target == "adversarial_fool_validation":
            return fool_items(answer=answer, items=items, handoff=handoff, shown=_mintaka_shown)
        source = items[0]
        cell = source.get("data", {})
        ctype = str(cell.get("complexity_type", "generic"))
        excluded = set(handoff.get("exclude_answer_types", []))
        out: list[dict[str, Any]] = []
        for i, pair in enumerate(answer.get("questions", [])):
            text = linked_answer_text(pair, complexity_type=ctype)
            answer_type = detect_answer_type(
                question=pair["question"],
                answer=pair["answer"],
                complexity_type=ctype,
                counted_entities=pair.get("counted_entities") or (),
            )
            external_id = tt.derived_external_id(
                str(source.get("external_id", "")), f"q{i + 1}", [pair["question"], pair["answer"]]
            )
            if handoff.get("translate_to") is not None:
                out.extend(
                    {
                        "external_id": translation_external_id(external_id, code),
                        "data": {
                            "question": pair["question"],
                            "language": code,
                            "source_id": external_id,
                        },
                        "route": "translate_to",
                    }
                    for code in handoff.get("translate_languages", [])
                )
            if answer_type in excluded:
                if handoff.get("unlinked_to") is not None:
                    produced = {"question": pair["question"], "answer": text}
                    out.append(
                        {
                            "external_id": tt.derived_external_id(external_id, "q", produced),
                            "data": produced,
                            "route": "unlinked_to",
                        }
                    )
                continue
            data: dict[str, Any]
            if target == "question_entity_linking":
                data = {"question": pair["question"]}
            else:
                data = {
                    "question": pair["question"],
                    "answer": text,
                    "complexity_type": ctype,
                    "topic": cell.get("topic", ""),
                    "answer_type": answer_type,
                }
                if pair.get("numeric_value") is not None:
                    data["numeric_value"] = pair["numeric_value"]
                if pair.get("counted_entities"):
                    data["counted_entities"] = list(pair["counted_entities"])
            out.append({"external_id": external_id, "data": data})
        out += self.fools_beside(answer=answer, items=items, handoff=handoff, shown=_mintaka_shown)
        return out

    def page(
        self, form: tt.FormView, items: tt.Items, cfg: tt.Config, answer: Any
    ) -> dict[str, Any]:
        cell = tt.get_path(items, 0, "data", default={}) or {}
        ctype = cell.get("complexity_type", "generic")
        examples = (cfg.get("examples") or {}).get(ctype) or DEFAULT_EXAMPLES.get(ctype, [])
        rows = []
        for i in range(cfg["questions_per_hit"]):
            pair = tt.get_path(answer, "questions", i, default={}) or {}
            rows.append(
                {
                    "number": i + 1,
                    "question": form.field(f"questions/{i}/question", pair.get("question")),
                    "answer": form.field(f"questions/{i}/answer", pair.get("answer")),
                    "numeric_value": form.field(
                        f"questions/{i}/numeric_value", pair.get("numeric_value")
                    ),
                    "counted_entities": form.field(
                        f"questions/{i}/counted_entities",
                        "\n".join(pair.get("counted_entities") or []),
                    ),
                    "answer_entity": form.field(
                        f"questions/{i}/answer_entity", pair.get("answer_entity")
                    ),
                }
            )
        form.error("questions")
        return {
            "topic": cell.get("topic", ""),
            "topic_hint": cell.get("topic_hint", ""),
            "complexity_type": ctype,
            "complexity_label": COMPLEXITY_LABELS.get(ctype, ctype),
            "definition": COMPLEXITY_DEFINITIONS.get(ctype, ""),
            "examples": examples,
            "needs_numeric": ctype in NUMERIC_TYPES,
            "is_count": ctype == "count",
            "is_yesno": ctype == "yesno",
            "min_listed": MIN_LISTED_ENTITIES,
            "adversarial": tt.adversarial_config(cfg) is not None,
            "rows": rows,
            "count_error": form.errors.get("questions", ""),
        }

    def simulate(
        self, items: tt.Items, cfg: tt.Config, profile: str, rng: tt.Rng
    ) -> tt.SimulatedForm:
        """Question/answer pairs of the cell's type: good ones end with "?", give numbers
        for count/superlative and list what they count; sloppy ones sometimes miss a
        rule; spammers paste the same junk everywhere or leave fields empty."""
        n = cfg["questions_per_hit"]
        cell = tt.get_path(items, 0, "data", default={}) or {}
        topic = str(cell.get("topic", "things"))
        ctype = str(cell.get("complexity_type", "generic"))
        if profile == "spammer" and rng.random() < 0.7:
            junk = rng.choice(tt.SIM_NOISE_WORDS)
            blank = rng.random() < 0.3
            form: dict[str, list[str]] = {}
            for i in range(n):
                form[f"questions/{i}/question"] = ["" if blank and i else junk]
                form[f"questions/{i}/answer"] = [junk]
                form[f"questions/{i}/numeric_value"] = [junk if ctype in NUMERIC_TYPES else ""]
                form[f"questions/{i}/counted_entities"] = [junk]
            return form
        pairs = [_simulated_pair(i, topic, ctype, rng) for i in range(n)]
        if profile == "spammer":  # the least that passes: short, generic, copied
            for i, pair in enumerate(pairs):
                pair["question"] = f"{topic} {rng.choice(tt.SIM_NOISE_WORDS)} {i + 1}?"
        if profile == "sloppy" and rng.random() < 0.35:
            i = rng.randrange(n)
            defect = rng.choice(["no_mark", "no_number", "repeat", "empty_answer"])
            if defect == "no_number" and ctype in NUMERIC_TYPES:
                pairs[i]["numeric_value"] = ""
            elif defect == "repeat" and n > 1:
                pairs[i]["question"] = pairs[i - 1]["question"]
            elif defect == "empty_answer":
                pairs[i]["answer"] = ""
            else:
                pairs[i]["question"] = pairs[i]["question"].rstrip("?")
        form = {}
        for i, pair in enumerate(pairs):
            for key in ("question", "answer", "numeric_value", "counted_entities"):
                form[f"questions/{i}/{key}"] = [pair[key]]
        return form


_VALUE_WITH_UNIT = re.compile(r"^[^\d]{0,12}\d[\d,.]*\s*[^\d]{0,30}$|^\d+h(?: \d+m)?$")


def _mintaka_shown(data: Mapping[str, Any], record: Mapping[str, Any]) -> dict[str, Any]:
    """What a fool validator sees of a Mintaka claim: the topic, the answer as written
    and the Wikidata id the writer gave (``adversarial_entry``'s record)."""
    entry = record.get("entry")
    entry = entry if isinstance(entry, Mapping) else {}
    shown = {
        "topic": str(data.get("topic", "")),
        "writer_answer": str(entry.get("answer_text") or entry.get("answer") or "?"),
    }
    if entry.get("answer_type") == "entity":
        shown["writer_entity"] = str(entry.get("answer", ""))
    return shown


def _is_value_with_unit(text: str) -> bool:
    """A number with a unit or currency ("2,341 miles", "$134,218,018", "414 minutes")."""
    return bool(_VALUE_WITH_UNIT.match(text.strip()))


_SIM_ENTITIES = (
    "Ada Lovelace",
    "Amazon River",
    "Kyoto",
    "Miles Davis",
    "Marie Curie",
    "Mount Kenya",
    "Frida Kahlo",
    "Lake Baikal",
    "Nelson Mandela",
    "Ravi Shankar",
    "Gabriel Garcia Marquez",
    "Sydney Opera House",
)
_SIM_ORDINALS = ("first", "second", "third", "fourth", "fifth")


def _simulated_pair(i: int, topic: str, ctype: str, rng: random.Random) -> dict[str, str]:
    """One plausible pair of type ``ctype``; the year keeps the HIT's questions distinct."""
    year = 1901 + 11 * i + rng.randrange(11)
    a, b = rng.sample(_SIM_ENTITIES, 2)
    pair = {"answer": a, "numeric_value": "", "counted_entities": ""}
    if ctype == "count":
        k = rng.randint(1, 7)
        pair.update(
            question=f"How many {topic} awards did {a} receive in {year}?",
            answer=str(k),
            numeric_value=str(k),
            counted_entities="\n".join(
                f"{topic.title()} award {j + 1} of {year}" for j in range(k)
            ),
        )
    elif ctype == "superlative":
        pair.update(
            question=f"Which {topic} landmark drew the most visitors in {year}?",
            numeric_value=str(rng.randint(1000, 90000)),
        )
    elif ctype == "yesno":
        pair.update(
            question=f"Was {a} part of a {topic} event held in {year}?",
            answer=rng.choice(["Yes", "No"]),
        )
    elif ctype == "comparative":
        pair["question"] = f"Who was better known for {topic} in {year}, {a} or {b}?"
    elif ctype == "ordinal":
        nth = rng.choice(_SIM_ORDINALS)
        pair["question"] = f"Who was the {nth} person honoured for {topic} in {year}?"
    elif ctype == "multihop":
        pair["question"] = f"Who inspired the {topic} work that won the top prize in {year}?"
    elif ctype == "intersection":
        pair["question"] = f"Who worked in {topic} and also in politics in {year}?"
    elif ctype == "difference":
        pair["question"] = f"Which {topic} figure of {year} was not born in Europe?"
    else:
        pair["question"] = f"Who was the most talked-about name in {topic} in {year}?"
    return pair
