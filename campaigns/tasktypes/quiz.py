"""Qualification quiz with an answer key and a scoring rule (e.g. WhyQA's, Nangia's 3 of 5).

The quiz lives in the stage config (items are ignored; one placeholder item per HIT)::

    {"questions": [{"id": "q1", "prompt": str, "context"?: str,
                    "multiple": bool,              # checkboxes instead of radio buttons
                    "max_selected"?: int,          # multiple only
                    "unanswerable"?: bool,         # the right response is "no answer"
                    "required_points"?: number,    # minimum for this question to pass
                    "options": [{"id": "a", "text": str, "group": "essential"}]}],
     "scoring": {"group_points": {"essential": 2, "ok": 1, "wrong": -1},
                 "floor": 0,                      # a question never scores below this
                 "pass_points"?: number | "pass_ratio"?: 0..1,   # default: all points
                 "unanswerable_points": 1,        # for answering "no answer" correctly
                 "answering_unanswerable": "fail" | "zero"},
     "allow_no_answer": true,
     # Tutorial (optional): instructional steps shown first, then practice questions
     # with immediate feedback (their key is in the page: they are never scored).
     "steps": [{"title": str, "body": str}],
     "practice": [{"id": "p1", "prompt": str, "context"?: str, "multiple"?: bool,
                   "explanation": str, "options": [{"id": "a", "text": str,
                                                    "correct": bool}]}],
     # Retakes and the pass bonus: campaigns.workforce.quizzes.
     "retake": {"max_tries": 2, "delay_minutes": 60},
     "pass_bonus": "1.50"}

Groups are hidden from the worker. Answer::

    {"questions": [{"id": "q1", "selected": ["a", "c"], "no_answer": false}],
     "practice": [{"id": "p1", "selected": ["b"]}]}      # recorded, not scored

``score_quiz(config, answer)`` is pure and returns a ``QuizScore``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from campaigns.tasktypes import base as tt

_EPSILON = 1e-9


@dataclass(frozen=True)
class QuestionScore:
    id: str
    points: float
    max_points: float
    passed: bool
    reason: str = ""


@dataclass(frozen=True)
class QuizScore:
    points: float
    max_points: float
    passed: bool
    per_question: list[QuestionScore] = field(default_factory=list)


def _scoring(config: Mapping[str, Any]) -> dict[str, Any]:
    defaults = {
        "group_points": {"correct": 1, "wrong": 0},
        "floor": 0,
        "unanswerable_points": 1,
        "answering_unanswerable": "fail",
    }
    return {**defaults, **(config.get("scoring") or {})}


def _question_max(question: Mapping[str, Any], scoring: Mapping[str, Any]) -> float:
    if question.get("unanswerable"):
        return float(scoring["unanswerable_points"])
    points = sorted(
        (float(scoring["group_points"].get(o.get("group"), 0)) for o in question["options"]),
        reverse=True,
    )
    positive = [p for p in points if p > 0]
    if not question.get("multiple"):
        return positive[0] if positive else 0.0
    limit = question.get("max_selected") or len(positive)
    return sum(positive[:limit])


def score_quiz(config: Mapping[str, Any], answer: Mapping[str, Any]) -> QuizScore:
    """Score ``answer`` against the quiz in ``config`` (see the module docstring).

    Per question: the sum of the selected options' group points, clamped to
    [floor, question maximum]; "no answer" scores ``unanswerable_points`` on an
    unanswerable question and ``floor`` elsewhere. Answering an unanswerable
    question scores ``floor`` and, with ``answering_unanswerable: "fail"``, fails
    the quiz. The quiz passes when the total reaches ``pass_points`` (or
    ``pass_ratio`` of the maximum; all points by default) and no question is
    below its ``required_points``.
    """
    scoring = _scoring(config)
    responses = {r.get("id"): r for r in (answer.get("questions") or []) if isinstance(r, Mapping)}
    per_question = []
    for question in config.get("questions", []):
        qmax = _question_max(question, scoring)
        response = responses.get(question["id"], {})
        selected = [s for s in response.get("selected", []) if isinstance(s, str)]
        groups = {o["id"]: o.get("group") for o in question["options"]}
        no_answer = bool(response.get("no_answer")) and not selected
        floor = float(scoring["floor"])
        passed, reason = True, ""
        if question.get("unanswerable"):
            if no_answer:
                points = qmax
            else:
                points = min(floor, qmax)
                reason = "answered an unanswerable question"
                passed = scoring["answering_unanswerable"] != "fail"
        elif no_answer or not selected:
            points, reason = min(floor, qmax), "no answer"
        else:
            raw = sum(float(scoring["group_points"].get(groups.get(s), 0)) for s in selected)
            points = max(floor, min(raw, qmax))
        required = question.get("required_points")
        if required is not None and points + _EPSILON < float(required):
            passed, reason = False, reason or f"below the required {required} points"
        per_question.append(QuestionScore(question["id"], points, qmax, passed, reason))
    total = sum(q.points for q in per_question)
    max_total = sum(q.max_points for q in per_question)
    if "pass_points" in scoring:
        threshold = float(scoring["pass_points"])
    elif "pass_ratio" in scoring:
        threshold = float(scoring["pass_ratio"]) * max_total
    else:
        threshold = max_total
    passed = total + _EPSILON >= threshold and all(q.passed for q in per_question)
    return QuizScore(points=total, max_points=max_total, passed=passed, per_question=per_question)


_ID = {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,40}$"}


def _question_schema(
    extra: dict[str, Any], *, option: dict[str, Any], min_options: int
) -> dict[str, Any]:
    """The JSON schema of a quiz question (scored or practice) with ``extra`` fields and
    options carrying ``option`` besides their id and text."""
    return {
        "type": "object",
        "required": ["id", "prompt", "options"],
        "properties": {
            "id": _ID,
            "prompt": {"type": "string", "minLength": 1},
            "context": {"type": "string"},
            "multiple": {"type": "boolean"},
            **extra,
            "options": {
                "type": "array",
                "minItems": min_options,
                "items": {
                    "type": "object",
                    "required": ["id", "text"],
                    "properties": {
                        "id": _ID,
                        "text": {"type": "string", "minLength": 1},
                        **option,
                    },
                },
            },
        },
    }


def _question_view(
    form: tt.FormView, answer: Any, part: str, i: int, q: Mapping[str, Any]
) -> tuple[dict[str, Any], Mapping[str, Any]]:
    """What the page shows of question ``i`` of ``part`` ("questions" or "practice"),
    and the worker's response to it. The options carry no answer key."""
    response = tt.get_path(answer, part, i, default={}) or {}
    selected = set(response.get("selected") or [])
    f = form.field(f"{part}/{i}/selected")
    return {
        "number": i + 1,
        "prompt": q.get("prompt", ""),
        "context": q.get("context", ""),
        "multiple": bool(q.get("multiple")),
        "field": f,
        "options": [
            {
                "value": o["id"],
                "label": o["text"],
                "id": f"{f.id}-{o['id']}",
                "checked": o["id"] in selected,
            }
            for o in q.get("options", [])
        ],
    }, response


