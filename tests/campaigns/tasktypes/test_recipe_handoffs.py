"""The hand-offs the published pipelines need: WhyQA answering → rephrasing, and
Mintaka's answer linking → question linking."""

from __future__ import annotations

from campaigns.tasktypes import task_type_get
from tests.campaigns.tasktypes.helpers import item

QUESTION = {
    "question": "Why did the bridge close?",
    "title": "Old Bridge",
    "sentences": ["The bridge opened in 1901.", "It closed after a flood damaged it."],
}


def test_sentence_selection_hands_answered_questions_to_rephrasing_once():
    tt = task_type_get("sentence_selection_answer")
    rephrase = task_type_get("rephrase")
    items = [item("q1", QUESTION), item("q2", {**QUESTION, "question": "Why was it built?"})]
    answer = {
        "items": [
            {"external_id": "q1", "sentences": [1], "no_answer": False, "comment": ""},
            {"external_id": "q2", "sentences": [], "no_answer": True, "comment": ""},
        ]
    }
    out = list(tt.next_items(answer=answer, items=items, handoff={}))
    assert [o["data"] for o in out] == [
        {"question": "Why did the bridge close?", "context": "Old Bridge"}
    ]
    assert out[0]["external_id"].startswith("q1/r-")
    assert rephrase.validate_item(out[0]["data"]) == []
    # Another annotator choosing other sentences hands on the very same item.
    other = {"items": [{**answer["items"][0], "sentences": [0, 1]}, answer["items"][1]]}
    assert list(tt.next_items(answer=other, items=items, handoff={})) == out
    bare = list(tt.next_items(answer=answer, items=items, handoff={"context": "none"}))
    assert bare[0]["data"] == {"question": "Why did the bridge close?"}
    assert tt.validate_handoff({"context": "abstract"})
    assert tt.validate_handoff({"context": "none"}) == []


def test_answer_linking_hands_each_qa_pair_to_question_linking_once():
    tt = task_type_get("answer_entity_linking")
    question_linking = task_type_get("question_entity_linking")
    data = {"question": "Who directed Jaws?", "answer": "Steven Spielberg"}
    items = [item("m1", data)]

    def links(qid: str) -> dict:
        return {
            "items": [
                {
                    "external_id": "m1",
                    "links": [{"start": 0, "end": 16, "text": "Steven Spielberg", "qid": qid}],
                }
            ]
        }

    handoff = {"target": "question_entity_linking"}
    first = list(tt.next_items(answer=links("Q8877"), items=items, handoff=handoff))
    second = list(tt.next_items(answer=links("Q42"), items=items, handoff=handoff))
    assert first == second  # annotators who disagree still make one question item
    assert first[0]["data"] == data
    assert first[0]["external_id"].startswith("m1/q-")
    assert question_linking.validate_item(first[0]["data"]) == []
    # The default target is still the validation of each link.
    default = list(tt.next_items(answer=links("Q8877"), items=items, handoff={}))
    assert default[0]["data"]["qid"] == "Q8877"
    assert tt.validate_handoff(handoff) == []
    assert tt.validate_handoff({"target": "rephrase"})
