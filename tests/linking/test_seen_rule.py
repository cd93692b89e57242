"""Mintaka §4.3's seen-entity rule: a question whose entity spans were all linked with
agreement before gets one annotator (a second only on disagreement); values (dates,
ordinals, numbers) never make it new; a new question gets 2 (+1)."""

from __future__ import annotations

from linking.services import seen_prefill
from tests.linking.test_seen_rule_flow import SPANS


def test_values_do_not_make_an_item_new():
    seen, prefilled = seen_prefill(SPANS, known={"Tom Cruise": "Q37079"})
    assert seen is True
    assert prefilled == [
        {"start": 26, "end": 36, "text": "Tom Cruise", "qid": "Q37079", "none": False}
    ]
    assert seen_prefill(SPANS, known={})[0] is False


def test_an_overlapping_alternative_of_a_known_span_is_not_new():
    spans = [
        {"start": 0, "end": 9, "text": "Uncharted", "kind": "entity"},
        {"start": 0, "end": 16, "text": "Uncharted series", "kind": "entity"},
        {"start": 21, "end": 29, "text": "Sony Ent", "kind": "entity"},
    ]
    assert seen_prefill(spans, known={"Uncharted": "Q1064135", "Sony Ent": "Q1"})[0]
    # A separate entity not linked before still makes the item new.
    assert not seen_prefill(spans, known={"Uncharted": "Q1064135"})[0]
