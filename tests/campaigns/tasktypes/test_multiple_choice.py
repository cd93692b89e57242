"""Nangia et al.: MC writing, rubric grading, validation."""

from __future__ import annotations

import copy

import pytest

from campaigns.tasktypes import task_type_get
from tests.campaigns.tasktypes.helpers import item, paths, qd

mcw = task_type_get("mc_question_writing")
rub = task_type_get("rubric_evaluation")
mcv = task_type_get("mc_validation")

PASSAGE = item("p1", {"passage": "Ann left early because the bus was late.", "title": "Ann"})
GOOD = {
    "questions": [
        {
            "question": "Why did Ann leave early?",
            "options": ["The bus was late", "She was ill", "It rained", "She was bored"],
            "correct": 0,
            "justification": "The passage says so.",
        },
        {
            "question": "Who left early?",
            "options": ["Ann", "Bob", "The driver", "Nobody"],
            "correct": 0,
            "justification": "",
        },
    ]
}


def test_mc_writing_schemas():
    assert mcw.validate_item(PASSAGE["data"]) == []
    assert mcw.validate_item({"passage": ""})
    assert mcw.validate_config({"justification": "required", "questions_per_passage": 3}) == []
    assert mcw.validate_config({"justification": "sometimes"})


def test_mc_writing_good():
    assert mcw.validate_answer(answer=GOOD, items=[PASSAGE], config={}) == []
    assert (
        mcw.validate_answer(answer=GOOD, items=[PASSAGE], config={"justification": "optional"})
        == []
    )


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"question": ""}, "questions/0/question"),
        ({"options": ["a", "b", "c"]}, "questions/0/options"),
        ({"options": ["a", "", "c", "d"]}, "questions/0/options/1"),
        ({"options": ["a", "b", "A.", "d"]}, "questions/0/options/2"),
        ({"correct": None}, "questions/0/correct"),
        ({"correct": 4}, "questions/0/correct"),
        ({"correct": "B"}, "questions/0/correct"),
    ],
)
def test_mc_writing_bad(change, path):
    answer = copy.deepcopy(GOOD)
    answer["questions"][0].update(change)
    assert path in paths(mcw.validate_answer(answer=answer, items=[PASSAGE], config={}))


def test_mc_writing_justification_and_duplicates():
    errors = mcw.validate_answer(answer=GOOD, items=[PASSAGE], config={"justification": "required"})
    assert paths(errors) == {"questions/1/justification"}
    answer = copy.deepcopy(GOOD)
    answer["questions"][1]["question"] = "why did ann leave early"
    assert paths(mcw.validate_answer(answer=answer, items=[PASSAGE], config={})) == {
        "questions/1/question"
    }
    assert paths(
        mcw.validate_answer(answer=GOOD, items=[PASSAGE], config={"questions_per_passage": 3})
    ) == {"questions"}


def test_mc_writing_parse_form():
    form = qd(
        {
            "questions/0/question": "Why did Ann leave?",
            "questions/0/options/0": "bus",
            "questions/0/options/3": "bored",
            "questions/0/correct": "3",
            "questions/0/justification": "because",
            "questions/1/correct": "x",
        }
    )
    answer = mcw.parse_form(form=form, items=[PASSAGE], config={})
    assert answer["questions"][0] == {
        "question": "Why did Ann leave?",
        "options": ["bus", "", "", "bored"],
        "correct": 3,
        "justification": "because",
    }
    assert answer["questions"][1]["correct"] == "x"
    assert "questions/1/correct" in paths(
        mcw.validate_answer(answer=answer, items=[PASSAGE], config={})
    )


def test_mc_writing_next_items():
    to_validation = list(mcw.next_items(answer=GOOD, items=[PASSAGE], handoff={}))
    assert to_validation[0]["data"]["writer_correct"] == 0
    assert "correct" not in to_validation[0]["data"]
    assert all(mcv.validate_item(o["data"]) == [] for o in to_validation)
    to_rubric = list(
        mcw.next_items(answer=GOOD, items=[PASSAGE], handoff={"target": "rubric_evaluation"})
    )
    assert to_rubric[0]["data"]["justification"] == "The passage says so."
    assert all(rub.validate_item(o["data"]) == [] for o in to_rubric)
    assert to_rubric[0]["external_id"] == to_validation[0]["external_id"]


