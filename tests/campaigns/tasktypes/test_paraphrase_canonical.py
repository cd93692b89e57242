"""Issue 35, point 11: a GraphQuestions paraphrase may be a command, as in the paper's
own Table 2 (Su et al., EMNLP 2016): "Find terrorist organizations involved in
September 11 attacks."."""

from __future__ import annotations

from campaigns.tasktypes import task_type_get

para = task_type_get("paraphrase_canonical")

SEPTEMBER_11 = {
    "external_id": "gq-911",
    "data": {
        # Table 2's other sentence-level paraphrase of the same graph query.
        "canonical_question": (
            "the september 11 attacks were carried out with the involvement of what "
            "terrorist organizations?"
        ),
        "characteristics": {"edges": 1, "function": "none", "answer_cardinality": 2},
        "entities": [{"label": "September 11 attacks", "forms": ["9/11"]}],
    },
}


def _answer(text: str) -> dict:
    return {"items": [{"external_id": "gq-911", "paraphrases": [text]}]}


def test_a_paraphrase_may_be_a_command():
    command = "Find terrorist organizations involved in September 11 attacks."
    assert para.validate_answer(answer=_answer(command), items=[SEPTEMBER_11], config={}) == []
    no_stop = "Name the groups behind 9/11"
    assert para.validate_answer(answer=_answer(no_stop), items=[SEPTEMBER_11], config={}) == []


def test_a_command_is_still_checked_for_triviality():
    copy = (
        "The September 11 attacks were carried out with the involvement of which "
        "terrorist organizations"
    )
    assert para.validate_answer(answer=_answer(copy), items=[SEPTEMBER_11], config={})
