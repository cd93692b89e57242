"""Multiple-choice question writing over a passage (Nangia et al. 2021 protocol).

Item data: ``{"passage": str, "title"?: str, "source"?: str}`` (one passage per HIT).
Config: ``questions_per_passage`` (K, default 2) and ``justification``
("off" | "optional" | "required"; the JUSTIFICATION arm asks for one). Answer::

    {"questions": [{"question": str, "options": [str, str, str, str],
                    "correct": 0..3 | None | str, "justification": str}]}

Options must be filled in and distinct; ``correct`` is the index of the right one.
``next_items`` hands each question to ``mc_validation`` (default) or
``rubric_evaluation`` (``handoff.target``); the writer's label travels as
``writer_correct`` (never shown to validators).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from campaigns.tasktypes import base as tt
from campaigns.tasktypes.adversarial_qa import FoolsHandingWriter, fool_items

OPTIONS = 4
OPTION_LETTERS = "ABCD"


class MCQuestionWriting(FoolsHandingWriter):
    writes_free_text = True
    # Model in the loop: with the stage's ``adversarial`` option (one question per HIT)
    # the question and its options, without the writer's mark, go to a model on the
    # passage; the app judges the option it names. The BM25 baseline answers with a
    # sentence, not an option: the option needs an OpenAI-compatible endpoint.
    writes_adversarially = True
    questions_key = "questions_per_passage"
    adversarial_baseline_fits = False
    name = "mc_question_writing"
    graded_by_rubric = True
    label = "Multiple-choice question writing"
    description = "Write difficult multiple-choice questions about a passage."
    input_schema: ClassVar[dict] = tt.object_schema(
        {
            "passage": {"type": "string", "minLength": 1},
            "title": {"type": "string"},
            "source": {"type": "string"},
        },
        required=["passage"],
    )
    config_schema: ClassVar[dict] = {
        "type": "object",
        "properties": {
            "questions_per_passage": tt.count_setting(
                10, "Questions a worker writes about one passage."
            ),
            "justification": {
                "enum": ["off", "optional", "required"],
                "description": "Whether writers explain why their answer is right.",
            },
        },
    }
    config_defaults: ClassVar[dict[str, Any]] = {"questions_per_passage": 2, "justification": "off"}
    answer_schema: ClassVar[dict] = tt.answer_list_schema(
        "questions",
        {
            "question": {"type": "string"},
            "options": {"type": "array", "items": {"type": "string"}},
            "correct": {"type": ["integer", "string", "null"]},
            "justification": {"type": "string"},
        },
        required=["question", "options", "correct"],
    )
    handoff_schema: ClassVar[dict] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "target": {
                "enum": ["mc_validation", "rubric_evaluation", "adversarial_fool_validation"]
            },
            "fools_to": {"type": "integer", "minimum": 1},
            "only_fools": {"type": "boolean"},
        },
    }
    handoff_stage_keys: ClassVar[tuple[str, ...]] = ("fools_to",)

    def parse_form(
        self, *, form: Mapping[str, Any], items: list[dict[str, Any]], config: dict[str, Any]
    ) -> dict[str, Any]:
        k = self.effective_config(config)["questions_per_passage"]
        return {
            "questions": [
                {
                    "question": tt.form_text(form, f"questions/{i}/question"),
                    "options": [
                        tt.form_text(form, f"questions/{i}/options/{o}") for o in range(OPTIONS)
                    ],
                    "correct": tt.parse_int_or_text(tt.form_text(form, f"questions/{i}/correct")),
                    "justification": tt.form_text(form, f"questions/{i}/justification"),
                }
                for i in range(k)
            ]
        }

    def answer_errors(self, answer: Any, items: tt.Items, cfg: tt.Config) -> list[tt.FieldError]:
        questions = answer["questions"]
        errors = self.questions_count_errors(questions, cfg)
        for i, q in enumerate(questions):
            base = f"questions/{i}"
            errors += tt.text_errors(f"{base}/question", q["question"], what="The question")
            options = q["options"]
            if len(options) != OPTIONS:
                errors.append(tt.FieldError(f"{base}/options", f"Give exactly {OPTIONS} options."))
            for o, option in enumerate(options):
                errors += tt.text_errors(f"{base}/options/{o}", option, what="The option")
            errors += tt.duplicate_errors(
                [(f"{base}/options/{o}", t) for o, t in enumerate(options)], what="option"
            )
            correct = q["correct"]
            if not isinstance(correct, int) or not 0 <= correct < len(options):
                errors.append(tt.FieldError(f"{base}/correct", "Mark which option is correct."))
            justification = q.get("justification", "")
            if cfg["justification"] == "required":
                errors += tt.text_errors(
                    f"{base}/justification", justification, what="The justification"
                )
            elif cfg["justification"] == "optional":
                errors += tt.text_errors(
                    f"{base}/justification", justification, required=False, what="The justification"
                )
        errors += tt.duplicate_errors(
            [(f"questions/{i}/question", q["question"]) for i, q in enumerate(questions)],
            what="question",
        )
        return errors

    # --- Model in the loop ---------------------------------------------------------------

    def adversarial_entry(
        self, *, entry: Mapping[str, Any], data: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The HIT's (first) question as the try records it: its options lettered A-D
        and the writer's mark as the typed answer (``option``)."""
        questions = entry.get("questions") or [{}]
        q = questions[0] if isinstance(questions[0], Mapping) else {}
        options = [str(o) for o in q.get("options") or []]
        correct = q.get("correct")
        mark = (
            OPTION_LETTERS[correct]
            if isinstance(correct, int) and 0 <= correct < min(len(options), OPTIONS)
            else ""
        )
        return {
            "question": str(q.get("question", "")),
            "options": [{"id": OPTION_LETTERS[o], "text": t} for o, t in enumerate(options)],
            "answer": mark,
            "answer_type": "option",
        }

    def adversarial_question(
        self, *, entry: Mapping[str, Any], data: Mapping[str, Any]
    ) -> tuple[str, Any]:
        """The question with its lettered options (not the writer's mark), on the passage."""
        lines = [str(entry.get("question", ""))]
        lines += [f"{o['id']}) {o['text']}" for o in entry.get("options") or []]
        lines.append("Reply with the letter of the right option.")
        return "\n".join(lines), str(data.get("passage", ""))

    def model_answer_judge(
        self, *, entry: Mapping[str, Any], data: Mapping[str, Any], model_answer: str
    ) -> bool | None:
        """The option the model names (by letter or text) against the writer's mark."""
        return super().model_answer_judge(
            entry=entry,
            data={**data, "options": entry.get("options") or []},
            model_answer=model_answer,
        )

    def next_items(
        self, *, answer: dict[str, Any], items: list[dict[str, Any]], handoff: dict[str, Any]
    ) -> Iterable[dict[str, Any]]:
        """Each question as an item for ``mc_validation`` or ``rubric_evaluation``; with
        the adversarial option, claimed fools for ``adversarial_fool_validation`` (the
        passage, the lettered options, the writer's mark, the model's answer):
        ``target: "adversarial_fool_validation"`` hands on only them, ``fools_to`` (that
        stage's id) beside the questions; ``only_fools: false`` hands on every claim."""
        if handoff.get("target") == "adversarial_fool_validation":
            return fool_items(answer=answer, items=items, handoff=handoff, shown=_mc_shown)
        passage = items[0].get("data", {}) if items else {}

        def data(q: dict[str, Any]) -> dict[str, Any]:
            out: dict[str, Any] = {
                "passage": passage.get("passage", ""),
                "question": q["question"],
                "options": list(q["options"]),
            }
            if passage.get("title"):
                out["title"] = passage["title"]
            if handoff.get("target") == "rubric_evaluation":
                out["correct"] = q["correct"]
                if q.get("justification"):
                    out["justification"] = q["justification"]
            else:
                out["writer_correct"] = q["correct"]
            return out

        out = list(
            tt.question_items(
                items, answer, tag="mc", content=lambda q: [q["question"], q["options"]], data=data
            )
        )
        out += self.fools_beside(answer=answer, items=items, handoff=handoff, shown=_mc_shown)
        return out

    def page(
        self, form: tt.FormView, items: tt.Items, cfg: tt.Config, answer: Any
    ) -> dict[str, Any]:
        passage = tt.get_path(items, 0, "data", default={}) or {}
        blocks = []
        for i in range(cfg["questions_per_passage"]):
            q = tt.get_path(answer, "questions", i, default={}) or {}
            correct = form.field(f"questions/{i}/correct", q.get("correct"))
            blocks.append(
                {
                    "number": i + 1,
                    "question": form.field(f"questions/{i}/question", q.get("question")),
                    "options": [
                        {
                            "letter": OPTION_LETTERS[o],
                            "index": o,
                            "field": form.field(
                                f"questions/{i}/options/{o}", tt.get_path(q, "options", o)
                            ),
                            "correct_id": f"{correct.id}-{o}",
                            "is_correct": q.get("correct") == o,
                        }
                        for o in range(OPTIONS)
                    ],
                    "options_error": form.error(f"questions/{i}/options"),
                    "correct": correct,
                    "justification": form.field(
                        f"questions/{i}/justification", q.get("justification")
                    ),
                }
            )
        count_error = form.error("questions")
        return {
            "title": passage.get("title", ""),
            "passage": passage.get("passage", ""),
            "questions": blocks,
            "justification": cfg["justification"],
            "justification_optional": cfg["justification"] == "optional",
            "count_error": count_error,
        }

    def simulate(
        self, items: tt.Items, cfg: tt.Config, profile: str, rng: tt.Rng
    ) -> tt.SimulatedForm:
        """Good workers write distinct questions with four distinct options and mark the
        right one; sloppy ones sometimes repeat an option or forget the mark;
        spammers fill every box with the same junk."""
        passage = str(tt.get_path(items, 0, "data", "passage", default="") or "")
        words = [w.strip(".,;:!?\"'()") for w in passage.split()]
        words = [w for w in words if len(w) > 3] or ["passage"]
        form: dict[str, list[str]] = {}
        # A sloppy worker slips on at most one question of the HIT.
        careless = rng.randrange(cfg["questions_per_passage"]) if rng.random() < 0.35 else -1
        for i in range(cfg["questions_per_passage"]):
            base = f"questions/{i}"
            focus = rng.choice(words)
            question = f"According to the passage, what is true about {focus} (part {i + 1})?"
            options = [
                f"{focus} is mentioned first",
                f"{focus} is the reason for the outcome",
                f"{focus} is never explained",
                f"{focus} contradicts the title",
            ]
            correct = str(rng.randrange(OPTIONS))
            justification = f"The passage says so about {focus}."
            if profile == "sloppy" and i == careless:
                if rng.random() < 0.5:
                    options[3] = options[2]
                else:
                    correct = ""
            elif profile == "spammer" and rng.random() < 0.7:
                junk = rng.choice(tt.SIM_NOISE_WORDS)
                question, options, justification = junk, [junk] * OPTIONS, junk
            form[f"{base}/question"] = [question]
            for o, option in enumerate(options):
                form[f"{base}/options/{o}"] = [option]
            form[f"{base}/correct"] = [correct] if correct else []
            if cfg["justification"] != "off":
                form[f"{base}/justification"] = [justification]
        return form


def _mc_shown(data: Mapping[str, Any], record: Mapping[str, Any]) -> dict[str, Any]:
    """What a fool validator sees of a multiple-choice claim: the passage, the lettered
    options and the writer's mark (``adversarial_entry``'s record)."""
    entry = record.get("entry")
    entry = entry if isinstance(entry, Mapping) else {}
    shown: dict[str, Any] = {
        "passage": str(data.get("passage", "")),
        "options": [
            {"id": str(o.get("id", "")), "text": str(o.get("text", ""))}
            for o in entry.get("options") or []
            if isinstance(o, Mapping)
        ],
        "writer_option": str(entry.get("answer", "")),
    }
    if data.get("title"):
        shown["title"] = str(data["title"])
    return shown