RUB_ITEMS = [
    item("e1", {**GOOD["questions"][0], "passage": "Ann left early because the bus was late."})
]
GRADE = {
    "external_id": "e1",
    "answerable": "yes",
    "reading_depth": "skim_one",
    "creativity": "a_little",
    "distracting_options": "no",
    "feedback": "",
}


def test_rubric_good_and_bad():
    assert rub.validate_answer(answer={"items": [GRADE]}, items=RUB_ITEMS, config={}) == []
    bad = {
        **GRADE,
        "answerable": "maybe",
        "reading_depth": None,
        "creativity": "wow",
        "feedback": "x" * 2001,
    }
    assert paths(rub.validate_answer(answer={"items": [bad]}, items=RUB_ITEMS, config={})) == {
        "items/0/answerable",
        "items/0/reading_depth",
        "items/0/creativity",
        "items/0/feedback",
    }
    assert rub.validate_answer(answer={"items": []}, items=RUB_ITEMS, config={})


def test_rubric_parse_form_and_aggregate():
    form = qd(
        {
            "items/0/answerable": "yes_but_label_wrong",
            "items/0/reading_depth": "read_carefully",
            "items/0/creativity": "very",
            "items/0/feedback": "Nice distractors!",
        }
    )
    answer = rub.parse_form(form=form, items=RUB_ITEMS, config={})
    assert answer["items"][0]["distracting_options"] is None
    assert answer["items"][0]["feedback"] == "Nice distractors!"
    assert paths(rub.validate_answer(answer=answer, items=RUB_ITEMS, config={})) == {
        "items/0/distracting_options"
    }
    agg = rub.aggregate(answers=[{"items": [GRADE]}, answer], item=RUB_ITEMS[0])
    assert agg["answers"] == 2
    assert agg["reading_depth"]["mean"] == pytest.approx((2 + 5) / 2)
    assert agg["creativity"]["mean"] == pytest.approx((2 + 4) / 2)
    assert agg["answerable"]["counts"] == {"yes": 1, "yes_but_label_wrong": 1}


VAL_ITEMS = [
    item(
        "v1",
        {
            **PASSAGE["data"],
            "question": "Why?",
            "options": ["a", "b", "c", "d"],
            "writer_correct": 1,
        },
    )
]


@pytest.mark.parametrize("choice", [0, 3, "invalid"])
def test_validation_good(choice):
    answer = {"items": [{"external_id": "v1", "choice": choice}]}
    assert mcv.validate_answer(answer=answer, items=VAL_ITEMS, config={}) == []


@pytest.mark.parametrize("choice", [None, 4, -1, "b", "Invalid!"])
def test_validation_bad(choice):
    answer = {"items": [{"external_id": "v1", "choice": choice}]}
    assert paths(mcv.validate_answer(answer=answer, items=VAL_ITEMS, config={})) == {
        "items/0/choice"
    }


def test_validation_parse_form_and_majority():
    assert mcv.parse_form(form=qd({"items/0/choice": "2"}), items=VAL_ITEMS, config={}) == {
        "items": [{"external_id": "v1", "choice": 2}]
    }
    assert mcv.parse_form(form=qd({}), items=VAL_ITEMS, config={})["items"][0]["choice"] is None

    def votes(*choices):
        return [{"items": [{"external_id": "v1", "choice": c}]} for c in choices]

    agreed = mcv.aggregate(answers=votes(1, 2), item=VAL_ITEMS[0])  # writer says 1: 2 of 3
    assert agreed == {
        "votes": {"1": 1, "2": 1},
        "majority": "1",
        "keep": True,
        "writer_agrees": True,
    }
    split = mcv.aggregate(answers=votes(2, 3), item=VAL_ITEMS[0])
    assert split["majority"] is None
    assert split["keep"] is False
    invalid = mcv.aggregate(answers=votes("invalid", "invalid", "invalid"), item=VAL_ITEMS[0])
    assert invalid["majority"] == "invalid"
    assert invalid["keep"] is False
    assert invalid["writer_agrees"] is False
