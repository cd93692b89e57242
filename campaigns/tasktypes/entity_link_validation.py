"""Validation of one entity link that an entity-linking answer produced.

Item data (what ``answer_entity_linking`` / ``question_entity_linking`` hand off)::

    {"question": str, "answer"?: str, "text": str (the span), "start": int, "end": int,
     "qid": "Q42", "label"?: str, "span_in"?: "answer" | "question"}

``start``/``end`` are offsets into the answer (``span_in`` "answer", the default
when an answer is given) or the question. The worker says whether the span
names the entity ``qid``: ``correct``, ``wrong`` or ``unsure``, and with
``wrong`` may give the right id. Answer (one entry per item)::

    {"items": [{"external_id": str, "verdict": "correct" | "wrong" | "unsure" | None | str,
                "corrected_qid": "Q7" | None | str}]}

Config: ``allow_unsure`` (default true), ``allow_correction`` (default true).
``aggregate`` counts verdicts and corrections; a link is kept when a strict
majority says it is correct.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Hashable, Mapping
from typing import Any, ClassVar

from campaigns.tasktypes import base as tt
from campaigns.tasktypes.entity_linking import QID_PATTERN, normalise_qid
from campaigns.tasktypes.per_item import Entry, PerItemTask

VERDICTS = ("correct", "wrong", "unsure")
VERDICT_LABELS = {
    "correct": "Correct: the phrase means this Wikidata item here",
    "wrong": "Wrong: the phrase means something else (or nothing in Wikidata)",
    "unsure": "I cannot tell",
}


def span_in(data: Mapping[str, Any]) -> str:
    """Which text the span's offsets point into: "answer" or "question"."""
    return str(data.get("span_in") or ("answer" if "answer" in data else "question"))


def linked_text(data: Mapping[str, Any]) -> str:
    """The text the span's offsets point into."""
    return str(data.get(span_in(data), ""))


