"""Answer-type detection, on crafted answers and on Mintaka's typed answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from campaigns.tasktypes.answer_types import (
    MINTAKA_ANSWER_TYPES,
    AnswerType,
    detect_answer_type,
    needs_answer_linking,
)
from linking.evaluation import load_mintaka

MINTAKA = Path("/work/shared/data/mintaka/mintaka_dev_sample.json")


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("Yes", AnswerType.BOOLEAN),
        ("no.", AnswerType.BOOLEAN),
        ("42", AnswerType.NUMERIC),
        ("1,234,567", AnswerType.NUMERIC),
        ("$3.5 million", AnswerType.NUMERIC),
        ("12%", AnswerType.NUMERIC),
        ("twenty-one", AnswerType.NUMERIC),
        ("46 years", AnswerType.NUMERIC),
        ("6'2\"", AnswerType.NUMERIC),
        ("1956-10-20", AnswerType.DATE),
        ("20-Oct-56", AnswerType.DATE),
        ("March 2, 1981", AnswerType.DATE),
        ("1942", AnswerType.DATE),
        ("1990s", AnswerType.DATE),
        ("1988, 1991, 1992", AnswerType.DATE),
        ("Simone Biles", AnswerType.ENTITY),
        ("1906 Chicago Cubs", AnswerType.ENTITY),
        ("Uncharted: Drake's Fortune (2007), Uncharted 2 (2009)", AnswerType.ENTITY),
        ("he served for a four year term in office", AnswerType.STRING),
        ("", AnswerType.STRING),
    ],
)
def test_detects(answer, expected):
    assert detect_answer_type(answer) == expected


def test_question_settles_year_or_count():
    assert detect_answer_type("2001", question="When was it released?") == AnswerType.DATE
    assert detect_answer_type("2001", question="How many copies sold?") == AnswerType.NUMERIC


def test_routing_excludes_yes_no_numbers_and_dates():
    assert not needs_answer_linking("Yes")
    assert not needs_answer_linking("11")
    assert needs_answer_linking("Top Gun")


@pytest.mark.skipif(not MINTAKA.exists(), reason="Mintaka sample not available")
def test_agrees_with_mintaka_answer_types():
    questions = load_mintaka(MINTAKA)
    right = sum(
        detect_answer_type(q["answer"].get("mention") or "", question=q["question"])
        == MINTAKA_ANSWER_TYPES[q["answer"]["answerType"]]
        for q in questions
    )
    assert right / len(questions) >= 0.97
    booleans = [q for q in questions if q["answer"]["answerType"] == "boolean"]
    assert all(detect_answer_type(q["answer"]["mention"]) == AnswerType.BOOLEAN for q in booleans)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        # Without a digit only a spelled number can be numeric (the fast path) ...
        ("fifteen books", AnswerType.NUMERIC),
        ("Dozen eggs", AnswerType.NUMERIC),
        ("a hundred and five", AnswerType.NUMERIC),
        ("none", AnswerType.NUMERIC),
        ("a", AnswerType.ENTITY),
        ("-five", AnswerType.ENTITY),
        ("one-of-a-kind", AnswerType.ENTITY),
        ("Seven Dwarfs", AnswerType.ENTITY),
        ("it flows north through eleven countries of east africa", AnswerType.STRING),
        (",", AnswerType.DATE),  # no part left: an empty list of dates, as before
        # ... and a digit is any Unicode decimal digit, as the patterns' \d.
        ("\u0663", AnswerType.NUMERIC),
        ("\u0663 km", AnswerType.NUMERIC),
    ],
)
def test_detects_answers_without_digits_as_before(answer, expected):
    assert detect_answer_type(answer) == expected
