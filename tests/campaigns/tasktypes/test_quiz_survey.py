from __future__ import annotations

from typing import Any

import pytest

from campaigns.tasktypes import score_quiz, task_type_get
from tests.campaigns.tasktypes.helpers import paths, qd

quiz = task_type_get("quiz")
survey = task_type_get("survey")

# WhyQA-like: pick the sentences that answer a why-question; sentences are graded
# essential (2) / ok (1) / wrong (-1); one question has no answer in the text.
WHYQA: dict[str, Any] = {
    "questions": [
        {
            "id": "plague",
            "prompt": "Why did the plague spread so quickly?",
            "multiple": True,
            "max_selected": 3,
            "required_points": 1,
            "options": [
                {"id": "s1", "text": "Fleas on rats carried it.", "group": "essential"},
                {"id": "s2", "text": "Ships moved rats between ports.", "group": "ok"},
                {"id": "s3", "text": "It peaked in 1347.", "group": "wrong"},
            ],
        },
        {
            "id": "rome",
            "prompt": "Why did Rome fall?",
            "multiple": True,
            "options": [
                {"id": "s1", "text": "Invasions weakened it.", "group": "essential"},
                {"id": "s2", "text": "Its economy declined.", "group": "essential"},
                {"id": "s3", "text": "Rome is in Italy.", "group": "wrong"},
            ],
        },
        {
            "id": "trap",
            "prompt": "Why is the sky green?",
            "unanswerable": True,
            "multiple": True,
            "options": [
                {"id": "s1", "text": "Light scatters.", "group": "wrong"},
                {"id": "s2", "text": "Grass reflects.", "group": "wrong"},
            ],
        },
    ],
    "scoring": {
        "group_points": {"essential": 2, "ok": 1, "wrong": -1},
        "floor": 0,
        "pass_ratio": 0.7,
        "unanswerable_points": 2,
        "answering_unanswerable": "fail",
    },
}


def responses(*rows):
    return {"questions": [{"id": i, "selected": s, "no_answer": n} for i, s, n in rows]}


def test_whyqa_quiz_scores():
    assert quiz.validate_config(WHYQA) == []
    perfect = responses(
        ("plague", ["s1", "s2"], False), ("rome", ["s1", "s2"], False), ("trap", [], True)
    )
    score = score_quiz(WHYQA, perfect)
    assert (score.points, score.max_points, score.passed) == (9, 9, True)
    # a wrong sentence costs a point; still 7 of 9 >= 70 %
    decent = responses(
        ("plague", ["s1", "s3"], False), ("rome", ["s1", "s2"], False), ("trap", [], True)
    )
    score = score_quiz(WHYQA, decent)
    assert (score.points, score.passed) == (7, True)
    assert [q.points for q in score.per_question] == [1, 4, 2]


def test_whyqa_quiz_answering_the_unanswerable_fails():
    answered = responses(
        ("plague", ["s1", "s2"], False), ("rome", ["s1", "s2"], False), ("trap", ["s1"], False)
    )
    score = score_quiz(WHYQA, answered)
    assert score.points == 7
    assert score.passed is False
    assert score.per_question[2].reason == "answered an unanswerable question"
    lenient = {**WHYQA, "scoring": {**WHYQA["scoring"], "answering_unanswerable": "zero"}}
    assert score_quiz(lenient, answered).passed is True


def test_whyqa_quiz_floor_and_required_points():
    only_wrong = responses(
        ("plague", ["s3"], False), ("rome", ["s1", "s2"], False), ("trap", [], True)
    )
    score = score_quiz(WHYQA, only_wrong)
    assert score.per_question[0].points == 0  # floored, not -1
    assert score.per_question[0].passed is False  # below its required point
    assert score.passed is False


# Nangia et al.: qualification passes with 3 of 5 correct.
THREE_OF_FIVE: dict[str, Any] = {
    "questions": [
        {
            "id": f"q{n}",
            "prompt": f"Question {n}?",
            "options": [
                {"id": "a", "text": "A", "group": "correct" if n % 2 else "wrong"},
                {"id": "b", "text": "B", "group": "wrong" if n % 2 else "correct"},
            ],
        }
        for n in range(1, 6)
    ],
    "scoring": {"group_points": {"correct": 1, "wrong": 0}, "pass_points": 3},
}


