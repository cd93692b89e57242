"""The app's own judging of a model's answer (model in the loop): entity ids, numbers,
dates and options, normalised (campaigns.tasktypes.answer_match)."""

from decimal import Decimal

import pytest

from campaigns.tasktypes import task_type_get
from campaigns.tasktypes.answer_match import (
    JudgedKind,
    StatedAnswer,
    dates,
    entity_ids,
    model_answer_matches,
    number_of,
    numbers,
    stated_answer,
)

OPTIONS = [{"id": "A", "text": "Paris"}, {"id": "B", "text": "Lyon"}, {"id": "C", "text": "Nice"}]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Q42", ["Q42"]),
        ("q42", ["Q42"]),
        ("wd:Q42", ["Q42"]),
        ("http://www.wikidata.org/entity/Q42", ["Q42"]),
        ("https://www.wikidata.org/wiki/Q42 and Q5", ["Q42", "Q5"]),
        ("Q0 is no id; FAQ42 neither", []),
    ],
)
def test_wikidata_ids_in_any_common_spelling(text, expected):
    assert entity_ids(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1000", Decimal(1000)),
        ("1,000", Decimal(1000)),
        ("1 000", Decimal(1000)),
        ("$1,000.50", Decimal("1000.5")),
        ("1.5 million", Decimal(1500000)),
        ("5k", Decimal(5000)),
        ("-3", Decimal(-3)),
        ("forty-two", Decimal(42)),
        ("twelve", Decimal(12)),
        ("46 years", Decimal(46)),
        ("12%", Decimal(12)),
        ("no number", None),
        ("1 or 2", None),
    ],
)
def test_a_workers_number_normalised(text, expected):
    assert number_of(text) == expected


def test_numbers_in_a_sentence_once_each():
    assert numbers("About 1,000 people, or 1000, came; Q42 has no number") == [Decimal(1000)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1956-10-20", [(1956, 10, 20)]),
        ("20 October 1956", [(1956, 10, 20)]),
        ("20th of Oct. 1956", [(1956, 10, 20)]),
        ("October 20, 1956", [(1956, 10, 20)]),
        ("20/10/1956", [(1956, 10, 20)]),
        ("10/20/1956", [(1956, 10, 20)]),
        ("3/4/1981", [(1981, 4, 3), (1981, 3, 4)]),
        ("March 1981", [(1981, 3, None)]),
        ("in 1990", [(1990, None, None)]),
        ("31/02/1999", []),
    ],
)
def test_dates_in_common_formats(text, expected):
    assert dates(text) == expected


@pytest.mark.parametrize(
    ("stated", "model_answer", "expected"),
    [
        # entity ids
        (StatedAnswer(JudgedKind.ENTITY, "Q42"), "wd:Q42", True),
        (StatedAnswer(JudgedKind.ENTITY, "http://www.wikidata.org/entity/Q42"), "q42", True),
        (StatedAnswer(JudgedKind.ENTITY, "Q42"), "It is Q5.", False),
        (StatedAnswer(JudgedKind.ENTITY, "Q42"), "Q42 or Q5", None),
        (StatedAnswer(JudgedKind.ENTITY, "Q42", labels=("Douglas Adams",)), "douglas adams", True),
        (StatedAnswer(JudgedKind.ENTITY, "Q42"), "Douglas Adams", None),
        (StatedAnswer(JudgedKind.ENTITY, "Douglas Adams"), "Q42", None),
        # numbers
        (StatedAnswer(JudgedKind.NUMBER, "1000"), "The answer is 1,000.", True),
        (StatedAnswer(JudgedKind.NUMBER, "1,000"), "about 1000 people", True),
        (StatedAnswer(JudgedKind.NUMBER, "1,000"), "About 900 people.", False),
        (StatedAnswer(JudgedKind.NUMBER, "12"), "twelve", True),
        (StatedAnswer(JudgedKind.NUMBER, "1000"), "900 or 1000", None),
        (StatedAnswer(JudgedKind.NUMBER, "1000"), "I do not know", None),
        (StatedAnswer(JudgedKind.NUMBER, "7"), "On 7 March 1981 there were 9.", False),
        # dates
        (StatedAnswer(JudgedKind.DATE, "1956-10-20"), "On October 20, 1956.", True),
        (StatedAnswer(JudgedKind.DATE, "20/10/1956"), "1956-10-20", True),
        (StatedAnswer(JudgedKind.DATE, "1956"), "On 20 October 1956.", True),
        (StatedAnswer(JudgedKind.DATE, "1956-10-20"), "In 1957.", False),
        (StatedAnswer(JudgedKind.DATE, "1956-10-20"), "On 21 October 1956.", False),
        (StatedAnswer(JudgedKind.DATE, "1956-10-20"), "In 1956.", None),
        (StatedAnswer(JudgedKind.DATE, "1956-10-20"), "No idea.", None),
        # options
        (StatedAnswer(JudgedKind.OPTION, "B", OPTIONS), "B", True),
        (StatedAnswer(JudgedKind.OPTION, "B", OPTIONS), "(b) Lyon", True),
        (StatedAnswer(JudgedKind.OPTION, "Lyon", OPTIONS), "Option B.", True),
        (StatedAnswer(JudgedKind.OPTION, "B", OPTIONS), "Paris", False),
        (StatedAnswer(JudgedKind.OPTION, "B", OPTIONS), "Paris or Lyon", None),
        (StatedAnswer(JudgedKind.OPTION, "B", OPTIONS), "Marseille", None),
    ],
)
def test_model_answer_matches(stated, model_answer, expected):
    assert model_answer_matches(stated, model_answer) is expected


def test_the_answer_a_task_type_records_with_its_type():
    entry = {"answer": ["Q42"], "answer_type": "entity", "answer_label": "Douglas Adams"}
    assert stated_answer(entry, {}) == StatedAnswer(
        JudgedKind.ENTITY, "Q42", labels=("Douglas Adams",)
    )
    number = stated_answer({"answer": "3", "answer_type": "numerical"}, {})
    assert number is not None
    assert number.kind == "number"
    lettered = stated_answer({"answer": "B", "answer_type": "option"}, {"options": ["x", "y"]})
    assert lettered is not None
    assert lettered.options == ({"id": "A", "text": "x"}, {"id": "B", "text": "y"})
    assert stated_answer({"answer": "x", "answer_type": "string"}, {}) is None
    assert stated_answer({"answer": ["a", "b"], "answer_type": "entity"}, {}) is None
    assert stated_answer({"question": "q"}, {}) is None


def test_every_task_type_judges_a_typed_answer_it_records():
    tt = task_type_get("question_writing")
    entry = {"question": "How many?", "answer": "1,000", "answer_type": "numeric"}

    assert tt.model_answer_judge(entry=entry, data={}, model_answer="1000") is True
    assert tt.model_answer_judge(entry=entry, data={}, model_answer="999") is False
