from __future__ import annotations

import pytest

from campaigns.tasktypes import task_type_get
from campaigns.tasktypes.entity_linking import normalise_qid
from tests.campaigns.tasktypes.helpers import item, paths, qd

ael = task_type_get("answer_entity_linking")
qel = task_type_get("question_entity_linking")

QUESTION = "Who is older, Brad Pitt or George Clooney?"
Q_ITEM = item(
    "qa1",
    {
        "question": QUESTION,
        "proposed_spans": [
            {"start": 14, "end": 23, "text": "Brad Pitt", "kind": "PERSON"},
            {"start": 27, "end": 41, "text": "George Clooney", "kind": "PERSON"},
        ],
    },
)
A_ITEM = item(
    "qa2", {"question": "Who directed Jaws?", "answer": "Steven Spielberg", "topic": "movies"}
)


def links(*rows: dict, external_id: str = "qa1") -> dict:
    return {"items": [{"external_id": external_id, "links": list(rows)}]}


PITT = {"start": 14, "end": 23, "text": "Brad Pitt", "qid": "Q35332", "none": False}
CLOONEY = {"start": 27, "end": 41, "text": "George Clooney", "qid": "Q23844", "none": False}


def test_item_schemas():
    assert qel.validate_item(Q_ITEM["data"]) == []
    assert ael.validate_item(A_ITEM["data"]) == []
    assert paths(ael.validate_item({"question": "x?"})) == {""}
    bad = {"question": QUESTION, "proposed_spans": [{"start": 0, "end": 3, "text": "Bob"}]}
    assert paths(qel.validate_item(bad)) == {"proposed_spans/0/text"}
    bad["proposed_spans"] = [{"start": 40, "end": 80, "text": "x"}]
    assert paths(qel.validate_item(bad)) == {"proposed_spans/0"}


def test_good_links():
    assert qel.validate_answer(answer=links(PITT, CLOONEY), items=[Q_ITEM], config={}) == []
    none = {**PITT, "qid": None, "none": True}
    assert qel.validate_answer(answer=links(none), items=[Q_ITEM], config={}) == []
    assert qel.validate_answer(answer=links(), items=[Q_ITEM], config={}) == []


@pytest.mark.parametrize(
    ("bad", "path"),
    [
        ({**PITT, "qid": "Brad"}, "items/0/links/0/qid"),
        ({**PITT, "qid": "Q0"}, "items/0/links/0/qid"),
        ({**PITT, "qid": None}, "items/0/links/0/qid"),
        ({**PITT, "none": True}, "items/0/links/0/qid"),
        ({**PITT, "text": "Brad"}, "items/0/links/0/text"),
        ({**PITT, "start": 30, "end": 90}, "items/0/links/0/text"),
        ({**PITT, "start": "x"}, "items/0/links/0/text"),
    ],
)
def test_bad_links(bad, path):
    assert paths(qel.validate_answer(answer=links(bad), items=[Q_ITEM], config={})) == {path}


def test_overlaps_and_limits():
    inner = {"start": 19, "end": 23, "text": "Pitt", "qid": "Q1", "none": False}
    errors = qel.validate_answer(answer=links(PITT, inner), items=[Q_ITEM], config={})
    assert paths(errors) == {"items/0/links/1/text"}
    assert "overlaps" in errors[0].message
    assert paths(
        qel.validate_answer(answer=links(PITT, CLOONEY), items=[Q_ITEM], config={"max_links": 1})
    ) == {"items/0/links"}
    assert paths(qel.validate_answer(answer=links(), items=[Q_ITEM], config={"min_links": 1})) == {
        "items/0/links"
    }
    none = {**PITT, "qid": None, "none": True}
    assert qel.validate_answer(
        answer=links(none), items=[Q_ITEM], config={"allow_not_in_wikidata": False}
    )


@pytest.mark.parametrize(
    ("typed", "qid"),
    [
        ("q42", "Q42"),
        (" Q42 ", "Q42"),
        ("https://www.wikidata.org/wiki/Q42", "Q42"),
        ("wd:Q42", "Q42"),
        ("Douglas", "Douglas"),
    ],
)
def test_normalise_qid(typed, qid):
    assert normalise_qid(typed) == qid


def test_parse_form_rows_keep_typed_text_and_skip_untouched_rows():
    form = qd(
        {
            "items/0/spans/0/start": "14",
            "items/0/spans/0/end": "23",
            "items/0/spans/0/text": "Brad Pitt",
            "items/0/spans/0/qid": "https://www.wikidata.org/wiki/Q35332",
            "items/0/spans/1/start": "27",
            "items/0/spans/1/end": "41",
            "items/0/spans/1/text": "George Clooney",
            "items/0/spans/1/qid": "",
            "items/0/spans/5/start": "0",
            "items/0/spans/5/end": "3",
            "items/0/spans/5/text": "Who",
            "items/0/spans/5/qid": "not sure, maybe the band",
            "items/0/spans/6/start": "7",
            "items/0/spans/6/end": "13",
            "items/0/spans/6/text": "older,",
            "items/0/spans/6/none": "1",
        }
    )
    answer = qel.parse_form(form=form, items=[Q_ITEM], config={})
    rows = answer["items"][0]["links"]
    assert rows[0] == PITT
    assert rows[1]["qid"] == "not sure, maybe the band"
    assert rows[2] == {"start": 7, "end": 13, "text": "older,", "qid": None, "none": True}
    assert len(rows) == 3
    assert paths(qel.validate_answer(answer=answer, items=[Q_ITEM], config={})) == {
        "items/0/links/1/qid"
    }


def test_answer_linking_proposes_the_whole_answer():
    view = ael.view(items=[A_ITEM], config={}, answer={}, errors={}, preview=False)
    rows = view["items"][0]["rows"]
    assert [(r["start"], r["end"], r["text"]) for r in rows] == [(0, 16, "Steven Spielberg")]
    good = {"start": 0, "end": 16, "text": "Steven Spielberg", "qid": "Q8877", "none": False}
    assert (
        ael.validate_answer(answer=links(good, external_id="qa2"), items=[A_ITEM], config={}) == []
    )


def test_aggregate_agreement():
    none = {**CLOONEY, "qid": None, "none": True}
    a = links(PITT, CLOONEY)
    b = links(CLOONEY, PITT)
    c = links(PITT, none)
    agreed = qel.aggregate(answers=[a, b], item=Q_ITEM)
    assert agreed["unanimous"] is True
    assert agreed["pairwise_agreement"] == 1.0
    assert len(agreed["majority"]) == 2
    split = qel.aggregate(answers=[a, c], item=Q_ITEM)
    assert split["unanimous"] is False
    assert split["pairwise_agreement"] == pytest.approx(1 / 3)
    assert [(v["qid"], v["none"], v["votes"]) for v in split["votes"]] == [
        ("Q35332", False, 2),
        (None, True, 1),
        ("Q23844", False, 1),
    ]
    three = qel.aggregate(answers=[a, c, b], item=Q_ITEM)
    assert {v["qid"] for v in three["majority"]} == {"Q35332", "Q23844"}
    assert qel.aggregate(answers=[], item=Q_ITEM)["unanimous"] is False
