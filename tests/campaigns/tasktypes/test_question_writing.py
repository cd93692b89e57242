from __future__ import annotations

import copy
from typing import Any

import pytest

from campaigns.tasktypes import task_type_get
from campaigns.tasktypes.question_writing import DEFAULT_EXAMPLES, detect_answer_type
from tests.campaigns.tasktypes.helpers import item, paths, qd

qw = task_type_get("question_writing")


def cell(ctype: str, topic: str = "movies") -> list[dict]:
    return [item(f"{topic}-{ctype}", {"topic": topic, "complexity_type": ctype})]


GENERIC: dict[str, Any] = {
    "questions": [
        {"question": "Who directed Jaws?", "answer": "Steven Spielberg"},
        {"question": "When was Titanic released?", "answer": "December 19, 1997"},
        {"question": "How long is Avatar in minutes?", "answer": "162", "numeric_value": 162},
        {"question": "Is Up a Pixar film?", "answer": "Yes"},
        {"question": "Where was Casablanca filmed?", "answer": "Burbank"},
    ]
}

COUNT: dict[str, Any] = {
    "questions": [
        {
            "question": "How many Lord of the Rings films did Peter Jackson direct?",
            "answer": "3",
            "numeric_value": 3,
            "counted_entities": ["Fellowship", "Two Towers", "Return of the King"],
        },
        {
            "question": "How many Star Wars films were released before 2000?",
            "answer": "4",
            "numeric_value": 4,
            "counted_entities": ["A New Hope", "Empire", "Jedi", "Phantom Menace"],
        },
        {
            "question": "How many Harry Potter films are there?",
            "answer": "8",
            "numeric_value": 8,
            "counted_entities": ["1", "2", "3", "4", "5"],
        },
        {
            "question": "How many Toy Story films are there?",
            "answer": "4",
            "numeric_value": 4,
            "counted_entities": ["TS1", "TS2", "TS3", "TS4"],
        },
        {
            "question": "How many Jaws films have there been?",
            "answer": "4",
            "numeric_value": 4,
            "counted_entities": ["J1", "J2", "J3", "J4"],
        },
    ]
}


def test_item_and_config_schemas():
    assert qw.validate_item({"topic": "movies", "complexity_type": "count"}) == []
    assert paths(qw.validate_item({"topic": "", "complexity_type": "count"})) == {"topic"}
    assert paths(qw.validate_item({"topic": "movies", "complexity_type": "weird"})) == {
        "complexity_type"
    }
    assert qw.validate_config({"questions_per_hit": 5, "examples": DEFAULT_EXAMPLES}) == []
    assert qw.validate_config({"questions_per_hit": 0})
    assert qw.validate_config({"examples": {"nope": []}})


def test_default_examples_cover_every_type_and_pass_validation():
    for ctype, examples in DEFAULT_EXAMPLES.items():
        assert 1 <= len(examples) <= 2
        answer = {"questions": [{"counted_entities": [], **e} for e in examples]}
        config = {"questions_per_hit": len(examples)}
        assert qw.validate_answer(answer=answer, items=cell(ctype), config=config) == [], ctype


def test_good_answers_validate():
    assert qw.validate_answer(answer=GENERIC, items=cell("generic"), config={}) == []
    assert qw.validate_answer(answer=COUNT, items=cell("count"), config={}) == []


def test_wrong_number_of_questions():
    answer = {"questions": GENERIC["questions"][:3]}
    assert "questions" in paths(qw.validate_answer(answer=answer, items=cell("generic"), config={}))
    config = {"questions_per_hit": 3}
    assert qw.validate_answer(answer=answer, items=cell("generic"), config=config) == []


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"question": "Who directed Jaws"}, "questions/0/question"),
        ({"question": ""}, "questions/0/question"),
        ({"question": "x" * 2001 + "?"}, "questions/0/question"),
        ({"answer": ""}, "questions/0/answer"),
        ({"numeric_value": "lots"}, "questions/0/numeric_value"),
    ],
)
def test_bad_pairs(change, path):
    answer = copy.deepcopy(GENERIC)
    answer["questions"][0].update(change)
    assert path in paths(qw.validate_answer(answer=answer, items=cell("generic"), config={}))


def test_duplicate_questions_are_reported_on_the_repeat():
    answer = copy.deepcopy(GENERIC)
    answer["questions"][3]["question"] = "who directed JAWS ?"
    errors = qw.validate_answer(answer=answer, items=cell("generic"), config={})
    assert paths(errors) == {"questions/3/question"}


def test_count_rules():
    answer = copy.deepcopy(COUNT)
    answer["questions"][0]["numeric_value"] = None  # count needs a value
    answer["questions"][1]["counted_entities"] = ["only one"]  # 4 needs all 4
    answer["questions"][2]["counted_entities"] = ["1", "2", "3", "4"]  # 8 needs at least 5
    answer["questions"][3]["numeric_value"] = 2.5  # whole number
    answer["questions"][4]["numeric_value"] = -1
    errors = paths(qw.validate_answer(answer=answer, items=cell("count"), config={}))
    assert errors == {
        "questions/0/numeric_value",
        "questions/1/counted_entities",
        "questions/2/counted_entities",
        "questions/3/numeric_value",
        "questions/4/numeric_value",
    }