class Quiz(tt.TaskType):
    name = "quiz"
    is_quiz = True
    label = "Qualification quiz"
    description = "Questions with an answer key and a scoring rule; grants a qualification."
    config_schema: ClassVar[dict] = {
        "type": "object",
        "required": ["questions"],
        "properties": {
            "allow_no_answer": {
                "type": "boolean",
                "description": 'Offer "none of these" as an answer.',
            },
            "questions": {
                "type": "array",
                "minItems": 1,
                "items": _question_schema(
                    {
                        "max_selected": {"type": "integer", "minimum": 1},
                        "unanswerable": {"type": "boolean"},
                        "required_points": {"type": "number"},
                    },
                    option={"group": {"type": "string"}},
                    min_options=1,
                ),
            },
            "steps": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["title", "body"],
                    "properties": {
                        "title": {"type": "string", "minLength": 1, "maxLength": 200},
                        "body": {"type": "string", "minLength": 1, "maxLength": 10000},
                    },
                },
            },
            "practice": {
                "type": "array",
                "items": _question_schema(
                    {"explanation": {"type": "string"}},
                    option={"correct": {"type": "boolean"}},
                    min_options=2,
                ),
            },
            "retake": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "max_tries": {"type": "integer", "minimum": 1, "maximum": 100},
                    "delay_minutes": {"type": "number", "minimum": 0},
                },
            },
            "pass_bonus": {
                "type": "string",
                "pattern": "^[0-9]{1,4}(\\.[0-9]{1,2})?$",
                "description": "Bonus paid to a worker who passes, e.g. 1.50; empty for none.",
            },
            "scoring": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "group_points": {"type": "object", "additionalProperties": {"type": "number"}},
                    "floor": {"type": "number"},
                    "pass_points": {"type": "number"},
                    "pass_ratio": {"type": "number", "minimum": 0, "maximum": 1},
                    "unanswerable_points": {"type": "number", "minimum": 0},
                    "answering_unanswerable": {"enum": ["fail", "zero"]},
                },
            },
        },
    }
    config_defaults: ClassVar[dict[str, Any]] = {"allow_no_answer": True}
    answer_schema: ClassVar[dict] = tt.answer_list_schema(
        "questions",
        {
            "id": {"type": "string"},
            "selected": {"type": "array", "items": {"type": "string"}},
            "no_answer": {"type": "boolean"},
        },
        required=["id", "selected"],
        practice=tt.object_list_schema(
            {"id": {"type": "string"}, "selected": {"type": "array", "items": {"type": "string"}}},
            required=["id", "selected"],
        ),
    )

    def instruction_numbers(self, config: Mapping[str, Any] | None) -> dict[str, float]:
        """Besides the config's numbers: ``question_count``, the pass mark
        ``pass_points`` (when the scoring gives one) and the retake's ``max_tries``."""
        cfg = self.effective_config(config)
        numbers = super().instruction_numbers(cfg)
        questions = cfg.get("questions")
        if isinstance(questions, list):
            numbers["question_count"] = len(questions)
        scoring = cfg.get("scoring")
        if isinstance(scoring, Mapping) and isinstance(scoring.get("pass_points"), int | float):
            numbers["pass_points"] = scoring["pass_points"]
        retake = cfg.get("retake")
        if isinstance(retake, Mapping) and isinstance(retake.get("max_tries"), int):
            numbers["max_tries"] = retake["max_tries"]
        return numbers

    def validate_config(self, config: Any) -> list[tt.FieldError]:
        errors = super().validate_config(config)
        if errors:
            return errors
        ids = [q["id"] for q in config["questions"]]
        if len(set(ids)) != len(ids):
            errors.append(tt.FieldError("questions", "Question ids must be unique."))
        practice_ids = [q["id"] for q in config.get("practice", [])]
        if len(set(practice_ids)) != len(practice_ids):
            errors.append(tt.FieldError("practice", "Practice question ids must be unique."))
        for i, q in enumerate(config.get("practice", [])):
            if not any(o.get("correct") for o in q["options"]):
                errors.append(tt.FieldError(f"practice/{i}/options", "Mark the correct option(s)."))
        groups = set(_scoring(config)["group_points"])
        for i, q in enumerate(config["questions"]):
            option_ids = [o["id"] for o in q["options"]]
            if len(set(option_ids)) != len(option_ids):
                errors.append(tt.FieldError(f"questions/{i}/options", "Option ids must be unique."))
            for j, o in enumerate(q["options"]):
                if not q.get("unanswerable") and o.get("group") not in groups:
                    errors.append(
                        tt.FieldError(f"questions/{i}/options/{j}/group", "Unknown scoring group.")
                    )
        return errors

    def parse_form(
        self, *, form: Mapping[str, Any], items: list[dict[str, Any]], config: dict[str, Any]
    ) -> dict[str, Any]:
        answer: dict[str, Any] = {
            "questions": [
                {
                    "id": q["id"],
                    "selected": tt.form_list(form, f"questions/{i}/selected"),
                    "no_answer": tt.form_bool(form, f"questions/{i}/no_answer"),
                }
                for i, q in enumerate(config.get("questions", []))
            ]
        }
        if config.get("practice"):
            answer["practice"] = [
                {"id": q["id"], "selected": tt.form_list(form, f"practice/{i}/selected")}
                for i, q in enumerate(config["practice"])
            ]
        return answer

    def answer_errors(self, answer: Any, items: tt.Items, cfg: tt.Config) -> list[tt.FieldError]:
        errors: list[tt.FieldError] = []
        questions = cfg.get("questions", [])
        responses = answer["questions"]
        if [r["id"] for r in responses] != [q["id"] for q in questions]:
            return [tt.FieldError("questions", "Answer every question of the quiz.")]
        for i, (q, r) in enumerate(zip(questions, responses, strict=True)):
            path = f"questions/{i}/selected"
            selected, no_answer = r["selected"], bool(r.get("no_answer"))
            valid = {o["id"] for o in q["options"]}
            if no_answer and not cfg["allow_no_answer"]:
                errors.append(tt.FieldError(path, "Choose an answer."))
            elif no_answer and selected:
                errors.append(
                    tt.FieldError(path, 'Either choose options or "no answer", not both.')
                )
            elif not selected and not no_answer:
                errors.append(tt.FieldError(path, "Answer this question."))
            elif any(s not in valid for s in selected):
                errors.append(tt.FieldError(path, "Choose among the options shown."))
            elif not q.get("multiple") and len(selected) > 1:
                errors.append(tt.FieldError(path, "Choose one option."))
            elif q.get("max_selected") and len(selected) > q["max_selected"]:
                errors.append(tt.FieldError(path, f"Choose at most {q['max_selected']} options."))
        practice = {q["id"]: q for q in cfg.get("practice", [])}
        for i, r in enumerate(answer.get("practice") or []):
            q = practice.get(r["id"])
            valid = {o["id"] for o in q["options"]} if q else set()
            if q is None or any(s not in valid for s in r["selected"]):
                errors.append(
                    tt.FieldError(f"practice/{i}/selected", "Choose among the options shown.")
                )
        return errors

    def page(
        self, form: tt.FormView, items: tt.Items, cfg: tt.Config, answer: Any
    ) -> dict[str, Any]:
        blocks = []
        for i, q in enumerate(cfg.get("questions", [])):
            block, response = _question_view(form, answer, "questions", i, q)
            blocks.append(
                {
                    **block,
                    "max_selected": q.get("max_selected"),
                    "no_answer": form.field(
                        f"questions/{i}/no_answer", bool(response.get("no_answer"))
                    ),
                }
            )
        practice = []
        for i, q in enumerate(cfg.get("practice", [])):
            block, _ = _question_view(form, answer, "practice", i, q)
            # Practice only: its key is in the page for immediate feedback.
            for option, source in zip(block["options"], q.get("options", []), strict=True):
                option["correct"] = bool(source.get("correct"))
            practice.append(
                {
                    **block,
                    "explanation": q.get("explanation", ""),
                    "answer": [o["text"] for o in q.get("options", []) if o.get("correct")],
                }
            )
        return {
            "steps": list(cfg.get("steps", [])),
            "practice": practice,
            "questions": blocks,
            "allow_no_answer": cfg["allow_no_answer"],
        }

    def simulate(
        self, items: tt.Items, cfg: tt.Config, profile: str, rng: tt.Rng
    ) -> tt.SimulatedForm:
        """Good workers mostly pick options scoring points (they read carefully) and say
        "no answer" to unanswerable questions; sloppy ones pick one option at
        random; spammers pick nothing or everything."""
        points = _scoring(cfg)["group_points"]
        form: dict[str, list[str]] = {}
        for i, q in enumerate(cfg.get("questions", [])):
            ids = [o["id"] for o in q["options"]]
            selected: list[str] = []
            no_answer = False
            if profile == "good":
                if q.get("unanswerable") and cfg["allow_no_answer"]:
                    no_answer = True
                else:
                    ranked = sorted(
                        q["options"], key=lambda o: -float(points.get(o.get("group"), 0))
                    )
                    best = [o["id"] for o in ranked if float(points.get(o.get("group"), 0)) > 0]
                    limit = (q.get("max_selected") or len(best)) if q.get("multiple") else 1
                    selected = best[:limit] or [rng.choice(ids)]
                    if rng.random() < 0.1:
                        selected = [rng.choice(ids)]
            elif profile == "sloppy":
                selected = [rng.choice(ids)]
            elif rng.random() < 0.5:
                selected = ids
            form[f"questions/{i}/selected"] = selected
            if no_answer:
                form[f"questions/{i}/no_answer"] = ["1"]
        for i, q in enumerate(cfg.get("practice", [])):
            right = [o["id"] for o in q["options"] if o.get("correct")]
            guess = right if profile == "good" else [rng.choice([o["id"] for o in q["options"]])]
            form[f"practice/{i}/selected"] = guess if q.get("multiple") else guess[:1]
        return form