class EntityLinkValidation(PerItemTask):
    name = "entity_link_validation"
    label = "Check entity links"
    description = "Say whether a phrase was linked to the right Wikidata item."
    input_schema: ClassVar[dict] = tt.object_schema(
        {
            "question": {"type": "string", "minLength": 1},
            "answer": {"type": "string"},
            "text": {"type": "string", "minLength": 1},
            "start": {"type": "integer", "minimum": 0},
            "end": {"type": "integer", "minimum": 1},
            "qid": {"type": "string", "pattern": QID_PATTERN},
            "label": {"type": "string"},
            "span_in": {"enum": ["answer", "question"]},
        },
        required=["question", "text", "start", "end", "qid"],
    )
    example_item: ClassVar[dict[str, Any] | None] = {
        "question": "Who directed The Godfather?",
        "text": "The Godfather",
        "start": 13,
        "end": 26,
        "qid": "Q47703",
        "label": "The Godfather",
    }
    config_schema: ClassVar[dict] = {
        "type": "object",
        "properties": {
            "allow_unsure": {
                "type": "boolean",
                "description": 'Offer an "unsure" choice beside correct and wrong.',
            },
            "allow_correction": {
                "type": "boolean",
                "description": "Let the validator propose the right entity instead.",
            },
        },
    }
    config_defaults: ClassVar[dict[str, Any]] = {"allow_unsure": True, "allow_correction": True}
    answer_schema: ClassVar[dict] = tt.per_item_answer_schema(
        {"verdict": {"type": ["string", "null"]}, "corrected_qid": {"type": ["string", "null"]}},
        required=["verdict"],
    )

    def validate_item(self, data: Any) -> list[tt.FieldError]:
        errors = tt.schema_errors(self.input_schema, data)
        if errors:
            return errors
        if data.get("span_in") == "answer" and "answer" not in data:
            return [tt.FieldError("answer", "The span is in the answer, but no answer is given.")]
        text = linked_text(data)
        start, end = data["start"], data["end"]
        if not start < end <= len(text):
            errors.append(tt.FieldError("end", "The span is outside the text."))
        elif text[start:end] != data["text"]:
            errors.append(tt.FieldError("text", "The text does not match the offsets."))
        return errors

    def entry_label(self, entry: Mapping[str, Any], dimension: str) -> Hashable | None:
        """The verdict on the link."""
        return tt.label_text(entry.get("verdict"))

    def entry_from_form(self, form: Mapping[str, Any], at: str, cfg: tt.Config) -> Entry:
        corrected = tt.form_text(form, f"{at}/corrected_qid")
        return {
            "verdict": tt.form_text(form, f"{at}/verdict") or None,
            "corrected_qid": normalise_qid(corrected) if corrected else None,
        }

    def entry_errors(
        self, entry: Entry, data: Entry, at: str, cfg: tt.Config
    ) -> list[tt.FieldError]:
        errors = []
        verdict, corrected = entry["verdict"], entry.get("corrected_qid")
        if verdict not in [v for v in VERDICTS if v != "unsure" or cfg["allow_unsure"]]:
            errors.append(tt.FieldError(f"{at}/verdict", "Choose one of the options."))
        path = f"{at}/corrected_qid"
        if not corrected:
            return errors
        if not cfg["allow_correction"]:
            errors.append(tt.FieldError(path, "Corrections are not collected here."))
        elif verdict != "wrong":
            errors.append(tt.FieldError(path, 'Give a corrected id only with "wrong".'))
        elif not re.match(QID_PATTERN, corrected):
            errors.append(tt.FieldError(path, "A Wikidata id looks like Q42."))
        elif corrected == data.get("qid"):
            errors.append(tt.FieldError(path, "This is the id you are checking; give another."))
        return errors

    def aggregate(self, *, answers: list[dict[str, Any]], item: dict[str, Any]) -> dict[str, Any]:
        """``{"answers": n, "votes": {verdict: n}, "majority": verdict | None,
        "keep": bool (strict majority "correct"), "corrections": {qid: n}}``."""
        votes: Counter[str] = Counter()
        corrections: Counter[str] = Counter()
        for answer in answers:
            entry = tt.answer_for_item(answer, item)
            if entry is None or entry.get("verdict") not in VERDICTS:
                continue
            votes[entry["verdict"]] += 1
            if entry["verdict"] == "wrong" and entry.get("corrected_qid"):
                corrections[entry["corrected_qid"]] += 1
        total = sum(votes.values())
        top = votes.most_common(1)
        majority = top[0][0] if top and top[0][1] * 2 > total else None
        return {
            "answers": total,
            "votes": dict(votes),
            "majority": majority,
            "keep": majority == "correct",
            "corrections": dict(corrections.most_common()),
        }

    def page(
        self, form: tt.FormView, items: tt.Items, cfg: tt.Config, answer: Any
    ) -> dict[str, Any]:
        return {
            **super().page(form, items, cfg, answer),
            "allow_correction": cfg["allow_correction"],
        }

    def row(self, form: tt.FormView, data: Entry, at: str, entry: Entry, cfg: tt.Config) -> Entry:
        text = linked_text(data)
        start, end = data.get("start", 0), data.get("end", 0)
        verdict = form.field(f"{at}/verdict", entry.get("verdict"))
        choices = [
            {
                "value": v,
                "label": VERDICT_LABELS[v],
                "id": f"{verdict.id}-{v}",
                "checked": verdict.value == v,
            }
            for v in VERDICTS
            if v != "unsure" or cfg["allow_unsure"]
        ]
        return {
            "question": data.get("question", ""),
            "answer": data.get("answer", ""),
            "in_answer": span_in(data) == "answer",
            "before": text[:start],
            "span": text[start:end],
            "after": text[end:],
            "qid": data.get("qid", ""),
            "label": data.get("label", ""),
            "verdict": verdict,
            "choices": choices,
            "corrected_qid": form.field(f"{at}/corrected_qid", entry.get("corrected_qid")),
        }

    def simulate(
        self, items: tt.Items, cfg: tt.Config, profile: str, rng: tt.Rng
    ) -> tt.SimulatedForm:
        """Good workers check the id against the plausible one (``simulated_qid``) and
        correct it when it differs; sloppy ones mostly say "correct", sometimes
        mistype a correction; spammers click anything or nothing."""
        form: dict[str, list[str]] = {}
        for i, item in enumerate(items):
            data = item.get("data", {})
            expected = tt.simulated_qid(str(data.get("text", "")))
            corrected = ""
            if profile == "good":
                verdict = "correct" if data.get("qid") == expected else "wrong"
                if verdict == "wrong" and cfg["allow_correction"]:
                    corrected = expected
            elif profile == "sloppy":
                roll = rng.random()
                verdict = "correct" if roll < 0.7 else rng.choice(VERDICTS)
                if verdict == "wrong" and cfg["allow_correction"] and rng.random() < 0.5:
                    corrected = rng.choice([expected, "Q?", "see wikidata"])
            else:
                verdict = rng.choice(["correct", "correct", "", "maybe"])
                if rng.random() < 0.3:
                    corrected = "Q1"
            if verdict == "unsure" and not cfg["allow_unsure"]:
                verdict = "correct"
            if verdict:
                form[f"items/{i}/verdict"] = [verdict]
            form[f"items/{i}/corrected_qid"] = [corrected]
        return form