@pytest.mark.parametrize(
    ("picks", "points", "passed"),
    [
        (["a", "b", "a", "b", "a"], 5, True),
        (["a", "b", "a", "a", "b"], 3, True),
        (["a", "b", "b", "a", "b"], 2, False),
        ([None, None, None, None, None], 0, False),
    ],
)
def test_three_of_five(picks, points, passed):
    answer = responses(*[(f"q{n}", [p] if p else [], p is None) for n, p in enumerate(picks, 1)])
    score = score_quiz(THREE_OF_FIVE, answer)
    assert (score.points, score.max_points, score.passed) == (points, 5, passed)


def test_quiz_config_checks():
    assert quiz.validate_config({})
    bad = {
        "questions": [
            {"id": "x", "prompt": "?", "options": [{"id": "a", "text": "A", "group": "nope"}]}
        ]
    }
    assert paths(quiz.validate_config(bad)) == {"questions/0/options/0/group"}
    dup = {"questions": [THREE_OF_FIVE["questions"][0]] * 2, "scoring": THREE_OF_FIVE["scoring"]}
    assert paths(quiz.validate_config(dup)) == {"questions"}


def test_quiz_answer_validation_and_parse_form():
    form = qd(
        {
            "questions/0/selected": ["s1", "s2"],
            "questions/2/no_answer": "1",
            "questions/1/selected": "zz",
        }
    )
    answer = quiz.parse_form(form=form, items=[], config=WHYQA)
    assert answer == responses(
        ("plague", ["s1", "s2"], False), ("rome", ["zz"], False), ("trap", [], True)
    )
    assert paths(quiz.validate_answer(answer=answer, items=[], config=WHYQA)) == {
        "questions/1/selected"
    }
    too_many = responses(
        ("plague", ["s1", "s2", "s3", "s1"], False), ("rome", ["s1"], False), ("trap", [], True)
    )
    assert paths(quiz.validate_answer(answer=too_many, items=[], config=WHYQA)) == {
        "questions/0/selected"
    }
    both = responses(("plague", ["s1"], True), ("rome", [], False), ("trap", [], True))
    assert paths(quiz.validate_answer(answer=both, items=[], config=WHYQA)) == {
        "questions/0/selected",
        "questions/1/selected",
    }
    two = responses(*[(f"q{n}", ["a", "b"] if n == 1 else ["a"], False) for n in range(1, 6)])
    assert paths(quiz.validate_answer(answer=two, items=[], config=THREE_OF_FIVE)) == {
        "questions/0/selected"
    }
    assert paths(quiz.validate_answer(answer=responses(), items=[], config=THREE_OF_FIVE)) == {
        "questions"
    }


SURVEY: dict[str, Any] = {
    "anonymous": True,
    "questions": [
        {
            "id": "age",
            "text": "How old are you?",
            "kind": "number",
            "required": True,
            "min": 18,
            "max": 120,
        },
        {
            "id": "lang",
            "text": "Native language?",
            "kind": "single",
            "options": ["English", "Other"],
        },
        {"id": "tools", "text": "Tools used?", "kind": "multiple", "options": ["Search", "Maps"]},
        {"id": "notes", "text": "Anything else?", "kind": "long_text", "max_length": 50},
        {"id": "name", "text": "Nickname", "kind": "text", "required": True},
    ],
}


def test_survey_config():
    assert survey.validate_config(SURVEY) == []
    assert survey.validate_config({"questions": [{"id": "x", "text": "?", "kind": "single"}]})
    assert survey.validate_config({"anonymous": "yes", "questions": SURVEY["questions"]})
    assert survey.validate_config({"questions": [SURVEY["questions"][0]] * 2})


def test_survey_good_and_bad():
    good = {
        "responses": {"age": 30, "lang": "English", "tools": ["Maps"], "notes": "", "name": "Z"}
    }
    assert survey.validate_answer(answer=good, items=[], config=SURVEY) == []
    bad = {
        "responses": {"age": 12, "lang": "French", "tools": ["Cars"], "notes": "x" * 51, "extra": 1}
    }
    assert paths(survey.validate_answer(answer=bad, items=[], config=SURVEY)) == {
        "responses/age",
        "responses/lang",
        "responses/tools",
        "responses/notes",
        "responses/name",
        "responses/extra",
    }


def test_survey_parse_form_keeps_text():
    form = qd(
        {
            "responses/age": "thirty",
            "responses/tools": ["Search", "Maps"],
            "responses/name": " Zed ",
        }
    )
    answer = survey.parse_form(form=form, items=[], config=SURVEY)
    assert answer == {
        "responses": {
            "age": "thirty",
            "lang": "",
            "tools": ["Search", "Maps"],
            "notes": "",
            "name": "Zed",
        }
    }
    assert paths(survey.validate_answer(answer=answer, items=[], config=SURVEY)) == {
        "responses/age"
    }
