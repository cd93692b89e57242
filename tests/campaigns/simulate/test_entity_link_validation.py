"""The entity_link_validation task type and the linking stages' hand-off to it."""

from __future__ import annotations

import pytest
from django.template.loader import render_to_string

from campaigns.tasktypes import task_type_get
from campaigns.tasktypes.base import derived_external_id
from tests.campaigns.tasktypes.helpers import item, paths, qd

CHECK = task_type_get("entity_link_validation")
LINK = {
    "question": "Who painted The Two Fridas?",
    "answer": "Frida Kahlo",
    "text": "Frida",
    "start": 0,
    "end": 5,
    "qid": "Q5588",
    "span_in": "answer",
}


def test_items_must_point_at_their_span():
    assert CHECK.validate_item(LINK) == []
    assert CHECK.validate_item({**LINK, "span_in": "question", "start": 4, "end": 9}) != []
    assert paths(CHECK.validate_item({**LINK, "end": 40})) == {"end"}
    assert paths(CHECK.validate_item({**LINK, "qid": "Kahlo"})) == {"qid"}
    in_question = {"question": "Is Paris big?", "text": "Paris", "start": 3, "end": 8, "qid": "Q90"}
    assert CHECK.validate_item(in_question) == []


@pytest.mark.parametrize(
    ("fields", "config", "errors"),
    [
        ({"items/0/verdict": "correct"}, {}, set()),
        ({"items/0/verdict": "wrong", "items/0/corrected_qid": "q42"}, {}, set()),
        ({"items/0/verdict": "unsure"}, {}, set()),
        ({"items/0/verdict": "unsure"}, {"allow_unsure": False}, {"items/0/verdict"}),
        ({}, {}, {"items/0/verdict"}),
        ({"items/0/verdict": "maybe"}, {}, {"items/0/verdict"}),
        (
            {"items/0/verdict": "correct", "items/0/corrected_qid": "Q42"},
            {},
            {"items/0/corrected_qid"},
        ),
        (
            {"items/0/verdict": "wrong", "items/0/corrected_qid": "Kahlo"},
            {},
            {"items/0/corrected_qid"},
        ),
        (
            {"items/0/verdict": "wrong", "items/0/corrected_qid": "Q5588"},
            {},
            {"items/0/corrected_qid"},
        ),
        (
            {"items/0/verdict": "wrong", "items/0/corrected_qid": "Q42"},
            {"allow_correction": False},
            {"items/0/corrected_qid"},
        ),
    ],
)
def test_answers(fields, config, errors):
    items = [item("c1", LINK)]
    answer = CHECK.parse_form(form=qd(fields), items=items, config=config)
    assert paths(CHECK.validate_answer(answer=answer, items=items, config=config)) == errors


def test_a_correction_is_normalised_and_aggregated():
    items = [item("c1", LINK)]
    wrong = CHECK.parse_form(
        form=qd(
            {
                "items/0/verdict": "wrong",
                "items/0/corrected_qid": "https://www.wikidata.org/wiki/Q42",
            }
        ),
        items=items,
        config={},
    )
    assert wrong["items"][0]["corrected_qid"] == "Q42"
    right = {"items": [{"external_id": "c1", "verdict": "correct", "corrected_qid": None}]}
    summary = CHECK.aggregate(answers=[right, right, wrong], item=items[0])
    assert summary == {
        "answers": 3,
        "votes": {"correct": 2, "wrong": 1},
        "majority": "correct",
        "keep": True,
        "corrections": {"Q42": 1},
    }
    tie = CHECK.aggregate(answers=[right, wrong], item=items[0])
    assert tie["majority"] is None
    assert tie["keep"] is False


@pytest.mark.parametrize("preview", [True, False])
def test_template_shows_the_link_and_the_worker_answer(preview):
    items = [item("c1", LINK)]
    answer = {"items": [{"external_id": "c1", "verdict": "wrong", "corrected_qid": "Zorblax"}]}
    errors = {"items/0/corrected_qid": "A Wikidata id looks like Q42.", "": "General problem"}
    html = render_to_string(
        CHECK.template_name,
        {"items": items, "config": {}, "answer": answer, "errors": errors, "preview": preview},
    )
    assert 'class="tt-instructions' in html
    assert "<mark>Frida</mark> Kahlo" in html
    assert "Q5588" in html
    assert 'name="items/0/verdict" value="wrong" checked' in html
    assert 'value="Zorblax"' in html
    assert "A Wikidata id looks like Q42." in html
    assert "General problem" in html
    assert (" disabled" in html) is preview


@pytest.mark.parametrize("name", ["answer_entity_linking", "question_entity_linking"])
def test_each_linked_span_becomes_one_check_item(name):
    linking = task_type_get(name)
    data = {"question": "Did Frida Kahlo meet Diego Rivera?", "answer": "Yes, Frida Kahlo"}
    text = data["answer"] if name == "answer_entity_linking" else data["question"]
    start = text.index("Frida Kahlo")
    links = [
        {"start": start, "end": start + 11, "text": "Frida Kahlo", "qid": "Q5588", "none": False},
        {"start": 0, "end": 3, "text": text[:3], "qid": None, "none": True},
    ]
    answer = {"items": [{"external_id": "qa-1", "links": links}]}

    produced = list(linking.next_items(answer=answer, items=[item("qa-1", data)], handoff={}))

    assert len(produced) == 1
    made = produced[0]
    assert made["external_id"] == derived_external_id(
        "qa-1", "l1", [start, start + 11, "Frida Kahlo", "Q5588"]
    )
    assert made["data"]["span_in"] == ("answer" if name == "answer_entity_linking" else "question")
    assert made["data"]["qid"] == "Q5588"
    assert ("answer" in made["data"]) is (name == "answer_entity_linking")
    assert CHECK.validate_item(made["data"]) == []
    # Stable when re-run: the same answer makes the same ids.
    again = list(linking.next_items(answer=answer, items=[item("qa-1", data)], handoff={}))
    assert again == produced
