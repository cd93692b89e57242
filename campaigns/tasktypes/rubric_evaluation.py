"""Rubric grading of another worker's multiple-choice example.

The four questions follow the expert-grading rubric of Nangia et al. (2021,
"What Ingredients Make for an Effective Crowdsourcing Protocol for Difficult
NLU Data Collection Tasks?"): is the example answerable and unambiguous, how
closely must one read the passage, how creative is the question, and are the
wrong options distracting. Label texts are our wording of that rubric.

Item data: ``{"passage", "question", "options": [4 x str], "correct": 0..3,
"justification"?: str, "title"?: str}``. Answer (one entry per item)::

    {"items": [{"external_id": str, "answerable": "yes" | "no" | "yes_but_label_wrong",
                "reading_depth": "none" | "skim_one" | "skim_few" | "read_whole" | "read_carefully",
                "creativity": "not" | "a_little" | "fairly" | "very",
                "distracting_options": "yes" | "no", "feedback": str}]}

``feedback`` (optional) is a note for the writer, sent with the round's feedback.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping
from typing import Any, ClassVar

from campaigns.tasktypes import base as tt
from campaigns.tasktypes.mc_question_writing import OPTION_LETTERS
from campaigns.tasktypes.per_item import Entry, PerItemTask

# (code, label); order matters: reading_depth and creativity are ordinal scales.
RUBRIC: dict[str, dict[str, Any]] = {
    "answerable": {
        "question": "Can the question be answered from the passage, with one unambiguous answer?",
        "choices": [
            ("yes", "Yes, and the marked answer is the right one"),
            ("no", "No: it is ambiguous, unanswerable, or more than one option is right"),
            ("yes_but_label_wrong", "Yes, but the writer marked the wrong option as correct"),
        ],
    },
    "reading_depth": {
        "question": "How closely must someone read the passage to answer correctly?",
        "choices": [
            ("none", "No need to read it: the answer is common knowledge or guessable"),
            ("skim_one", "Skim a few words or one sentence"),
            ("skim_few", "Skim a few sentences"),
            ("read_whole", "Read the whole passage"),
            ("read_carefully", "Read the whole passage carefully, maybe more than once"),
        ],
    },
    "creativity": {
        "question": "How creative is the question?",
        "choices": [
            ("not", "Not creative: a direct copy or simple rewording of the passage"),
            ("a_little", "A little creative"),
            ("fairly", "Fairly creative"),
            ("very", "Very creative: an unusual angle that needs real understanding"),
        ],
    },
    "distracting_options": {
        "question": "Are the wrong options distracting (plausible to a careless reader)?",
        "choices": [("yes", "Yes"), ("no", "No")],
    },
}
DIMENSIONS = list(RUBRIC)
ORDINAL = {"reading_depth", "creativity"}


def rubric_example_score(entry: Mapping[str, Any]) -> float | None:
    """One grader's score of an example over the whole rubric (Nangia et al., 2021,
    Figure 2), from 0 to 1: an example that is not answerable and unambiguous scores 0
    (§3.3 qualifies "only the workers who wrote answerable, unambiguous questions");
    otherwise the mean of reading depth and creativity (each scaled to 0-1) and
    distracting options (yes 1, no 0). None when "answerable" was not graded."""
    answerable = entry.get("answerable")
    if answerable not in {c for c, _ in RUBRIC["answerable"]["choices"]}:
        return None
    if answerable != "yes":
        return 0.0
    parts = []
    for d in ("reading_depth", "creativity"):
        score = rubric_score(d, str(entry.get(d) or ""))
        if score is not None:
            parts.append((score - 1) / (len(RUBRIC[d]["choices"]) - 1))
    distracting = entry.get("distracting_options")
    if distracting in ("yes", "no"):
        parts.append(1.0 if distracting == "yes" else 0.0)
    return sum(parts) / len(parts) if parts else 1.0


def rubric_score(dimension: str, code: str) -> int | None:
    """1-based position of ``code`` on an ordinal scale (None elsewhere)."""
    codes = [c for c, _ in RUBRIC[dimension]["choices"]]
    return codes.index(code) + 1 if dimension in ORDINAL and code in codes else None


class RubricEvaluation(PerItemTask):
    name = "rubric_evaluation"
    judges_others_work = True
    label = "Grade an example with the rubric"
    description = "Grade another worker's multiple-choice question on four criteria."
    input_schema: ClassVar[dict] = tt.object_schema(
        {
            "passage": {"type": "string", "minLength": 1},
            "title": {"type": "string"},
            "question": {"type": "string", "minLength": 1},
            "options": {"type": "array", "minItems": 4, "maxItems": 4, "items": {"type": "string"}},
            "correct": {"type": "integer", "minimum": 0, "maximum": 3},
            "justification": {"type": "string"},
        },
        required=["passage", "question", "options", "correct"],
    )
    config_schema: ClassVar[dict] = {
        "type": "object",
        "properties": {
            "show_justification": {
                "type": "boolean",
                "description": "Show the writer's justification to the grader.",
            }
        },
    }
    config_defaults: ClassVar[dict[str, Any]] = {"show_justification": True}
    answer_schema: ClassVar[dict] = tt.per_item_answer_schema(
        {
            "answerable": {"type": ["string", "null"]},
            "reading_depth": {"type": ["string", "null"]},
            "creativity": {"type": ["string", "null"]},
            "distracting_options": {"type": ["string", "null"]},
            "feedback": {"type": "string"},
        },
        required=["answerable", "reading_depth", "creativity", "distracting_options"],
    )

    def entry_label(self, entry: Mapping[str, Any], dimension: str) -> Hashable | None:
        """The grade given on rubric dimension ``dimension`` (default "answerable")."""
        return tt.label_text(entry.get(dimension))

    def entry_from_form(self, form: Mapping[str, Any], at: str, cfg: tt.Config) -> Entry:
        entry: Entry = {d: tt.form_text(form, f"{at}/{d}") or None for d in DIMENSIONS}
        entry["feedback"] = tt.form_text(form, f"{at}/feedback")
        return entry

    def entry_errors(
        self, entry: Entry, data: Entry, at: str, cfg: tt.Config
    ) -> list[tt.FieldError]:
        errors = []
        for d in DIMENSIONS:
            codes = [c for c, _ in RUBRIC[d]["choices"]]
            if entry[d] not in codes:
                errors.append(tt.FieldError(f"{at}/{d}", "Choose one of the options."))
        errors += tt.text_errors(
            f"{at}/feedback", entry.get("feedback", ""), required=False, what="Feedback"
        )
        return errors

    def aggregate(self, *, answers: list[dict[str, Any]], item: dict[str, Any]) -> dict[str, Any]:
        """Per dimension: label counts, and the mean position on the ordinal scales."""
        entries = [e for a in answers if (e := tt.answer_for_item(a, item))]
        out: dict[str, Any] = {"answers": len(entries)}
        for d in DIMENSIONS:
            counts = Counter(e.get(d) for e in entries if e.get(d))
            summary: dict[str, Any] = {"counts": dict(counts)}
            if d in ORDINAL:
                scores = [s for e in entries if (s := rubric_score(d, e.get(d) or "")) is not None]
                summary["mean"] = sum(scores) / len(scores) if scores else None
            out[d] = summary
        return out

    def row(self, form: tt.FormView, data: Entry, at: str, entry: Entry, cfg: tt.Config) -> Entry:
        dims = []
        for d in DIMENSIONS:
            f = form.field(f"{at}/{d}", entry.get(d))
            dims.append(
                {
                    "field": f,
                    "question": RUBRIC[d]["question"],
                    "choices": [
                        {"value": c, "label": label, "id": f"{f.id}-{c}", "checked": f.value == c}
                        for c, label in RUBRIC[d]["choices"]
                    ],
                }
            )
        return {
            "title": data.get("title", ""),
            "passage": data.get("passage", ""),
            "question": data.get("question", ""),
            "options": [
                {"letter": OPTION_LETTERS[o], "text": t, "correct": data.get("correct") == o}
                for o, t in enumerate(data.get("options", [])[:4])
            ],
            "justification": data.get("justification", "") if cfg["show_justification"] else "",
            "dimensions": dims,
            "feedback": form.field(f"{at}/feedback", entry.get("feedback")),
        }

    def simulate(
        self, items: tt.Items, cfg: tt.Config, profile: str, rng: tt.Rng
    ) -> tt.SimulatedForm:
        """Good workers grade every dimension (mostly "answerable"); sloppy ones grade at
        random and sometimes skip one; spammers click the first choice or skip."""
        form: dict[str, list[str]] = {}
        for i, _item in enumerate(items):
            for d in DIMENSIONS:
                codes = [c for c, _ in RUBRIC[d]["choices"]]
                if profile == "good":
                    code = (
                        codes[0] if d == "answerable" and rng.random() < 0.8 else rng.choice(codes)
                    )
                elif profile == "sloppy":
                    code = "" if rng.random() < 0.08 else rng.choice(codes)
                else:
                    code = "" if rng.random() < 0.3 else codes[0]
                if code:
                    form[f"items/{i}/{d}"] = [code]
            feedback = "Clear question; good distractors." if profile == "good" else ""
            form[f"items/{i}/feedback"] = [feedback]
        return form
