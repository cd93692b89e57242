"""Rephrase (WhyQA) and paraphrase of canonical questions (GraphQuestions)."""

from __future__ import annotations

import pytest

from campaigns.tasktypes import task_type_get
from tests.campaigns.tasktypes.helpers import item, paths, qd

reph = task_type_get("rephrase")
para = task_type_get("paraphrase_canonical")

ITEMS = [
    item("q1", {"question": "Why did the Roman Empire fall?"}, 1),
    item("q2", {"question": "Why do cats purr?"}, 2),
]


def rephrased(a: str, b: str) -> dict:
    return {
        "items": [{"external_id": "q1", "rephrasing": a}, {"external_id": "q2", "rephrasing": b}]
    }


def test_rephrase_schemas():
    assert reph.validate_item({"question": "Why?"}) == []
    assert reph.validate_item({"question": ""})
    assert reph.validate_config({"max_similarity": 0.7}) == []
    assert reph.validate_config({"max_similarity": 0})


def test_rephrase_good():
    answer = rephrased(
        "What caused the collapse of the Roman Empire?", "What makes cats produce a purring sound?"
    )
    assert reph.validate_answer(answer=answer, items=ITEMS, config={}) == []


@pytest.mark.parametrize(
    "bad",
    [
        "why did the roman empire fall",  # case and punctuation only (and no "?")
        "Why did the Roman Empire fall ?",
        "The Roman Empire: why did it fall?",  # word order and stop words only
        "Why did Roman Empire fall?",
        "",
        "What " + "very " * 500 + "caused it?",
        "What caused the collapse of the Roman Empire",  # no question mark
    ],
)
def test_rephrase_rejects_trivial_or_invalid(bad):
    answer = rephrased(bad, "What makes cats produce a purring sound?")
    assert paths(reph.validate_answer(answer=answer, items=ITEMS, config={})) == {
        "items/0/rephrasing"
    }


def test_rephrase_threshold_is_configurable():
    answer = rephrased("Why did the Roman Empire finally collapse?", "What makes cats purr loudly?")
    assert reph.validate_answer(answer=answer, items=ITEMS, config={}) == []
    strict = {"max_similarity": 0.3}
    assert paths(reph.validate_answer(answer=answer, items=ITEMS, config=strict)) == {
        "items/0/rephrasing",
        "items/1/rephrasing",
    }


def test_rephrase_parse_form_aggregate_next_items():
    form = qd(
        {"items/0/rephrasing": " why did the roman empire fall ", "items/1/rephrasing": "Cats?"}
    )
    answer = reph.parse_form(form=form, items=ITEMS, config={})
    assert answer == rephrased("why did the roman empire fall", "Cats?")
    assert paths(reph.validate_answer(answer=answer, items=ITEMS, config={})) == {
        "items/0/rephrasing"
    }
    assert reph.aggregate(answers=[answer, rephrased("A?", "B?")], item=ITEMS[1]) == {
        "rephrasings": ["Cats?", "B?"]
    }
    out = list(reph.next_items(answer=rephrased("A?", "B?"), items=ITEMS, handoff={}))
    assert out[0]["data"] == {
        "question": "A?",
        "original_question": "Why did the Roman Empire fall?",
    }
    assert out[0]["external_id"].startswith("q1/r-")


CANONICAL = item(
    "gq1",
    {
        "canonical_question": "what is the number of films directed by steven spielberg?",
        "characteristics": {
            "edges": 1,
            "function": "count",
            "commonness": -12.5,
            "answer_cardinality": 1,
        },
        "entities": [{"label": "Steven Spielberg", "forms": ["Spielberg"]}],
    },
)


def paraphrased(*texts: str) -> dict:
    return {"items": [{"external_id": "gq1", "paraphrases": list(texts)}]}


def test_paraphrase_schemas():
    assert para.validate_item(CANONICAL["data"]) == []
    bad = {**CANONICAL["data"], "characteristics": {"function": "average"}}
    assert paths(para.validate_item(bad)) == {"characteristics/function"}
    assert para.validate_item({"canonical_question": "x"})


def test_paraphrase_good():
    answer = paraphrased("How many movies has Spielberg directed?")
    assert para.validate_answer(answer=answer, items=[CANONICAL], config={}) == []
    two = paraphrased(
        "How many movies has Spielberg directed?", "Steven Spielberg directed how many films?"
    )
    assert (
        para.validate_answer(answer=two, items=[CANONICAL], config={"paraphrases_per_item": 2})
        == []
    )


@pytest.mark.parametrize(
    "bad",
    [
        "What is the number of films directed by Steven Spielberg?",
        "the number of films directed by steven spielberg is what?",
        "How many movies has he directed?",  # entity not mentioned
        "",
    ],
)
def test_paraphrase_bad(bad):
    errors = para.validate_answer(answer=paraphrased(bad), items=[CANONICAL], config={})
    assert paths(errors) == {"items/0/paraphrases/0"}


def test_paraphrase_entity_check_can_be_switched_off_and_repeats_are_caught():
    answer = paraphrased("How many movies has he directed?")
    assert (
        para.validate_answer(
            answer=answer, items=[CANONICAL], config={"require_entity_mention": False}
        )
        == []
    )
    two = paraphrased(
        "How many movies has Spielberg directed?", "how many movies has spielberg directed"
    )
    errors = para.validate_answer(answer=two, items=[CANONICAL], config={"paraphrases_per_item": 2})
    assert paths(errors) == {"items/0/paraphrases/1"}
    assert "items/0/paraphrases" in paths(
        para.validate_answer(answer=two, items=[CANONICAL], config={})
    )


def test_paraphrase_parse_form_aggregate_next_items():
    form = qd(
        {"items/0/paraphrases/0": "Spielberg films: how many?", "items/0/paraphrases/1": "??"}
    )
    answer = para.parse_form(form=form, items=[CANONICAL], config={"paraphrases_per_item": 2})
    assert answer == paraphrased("Spielberg films: how many?", "??")
    agg = para.aggregate(answers=[answer, paraphrased("spielberg films how many")], item=CANONICAL)
    assert agg == {"paraphrases": ["Spielberg films: how many?"]}  # "??" normalises to nothing
    out = list(para.next_items(answer=answer, items=[CANONICAL], handoff={}))
    assert [o["data"]["question"] for o in out] == ["Spielberg films: how many?", "??"]
    assert out[0]["data"]["characteristics"]["function"] == "count"