def test_superlative_needs_numeric_value_and_yesno_needs_yes_or_no():
    pair = {"question": "What is the longest Matrix film?", "answer": "The Matrix Reloaded"}
    errors = qw.validate_answer(
        answer={"questions": [pair]}, items=cell("superlative"), config={"questions_per_hit": 1}
    )
    assert paths(errors) == {"questions/0/numeric_value"}
    pair = {"question": "Did Tom Hanks win an Oscar for Big?", "answer": "Nope, he did not"}
    errors = qw.validate_answer(
        answer={"questions": [pair]}, items=cell("yesno"), config={"questions_per_hit": 1}
    )
    assert paths(errors) == {"questions/0/answer"}
    pair["answer"] = "no."
    assert (
        qw.validate_answer(
            answer={"questions": [pair]}, items=cell("yesno"), config={"questions_per_hit": 1}
        )
        == []
    )


def test_structurally_broken_answer():
    assert qw.validate_answer(answer={"questions": "nope"}, items=cell("generic"), config={})
    assert qw.validate_answer(answer=None, items=cell("generic"), config={})


def test_parse_form_round_trip_keeps_everything_typed():
    form = qd(
        {
            "questions/0/question": "  How many Jaws films are there  ",
            "questions/0/answer": "four",
            "questions/0/numeric_value": "about four",
            "questions/0/counted_entities": "Jaws\r\nJaws 2\r\n\r\n  Jaws 3-D \n",
            "questions/1/question": "x" * 2500,
        }
    )
    answer = qw.parse_form(form=form, items=cell("count"), config={"questions_per_hit": 2})
    first, second = answer["questions"]
    assert first == {
        "question": "How many Jaws films are there",
        "answer": "four",
        "numeric_value": "about four",
        "counted_entities": ["Jaws", "Jaws 2", "Jaws 3-D"],
    }
    assert second["question"] == "x" * 2500
    errors = paths(
        qw.validate_answer(answer=answer, items=cell("count"), config={"questions_per_hit": 2})
    )
    assert {"questions/0/question", "questions/0/numeric_value", "questions/1/question"} <= errors
    assert answer == qw.parse_form(form=form, items=cell("count"), config={"questions_per_hit": 2})


def test_parse_form_numbers():
    form = qd({"questions/0/numeric_value": "1,234", "questions/1/numeric_value": "3.5"})
    answer = qw.parse_form(form=form, items=cell("count"), config={"questions_per_hit": 3})
    assert [q["numeric_value"] for q in answer["questions"]] == [1234, 3.5, None]


def test_exclusive_key_is_topic_and_type():
    key = qw.exclusive_key(item=cell("count", " Movies ")[0])
    assert key == "movies|count"
    assert key == qw.exclusive_key(item={"topic": "movies", "complexity_type": "count"})
    assert key != qw.exclusive_key(item=cell("yesno", "movies")[0])


@pytest.mark.parametrize(
    ("question", "answer", "ctype", "expected"),
    [
        ("Is Up a Pixar film?", "Yes", "yesno", "boolean"),
        ("Who is older, A or B?", "no", "comparative", "boolean"),
        ("How many Jaws films are there?", "4", "count", "numeric"),
        ("How old is Jim Carrey?", "59", "generic", "numeric"),
        ("When was the director born?", "1956", "multihop", "date"),
        ("When was Titanic released?", "December 19, 1997", "generic", "date"),
        ("When was it?", "2005-12-09", "generic", "date"),
        ("Who directed Jaws?", "Steven Spielberg", "generic", "entity"),
        ("What is its motto?", '"Just do it"', "generic", "string"),
    ],
)
def test_detect_answer_type(question, answer, ctype, expected):
    assert detect_answer_type(question=question, answer=answer, complexity_type=ctype) == expected


def test_next_items_to_answer_linking_excluding_yes_no_and_numbers():
    items = cell("generic")
    handoff = {"exclude_answer_types": ["boolean", "numeric"]}
    assert qw.validate_handoff(handoff) == []
    out = list(qw.next_items(answer=GENERIC, items=items, handoff=handoff))
    assert [o["data"]["answer"] for o in out] == [
        "Steven Spielberg",
        "December 19, 1997",
        "Burbank",
    ]
    assert [o["data"]["answer_type"] for o in out] == ["entity", "date", "entity"]
    first = out[0]
    assert first["data"] == {
        "question": "Who directed Jaws?",
        "answer": "Steven Spielberg",
        "complexity_type": "generic",
        "topic": "movies",
        "answer_type": "entity",
    }
    assert first["external_id"].startswith("movies-generic/q1-")
    assert out[2]["external_id"].startswith("movies-generic/q5-")
    assert len({o["external_id"] for o in out}) == 3
    linking = task_type_get("answer_entity_linking")
    for o in out:
        assert linking.validate_item(o["data"]) == []


def test_next_items_without_exclusions_keeps_everything_and_extra_fields():
    out = list(qw.next_items(answer=COUNT, items=cell("count"), handoff={}))
    assert len(out) == 5
    # Mintaka §4.1-4.2: a count answer is linked as the entities counted.
    assert out[0]["data"]["answer_type"] == "entity"
    assert out[0]["data"]["answer"] == "Fellowship, Two Towers, Return of the King"
    assert out[0]["data"]["numeric_value"] == 3
    assert out[0]["data"]["counted_entities"][0] == "Fellowship"


def test_next_items_to_question_linking():
    handoff = {"target": "question_entity_linking"}
    out = list(qw.next_items(answer=GENERIC, items=cell("generic"), handoff=handoff))
    assert out[0]["data"] == {"question": "Who directed Jaws?"}
    assert len(out) == 5
    linking = task_type_get("question_entity_linking")
    assert all(linking.validate_item(o["data"]) == [] for o in out)


def test_handoff_schema_rejects_unknown_options():
    assert qw.validate_handoff({"exclude_answer_types": ["bool"]})
    assert qw.validate_handoff({"target": "rephrase"})
    assert qw.validate_handoff({"surprise": 1})
