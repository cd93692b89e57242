"""Every task type's template renders (preview or not, with errors) and shows the worker's text."""

from __future__ import annotations

from typing import Any

import pytest
from django.template.loader import render_to_string

from campaigns.tasktypes import task_type_get, task_type_names
from tests.campaigns.tasktypes.helpers import item
from tests.campaigns.tasktypes.test_quiz_survey import SURVEY, WHYQA

ARTICLE = {
    "title": "Black Death",
    "sections": [{"header": "Causes", "paragraphs": [["Fleas spread it.", "Rats too."]]}],
}
MC = {"passage": "Ann left early.", "question": "Why?", "options": ["a", "b", "c", "d"]}

# name -> (items, config, answer typed by the worker, the text to find, error path)
CASES: dict[str, tuple[list[dict], dict, dict, str, str]] = {
    "question_writing": (
        [item("c1", {"topic": "movies", "complexity_type": "count"})],
        {"questions_per_hit": 2},
        {
            "questions": [
                {
                    "question": "How many Zorblax films?",
                    "answer": "3",
                    "numeric_value": "three-ish",
                    "counted_entities": ["Zorblax One"],
                }
            ]
        },
        "three-ish",
        "questions/0/numeric_value",
    ),
    "why_question_from_partial_article": (
        [item("a1", ARTICLE)],
        {},
        {"questions": ["How come Zorblax?"]},
        "How come Zorblax?",
        "questions/0",
    ),
    "sentence_selection_answer": (
        [
            item(
                "s1",
                {
                    "question": "Why?",
                    "sentences": ["One.", "Two."],
                    "section_breaks": [{"sentence": 1, "header": "H"}],
                },
            )
        ],
        {},
        {
            "items": [
                {
                    "external_id": "s1",
                    "sentences": [1],
                    "no_answer": True,
                    "comment": "Zorblax comment",
                }
            ]
        },
        "Zorblax comment",
        "items/0/sentences",
    ),
    "rephrase": (
        [item("r1", {"question": "Why?"}), item("r2", {"question": "How?"}, 2)],
        {},
        {"items": [{"external_id": "r1", "rephrasing": "Zorblax rephrased"}]},
        "Zorblax rephrased",
        "items/0/rephrasing",
    ),
    "translation": (
        [
            item("t1", {"question": "Who won?", "language": "ja"}),
            item("t2", {"question": "Why?", "language": "de"}, 2),
        ],
        {},
        {"items": [{"external_id": "t1", "translation": "Zorblax translated"}]},
        "Zorblax translated",
        "items/0/translation",
    ),
    "paraphrase_canonical": (
        [
            item(
                "g1",
                {
                    "canonical_question": "what is x?",
                    "characteristics": {"function": "count"},
                    "entities": [{"label": "X", "forms": ["ex"]}],
                },
            )
        ],
        {"paraphrases_per_item": 2},
        {"items": [{"external_id": "g1", "paraphrases": ["", "Zorblax paraphrase"]}]},
        "Zorblax paraphrase",
        "items/0/paraphrases/1",
    ),
    "entity_link_validation": (
        [
            item(
                "l1",
                {
                    "question": "Who painted it?",
                    "answer": "Frida Kahlo",
                    "text": "Frida Kahlo",
                    "start": 0,
                    "end": 11,
                    "qid": "Q5588",
                    "span_in": "answer",
                },
            )
        ],
        {},
        {"items": [{"external_id": "l1", "verdict": "wrong", "corrected_qid": "Zorblax"}]},
        "Zorblax",
        "items/0/corrected_qid",
    ),
    "answer_entity_linking": (
        [item("l1", {"question": "Who?", "answer": "Zorblax Prime"})],
        {},
        {
            "items": [
                {
                    "external_id": "l1",
                    "links": [
                        {
                            "start": 0,
                            "end": 13,
                            "text": "Zorblax Prime",
                            "qid": "zorblax-id",
                            "none": False,
                        }
                    ],
                }
            ]
        },
        "zorblax-id",
        "items/0/links/0/qid",
    ),
    "question_entity_linking": (
        [
            item(
                "l2",
                {
                    "question": "Who is Zorblax?",
                    "proposed_spans": [
                        {"start": 7, "end": 14, "text": "Zorblax", "kind": "PERSON"}
                    ],
                },
            )
        ],
        {},
        {
            "items": [
                {
                    "external_id": "l2",
                    "links": [
                        {"start": 7, "end": 14, "text": "Zorblax", "qid": "Q999", "none": False},
                        {
                            "start": 0,
                            "end": 3,
                            "text": "Who",
                            "qid": "zorblax-added",
                            "none": False,
                        },
                    ],
                }
            ]
        },
        "zorblax-added",
        "items/0/links/1/qid",
    ),
    "mc_question_writing": (
        [item("p1", {"passage": "Text."})],
        {"justification": "required"},
        {
            "questions": [
                {
                    "question": "Zorblax question?",
                    "options": ["o1", "", "", ""],
                    "correct": 0,
                    "justification": "Zorblax because",
                }
            ]
        },
        "Zorblax because",
        "questions/0/options/1",
    ),
    "rubric_evaluation": (
        [item("e1", {**MC, "correct": 1, "justification": "J"})],
        {},
        {
            "items": [
                {
                    "external_id": "e1",
                    "answerable": "yes",
                    "reading_depth": None,
                    "creativity": "very",
                    "distracting_options": None,
                    "feedback": "Zorblax feedback",
                }
            ]
        },
        "Zorblax feedback",
        "items/0/reading_depth",
    ),
    "mc_validation": (
        [item("v1", {**MC, "options": ["Zorblax option", "b", "c", "d"], "writer_correct": 2})],
        {},
        {"items": [{"external_id": "v1", "choice": 0}]},
        "Zorblax option",
        "items/0/choice",
    ),
    "quiz": (
        [item("z", {})],
        WHYQA,
        {"questions": [{"id": "plague", "selected": ["s1"], "no_answer": False}]},
        "Fleas on rats carried it.",
        "questions/1/selected",
    ),
    "adversarial_passage_question": (
        [item("a1", {"title": "T", "sentences": ["Zorblax sentence.", "Other."]})],
        {},
        {"items": [{"external_id": "a1", "question": "Zorblax question?", "sentences": [0]}]},
        "Zorblax question?",
        "items/0/question",
    ),
    "adversarial_fool_validation": (
        [
            item(
                "f1",
                {
                    "sentences": ["One.", "Two."],
                    "question": "Zorblax question?",
                    "writer_sentences": [1],
                    "model_answer": "One.",
                },
            )
        ],
        {},
        {"items": [{"external_id": "f1", "verdict": "fooled"}]},
        "Zorblax question?",
        "items/0/verdict",
    ),
    "survey": (
        [item("z", {})],
        SURVEY,
        {"responses": {"age": "Zorblax years", "tools": ["Maps"], "notes": "Zorblax notes"}},
        "Zorblax years",
        "responses/age",
    ),
}


