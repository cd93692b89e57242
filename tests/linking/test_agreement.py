"""Entity agreement as pure functions: the decision rule, stage agreement, bonus rule."""

from __future__ import annotations

from decimal import Decimal

import pytest

from linking.agreement import (
    AgreementSummary,
    BonusRule,
    EscalationRule,
    Verdict,
    agreement_summary,
    item_decide,
    link_set,
)

RULE = EscalationRule(annotators=2, max=3, seen_annotators=1)
A = link_set([{"start": 0, "end": 10, "qid": "Q37079"}])
B = link_set([{"start": 0, "end": 10, "qid": None, "none": True}])  # NIL is an id
C = link_set([{"start": 0, "end": 10, "qid": "Q1"}])


def test_link_sets_compare_span_and_id_with_nil_as_an_id():
    assert link_set([{"start": "0", "end": 10, "qid": "Q37079", "text": "Tom Cruise"}]) == A
    assert A != B
    assert link_set([{"start": 0, "end": 3, "qid": None, "none": True}]) == {(0, 3, "NIL")}
    assert link_set([]) == frozenset()


@pytest.mark.parametrize(
    ("sets", "verdict", "needed"),
    [
        ([], Verdict.MORE, 2),
        ([A], Verdict.MORE, 2),
        ([A, A], Verdict.RESOLVED, 0),
        ([A, B], Verdict.MORE, 3),
        ([A, B, A], Verdict.RESOLVED, 0),
        ([A, B, C], Verdict.REVIEW, 0),
    ],
)
def test_two_annotators_then_a_third_then_review(sets, verdict, needed):
    decision = item_decide(sets=sets, rule=RULE, prefilled=None)
    assert decision.verdict == verdict
    assert decision.needed == needed
    if verdict == Verdict.RESOLVED:
        assert decision.links == A


def test_a_seen_item_needs_one_annotator_unless_they_disagree():
    assert item_decide(sets=[], rule=RULE, prefilled=A).needed == 1
    confirmed = item_decide(sets=[A], rule=RULE, prefilled=A)
    assert (confirmed.verdict, confirmed.source) == (Verdict.RESOLVED, "seen_confirmed")
    changed = item_decide(sets=[B], rule=RULE, prefilled=A)
    assert (changed.verdict, changed.needed) == (Verdict.MORE, 2)
    # The second sides with the earlier agreement, or with the first annotator.
    assert item_decide(sets=[B, A], rule=RULE, prefilled=A).links == A
    assert item_decide(sets=[B, B], rule=RULE, prefilled=A).links == B
    assert item_decide(sets=[B, C], rule=RULE, prefilled=A).needed == 3


def test_escalation_rule_from_stage_json():
    assert EscalationRule.from_json({}) is None
    assert EscalationRule.from_json({"rule": "other"}) is None
    assert EscalationRule.from_json({"rule": "entity_agreement"}) == EscalationRule(2, 3, 1)
    rule = EscalationRule.from_json({"rule": "entity_agreement", "annotators": 3, "max": 2})
    assert rule == EscalationRule(annotators=3, max=3, seen_annotators=1)


def test_agreement_after_two_and_after_three_annotators():
    # 100 items, Mintaka-like: 82 agree at once, 15 more agree with the third, 3 never.
    per_item = (
        [([A, A], None)] * 82 + [([A, B, A], None)] * 15 + [([A, B, C], None)] * 3 + [([A], A)]
    )
    summary = agreement_summary(per_item)
    assert summary == AgreementSummary(
        items=101, with_two=100, agreed_after_2=82, agreed_after_3=97, seen_confirmed=1
    )
    assert summary.after_2 == pytest.approx(0.82)
    assert summary.after_3 == pytest.approx(0.97)
    assert agreement_summary([]).as_dict()["after_2"] is None


def test_bonus_per_agreed_entity_beyond_the_first():
    (rule,) = BonusRule.all_from_json(
        [{"rule": "auto_approve"}, {"rule": "per_agreed_entity", "amount": "0.05", "beyond": 1}]
    )
    three = link_set(
        [
            {"start": 0, "end": 1, "qid": "Q1"},
            {"start": 2, "end": 3, "qid": "Q2"},
            {"start": 4, "end": 5, "qid": "Q3"},
            {"start": 6, "end": 7, "none": True},  # NIL is no entity to pay for
        ]
    )
    assert rule.amount_for(three) == Decimal("0.10")
    assert rule.amount_for(A) == Decimal("0")
    assert BonusRule.all_from_json(None) == []


# Mintaka §4.3 per entity: "Who directed Top Gun with Tom Cruise in 1986?"
TOM = (30, 40, "Q37079")  # seen: pre-filled from an agreed link
TOP_GUN = (13, 20, "Q110397")  # new
DATE = (44, 48)  # a value span: no one links it


def test_a_seen_entity_is_decided_by_its_one_annotation_beside_a_new_one():
    prefilled = frozenset({TOM})
    kept = frozenset({TOM, TOP_GUN})
    changed = frozenset({(30, 40, "NIL"), TOP_GUN})
    # The new entity needs two annotators, the seen one keeps the first's annotation:
    # the second differing on it asks for no third.
    first = item_decide(sets=[kept], rule=RULE, prefilled=prefilled, seen=False)
    assert (first.verdict, first.needed) == (Verdict.MORE, 2)
    decision = item_decide(sets=[kept, changed], rule=RULE, prefilled=prefilled, seen=False)
    assert (decision.verdict, decision.links) == (Verdict.RESOLVED, kept)
    # A first annotation that changed the seen entity: the second and the pre-filled
    # link outvote it.
    decision = item_decide(sets=[changed, kept], rule=RULE, prefilled=prefilled, seen=False)
    assert (decision.verdict, decision.links) == (Verdict.RESOLVED, kept)
    # Disagreement on the new entity still brings a third.
    other = frozenset({TOM, (13, 20, "Q1")})
    assert item_decide(sets=[kept, other], rule=RULE, prefilled=prefilled, seen=False).needed == 3


def test_links_on_value_spans_do_not_count():
    prefilled = frozenset({TOM})
    with_date = frozenset({TOM, (*DATE, "NIL")})
    confirmed = item_decide(sets=[with_date], rule=RULE, prefilled=prefilled, values={DATE})
    assert (confirmed.verdict, confirmed.source) == (Verdict.RESOLVED, "seen_confirmed")
    assert confirmed.links == prefilled
    # A question with no entity at all, only a date, is settled by its one annotator.
    year = frozenset({(*DATE, "Q5906")})
    nothing = item_decide(sets=[year], rule=RULE, prefilled=frozenset(), values={DATE})
    assert (nothing.verdict, nothing.links) == (Verdict.RESOLVED, frozenset())


def test_an_entity_added_to_a_seen_item_is_a_new_one():
    prefilled = frozenset({TOM})
    added = frozenset({TOM, TOP_GUN})
    assert item_decide(sets=[added], rule=RULE, prefilled=prefilled).needed == 2
    resolved = item_decide(sets=[added, added], rule=RULE, prefilled=prefilled)
    assert (resolved.verdict, resolved.links) == (Verdict.RESOLVED, added)
    assert item_decide(sets=[added, prefilled], rule=RULE, prefilled=prefilled).needed == 3
