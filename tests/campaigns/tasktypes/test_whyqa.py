"""WhyQA: why-questions from a partial article, then sentence selection."""

from __future__ import annotations

import pytest

from campaigns.tasktypes import task_type_get
from tests.campaigns.tasktypes.helpers import item, paths, qd

why = task_type_get("why_question_from_partial_article")
sel = task_type_get("sentence_selection_answer")

ARTICLE = {
    "article_id": "black-death",
    "title": "Black Death",
    "sections": [
        {
            "header": "",
            "paragraphs": [["The Black Death was a plague pandemic.", "It peaked in 1347."]],
        },
        {
            "header": "Causes",
            "paragraphs": [
                ["It was caused by Yersinia pestis.", "Fleas on rats spread it."],
                ["Trade routes carried it west."],
            ],
        },
    ],
}
QUESTIONS = [
    "Why did the plague spread so quickly?",
    "Why were rats important to the pandemic?",
    "Why did trade routes matter for the disease?",
]
CONFIG = {"questions_per_article": 3}


def test_item_and_config_schema():
    assert why.validate_item(ARTICLE) == []
    assert why.validate_item({"title": "x", "sections": []})
    assert why.validate_item({"title": "x", "sections": [{"paragraphs": [[]]}]})
    assert why.validate_config({"questions_per_article": 10}) == []
    assert why.validate_config({"questions_per_article": 0})


def test_good_answer():
    answer = {"questions": QUESTIONS}
    assert why.validate_answer(answer=answer, items=[item("a1", ARTICLE)], config=CONFIG) == []


@pytest.mark.parametrize(
    ("question", "fragment"),
    [
        ("How did the plague spread so quickly?", "Why"),
        ("Why did the plague spread so quickly", '"?"'),
        ("Why plague?", "at least"),
        ("", "required"),
        ("Why " + "x " * 1200 + "?", "too long"),
    ],
)
def test_bad_questions(question, fragment):
    answer = {"questions": [question, *QUESTIONS[1:]]}
    errors = why.validate_answer(answer=answer, items=[item("a1", ARTICLE)], config=CONFIG)
    assert [e.path for e in errors] == ["questions/0"]
    assert fragment in errors[0].message


def test_duplicates_and_count():
    answer = {"questions": [QUESTIONS[0], QUESTIONS[0].upper(), QUESTIONS[2]]}
    assert paths(why.validate_answer(answer=answer, items=[], config=CONFIG)) == {"questions/1"}
    assert "questions" in paths(
        why.validate_answer(answer={"questions": QUESTIONS}, items=[], config={})
    )


def test_parse_form_keeps_invalid_text():
    form = qd({"questions/0": "how come?", "questions/2": " Why not? "})
    answer = why.parse_form(form=form, items=[item("a1", ARTICLE)], config=CONFIG)
    assert answer == {"questions": ["how come?", "", "Why not?"]}


def test_next_items_carry_the_whole_article():
    out = list(
        why.next_items(answer={"questions": QUESTIONS}, items=[item("a1", ARTICLE)], handoff={})
    )
    assert len(out) == 3
    data = out[1]["data"]
    assert data["question"] == QUESTIONS[1]
    assert data["article_id"] == "black-death"
    assert data["sentences"] == [
        "The Black Death was a plague pandemic.",
        "It peaked in 1347.",
        "It was caused by Yersinia pestis.",
        "Fleas on rats spread it.",
        "Trade routes carried it west.",
    ]
    assert data["section_breaks"] == [{"sentence": 2, "header": "Causes"}]
    assert out[0]["external_id"].startswith("a1/why1-")
    assert all(sel.validate_item(o["data"]) == [] for o in out)


def sel_items() -> list[dict]:
    out = why.next_items(
        answer={"questions": QUESTIONS[:2]}, items=[item("a1", ARTICLE)], handoff={}
    )
    return [item(o["external_id"], o["data"], pk=n) for n, o in enumerate(out)]


def entry(items, i, **kw):
    return {
        "external_id": items[i]["external_id"],
        "sentences": [],
        "no_answer": False,
        "comment": "",
        **kw,
    }


def test_sentence_selection_good_answers():
    items = sel_items()
    answer = {"items": [entry(items, 0, sentences=[3, 4]), entry(items, 1, no_answer=True)]}
    assert sel.validate_answer(answer=answer, items=items, config={}) == []


@pytest.mark.parametrize(
    "bad",
    [
        {"sentences": []},
        {"sentences": [1], "no_answer": True},
        {"sentences": [0, 1, 2, 3]},
        {"sentences": [9]},
        {"sentences": ["seven"]},
        {"sentences": [1, 1]},
    ],
)
def test_sentence_selection_bad_answers(bad):
    items = sel_items()
    answer = {"items": [entry(items, 0, **bad), entry(items, 1, no_answer=True)]}
    assert paths(sel.validate_answer(answer=answer, items=items, config={})) == {
        "items/0/sentences"
    }


def test_sentence_selection_structure_and_comment():
    items = sel_items()
    answer = {"items": [entry(items, 0, no_answer=True)]}
    assert paths(sel.validate_answer(answer=answer, items=items, config={})) == {"items"}
    answer = {"items": [entry(items, 1, no_answer=True), entry(items, 0, no_answer=True)]}
    assert "items/0/external_id" in paths(
        sel.validate_answer(answer=answer, items=items, config={})
    )
    answer = {
        "items": [
            entry(items, 0, no_answer=True, comment="x" * 2001),
            entry(items, 1, no_answer=True),
        ]
    }
    assert paths(sel.validate_answer(answer=answer, items=items, config={})) == {"items/0/comment"}
    answer["items"][0]["comment"] = "fine"
    assert paths(
        sel.validate_answer(answer=answer, items=items, config={"allow_comment": False})
    ) == {"items/0/comment"}
    assert sel.validate_answer(answer=answer, items=items, config={"max_sentences": 1}) == []


def test_sentence_selection_parse_form():
    items = sel_items()
    form = qd(
        {
            "items/0/sentences": ["3", "4", "bogus"],
            "items/0/comment": "  hard one ",
            "items/1/no_answer": "1",
        }
    )
    answer = sel.parse_form(form=form, items=items, config={})
    assert answer["items"][0] == entry(items, 0, sentences=[3, 4, "bogus"], comment="hard one")
    assert answer["items"][1] == entry(items, 1, no_answer=True)
    assert paths(sel.validate_answer(answer=answer, items=items, config={})) == {
        "items/0/sentences"
    }


def test_sentence_selection_aggregate():
    items = sel_items()
    answers = [
        {"items": [entry(items, 0, sentences=[3, 4]), entry(items, 1, no_answer=True)]},
        {"items": [entry(items, 0, sentences=[3]), entry(items, 1, no_answer=True)]},
        {"items": [entry(items, 0, no_answer=True), entry(items, 1, sentences=[2])]},
    ]
    assert sel.aggregate(answers=answers, item=items[0]) == {
        "answers": 3,
        "sentence_votes": {"3": 2, "4": 1},
        "no_answer_votes": 1,
    }
    per_item = [a["items"][1] for a in answers]
    assert sel.aggregate(answers=per_item, item=items[1])["no_answer_votes"] == 2