def test_every_task_type_has_a_case():
    assert sorted(CASES) == task_type_names()


def render(name: str, **context: Any) -> str:
    return render_to_string(task_type_get(name).template_name, context)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("preview", [True, False])
def test_renders_empty(name, preview):
    items, config, _answer, _text, _path = CASES[name]
    html = render(
        name, items=items, config=config, answer={}, errors={}, stage=None, preview=preview
    )
    assert 'class="tt-instructions' in html
    assert 'class="tt-error' not in html
    assert (" disabled" in html) is preview
    # No template comment shows as text (a {# #} comment is one line only).
    assert "{#" not in html
    assert "{%" not in html


@pytest.mark.parametrize("name", sorted(CASES))
def test_renders_the_answer_and_errors(name):
    items, config, answer, text, path = CASES[name]
    errors = {path: "Zorblax error message", "": "A general problem"}
    html = render(
        name, items=items, config=config, answer=answer, errors=errors, stage=None, preview=False
    )
    assert text in html
    assert "Zorblax error message" in html
    assert "A general problem" in html
    assert 'aria-invalid="true"' in html or "aria-describedby" in html


def test_field_names_and_error_ids_follow_answer_paths():
    items, config, answer, _text, _path = CASES["question_writing"]
    errors = {"questions/1/question": "Needs a question mark."}
    html = render(
        "question_writing", items=items, config=config, answer=answer, errors=errors, preview=False
    )
    assert 'name="questions/1/question"' in html
    assert 'aria-describedby="tt-questions-1-question-error"' in html
    assert 'id="tt-questions-1-question-error"' in html


def test_text_is_escaped():
    items, config, _a, _t, _p = CASES["rephrase"]
    answer = {"items": [{"external_id": "r1", "rephrasing": '<script>alert("x")</script>'}]}
    html = render("rephrase", items=items, config=config, answer=answer, errors={}, preview=False)
    assert '<script>alert("x")' not in html
    assert "&lt;script&gt;" in html


def test_quiz_page_does_not_leak_the_answer_key():
    html = render("quiz", items=[], config=WHYQA, answer={}, errors={}, preview=False)
    for word in ("essential", "wrong", "group_points", "unanswerable"):
        assert word not in html


def test_mc_validation_page_does_not_leak_the_writer_label():
    items = [item("v1", {**MC, "options": ["a", "b", "c", "Zorblax-d"], "writer_correct": 3})]
    html = render("mc_validation", items=items, config={}, answer={}, errors={}, preview=False)
    assert "checked" not in html
    assert "writer" not in html


def test_linking_rows_escape_what_the_worker_and_the_data_wrote():
    """The entity-linking form's rows (built by ``tt_link_row``) escape the span's text, its
    kind and the worker's id as the template engine would, in text and in attributes."""
    evil = '"><script>alert(1)</script>'
    items = [
        item(
            "l1",
            {
                "question": "Who?",
                "answer": f"Zorblax {evil}",
                "proposed_spans": [{"start": 8, "end": 8 + len(evil), "text": evil, "kind": evil}],
            },
        )
    ]
    answer = {
        "items": [
            {
                "external_id": "l1",
                "links": [{"start": 8, "end": 8 + len(evil), "text": evil, "qid": evil}],
            }
        ]
    }
    errors = {"items/0/links/0/qid": f"Not an id: {evil}"}
    for preview in (False, True):
        html = render(
            "answer_entity_linking", items=items, config={}, answer=answer, errors=errors,
            preview=preview,
        )  # fmt: skip
        assert "<script>" not in html
        assert html.count("&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;") >= 6
        assert 'aria-invalid="true"' in html
        assert (" disabled" in html) is preview
