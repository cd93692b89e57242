"""Review rules, gold comparison and rule schemas: pure functions on crafted data."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from campaigns.work.gold_mix import gold_mix_order
from validation.gold import (
    gold_bonus_blocks,
    gold_correct,
    gold_match_links,
    gold_match_sentences,
)
from validation.projections import categorical_label, entry_texts
from validation.rules.facts import ItemRef, Submission, Verdict, facts_build
from validation.rules.settings import (
    APPROVE,
    HOLD,
    NONE,
    PASS,
    REJECT,
    SKIP,
    WORKER_LEVEL,
    bonus_rules_validate,
    escalation_rule_validate,
    review_rules_validate,
    rules_approving,
)
from validation.rules.verdicts import (
    REVIEWING_RULES,
    RULE_FUNCTIONS,
    combine,
    review,
    review_prepared,
    rules_prepare,
)
from validation.subscriptions import needs_review_after_submit

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def mc(choice, ext="i1"):
    return {"items": [{"external_id": ext, "choice": choice}]}


def sub(pk, hit, worker, answers, *, status="submitted", seconds=60, telemetry=None, t=None):
    return Submission(
        id=pk,
        hit_id=hit,
        worker_id=worker,
        status=status,
        answers=answers,
        work_seconds=seconds,
        telemetry=telemetry or {},
        submitted_at=T0 + timedelta(seconds=t if t is not None else pk),
    )


def facts(subs, rules, *, task_type="mc_validation", items=None, bonus=()):
    items = items or {s.hit_id: [ItemRef(id=s.hit_id * 10, external_id="i1")] for s in subs}
    return facts_build(
        task_type=task_type, items_by_hit=items, submissions=subs, rules=rules, bonus_rules=bonus
    )


def one(subject, subs, rule, **kw):
    f = facts(subs, [rule], **kw)
    return review(f.submissions[subject], f, [rule]).verdicts[0]


# --- Gold comparison ---------------------------------------------------------------------


def test_gold_per_answer_shape():
    assert gold_correct("mc_validation", {"choice": 2}, 2)
    assert gold_correct("mc_validation", {"choice": "invalid"}, {"choice": "invalid"})
    assert not gold_correct("mc_validation", {"choice": 1}, 2)
    assert gold_correct("mc_validation", {"choice": 1}, None) is None
    assert gold_correct("entity_link_validation", {"verdict": "correct"}, "correct")
    assert gold_correct("rubric_evaluation", {"answerable": "no"}, "no")
    # Sentences: overlap 2/3 >= 0.5; 1/3 < 0.5; no answer only against no answer.
    entry = {"sentences": [1, 2], "no_answer": False}
    assert gold_match_sentences(entry, [1, 2, 3])
    assert not gold_match_sentences({"sentences": [1], "no_answer": False}, [1, 2, 3])
    assert gold_match_sentences({"sentences": [1], "no_answer": False}, [1, 2, 3], threshold=0.3)
    assert gold_correct(
        "sentence_selection_answer", {"sentences": [], "no_answer": True}, {"no_answer": True}
    )
    assert not gold_correct("sentence_selection_answer", entry, {"no_answer": True})
    # Links: set equality on (start, end, qid | none).
    links = [{"start": 0, "end": 5, "text": "Paris", "qid": "Q90"}]
    assert gold_match_links({"links": links}, links)
    assert not gold_match_links({"links": links}, [{**links[0], "qid": "Q91"}])
    assert gold_correct("answer_entity_linking", {"links": []}, {"links": []})


def test_bonus_blocks_are_stable_and_need_3_of_4():
    outcomes = [True, True, False, True, True, False, False, True, True, True]
    assert gold_bonus_blocks(outcomes) == [0]  # block 1: 2/4; last two: incomplete
    assert gold_bonus_blocks([*outcomes, True, True]) == [0, 2]
    assert gold_bonus_blocks(outcomes, block=2, correct=2) == [0, 4]
    with pytest.raises(ValueError, match="correct <= block"):
        gold_bonus_blocks([], block=2, correct=3)


def test_gold_mix_spreads_gold_at_the_ratio():
    order = gold_mix_order(
        list(range(90)), [100, 101, 102, 103, 104, 105, 106, 107, 108, 109], ratio=0.1, seed=1
    )
    assert len(order) == 100
    assert sorted(order) == list(range(90)) + list(range(100, 110))
    for start in range(0, 100, 20):  # every stretch of 20 holds some gold
        assert any(i >= 100 for i in order[start : start + 20])
    assert gold_mix_order([1, 2], [], ratio=0.5) == [1, 2]


def test_projections():
    assert categorical_label("sentence_selection_answer", {"no_answer": True}) == "no_answer"
    assert categorical_label("sentence_selection_answer", {"sentences": [1]}) == "answered"
    assert categorical_label("mc_validation", {"choice": 0}) == "0"
    assert categorical_label("rubric_evaluation", {"creativity": "very"}, dimension="creativity")
    assert entry_texts({"questions": [{"question": "Why a?", "answer": "b"}, "Why c?"]}) == [
        "Why a?",
        "Why c?",
    ]


# --- Each rule ------------------------------------------------------------------------------


def test_gold_accuracy_rule():
    gold_items = {h: [ItemRef(id=h, external_id="i1", gold=0)] for h in range(1, 6)}
    subs = [sub(h, h, 7, mc(0 if h <= 1 else 1)) for h in range(1, 6)]  # 1 of 5 right
    rule = {"rule": "gold_accuracy", "min": 0.5, "min_gold": 4}
    v = one(5, subs, rule, items=gold_items)
    assert (v.decision, v.numbers["correct"], v.numbers["gold"]) == (REJECT, 1, 5)
    assert v.numbers["accuracy"] == 0.2
    # Too few gold answers yet: on_missing (skip by default).
    v = one(3, subs[:3], rule, items=gold_items)
    assert v.decision == SKIP
    good = [sub(h, h, 8, mc(0)) for h in range(1, 6)]
    assert one(2, good, rule, items=gold_items).decision == APPROVE


def test_consensus_rule():
    subs = [sub(1, 1, 1, mc(0)), sub(2, 1, 2, mc(0)), sub(3, 1, 3, mc(2))]
    rule = {"rule": "consensus"}
    assert one(1, subs, rule).decision == APPROVE
    v = one(3, subs, rule)
    assert (v.decision, v.numbers["agree"], v.numbers["items"]) == (HOLD, 0, 1)
    assert one(3, subs, {**rule, "action": "reject"}).decision == REJECT
    # Two answers: fewer than min_answers (3): waiting -> hold.
    assert one(1, subs[:2], rule).decision == HOLD
    assert one(1, subs[:2], {**rule, "on_missing": "skip"}).decision == SKIP
    # A rejected answer does not count towards consensus.
    subs[1].status = "rejected"
    assert one(1, subs, rule).reason.startswith("no item has a majority")


def test_peer_overlap_rule_sentences_and_rouge():
    def ss(ids, no=False):
        return {"items": [{"external_id": "i1", "sentences": ids, "no_answer": no}]}

    subs = [sub(1, 1, 1, ss([1, 2])), sub(2, 1, 2, ss([2])), sub(3, 1, 3, ss([7, 8]))]
    rule = {"rule": "peer_overlap", "metric": "sentences", "min": 0.4}
    v = one(1, subs, rule, task_type="sentence_selection_answer")
    assert (v.decision, v.numbers["score"]) == (APPROVE, 0.5)
    v = one(3, subs, rule, task_type="sentence_selection_answer")
    assert (v.decision, v.numbers["score"]) == (HOLD, 0.0)

    def rp(text):
        return {"items": [{"external_id": "i1", "rephrasing": text}]}

    texts = [rp("why did the roman empire fall"), rp("why did the roman empire collapse")]
    rule = {"rule": "peer_overlap", "metric": "rouge1", "min": 0.5}
    v = one(1, [sub(1, 1, 1, texts[0]), sub(2, 1, 2, texts[1])], rule, task_type="rephrase")
    assert v.decision == APPROVE
    assert v.numbers["score"] == pytest.approx(5 / 6, abs=1e-4)
    assert one(1, [sub(1, 1, 1, texts[0])], rule, task_type="rephrase").decision == HOLD


def test_work_time_rule():
    rule = {"rule": "work_time", "min_seconds": 30}
    assert one(1, [sub(1, 1, 1, mc(0), seconds=12)], rule).decision == REJECT
    assert one(1, [sub(1, 1, 1, mc(0), seconds=30)], rule).decision == PASS
    v = one(1, [sub(1, 1, 1, mc(0), seconds=12)], {**rule, "action": "hold"})
    assert (v.decision, v.numbers) == (HOLD, {"seconds": 12, "floor": 30.0})
    two_items = {1: [ItemRef(1, "a"), ItemRef(2, "b")]}
    v = one(1, [sub(1, 1, 1, mc(0), seconds=45)], {**rule, "per_item": True}, items=two_items)
    assert (v.decision, v.numbers["floor"]) == (REJECT, 60.0)


def test_paste_share_rule():
    answer = {"questions": ["Why did the Roman Empire fall apart so fast?"]}  # 44 chars
    paste = {"pastes": [{"field": "questions/0", "length": 40}]}
    rule = {"rule": "paste_share", "max": 0.5}
    v = one(1, [sub(1, 1, 1, answer, telemetry=paste)], rule, task_type="why_question")
    assert (v.decision, v.numbers["pasted"], v.numbers["chars"]) == (HOLD, 40, 44)
    typed = {"pastes": [{"field": "x", "length": 5}], "keystrokes": 100}
    assert one(1, [sub(1, 1, 1, answer, telemetry=typed)], rule).decision == PASS
    assert one(1, [sub(1, 1, 1, {"questions": ["Why?"]})], rule).decision == SKIP


def test_duplicates_rule_flags_the_later_copy():
    a = {"questions": ["Why did the Roman Empire fall?", "Why is the sky blue?"]}
    b = {"questions": ["why did the roman empire fall", "Why do cats purr at night?"]}
    c = {"questions": ["Why do whales sing long songs?", "Why do whales sing long songs"]}
    subs = [sub(1, 1, 1, a, t=1), sub(2, 2, 2, b, t=2), sub(3, 3, 3, c, t=3)]
    rule = {"rule": "duplicates"}
    assert one(1, subs, rule, task_type="why_question").decision == PASS  # the original
    v = one(2, subs, rule, task_type="why_question")
    assert (v.decision, v.numbers["duplicates"], v.numbers["texts"]) == (REJECT, 1, 2)
    assert v.numbers["of"][0]["assignment"] == 1
    v = one(3, subs, rule, task_type="why_question")  # repeats itself
    assert (v.decision, v.numbers["duplicates"]) == (REJECT, 1)
    assert one(2, subs, {**rule, "max_share": 0.5}, task_type="why_question").decision == PASS


def test_no_answer_rate_rule():
    def ss(no):
        return {"items": [{"external_id": "i1", "sentences": [] if no else [1], "no_answer": no}]}

    lazy = [sub(h, h, 1, ss(h != 1)) for h in range(1, 6)]  # 4 of 5 "no answer"
    rule = {"rule": "no_answer_rate", "max": 0.6, "min_answers": 5}
    v = one(5, lazy, rule, task_type="sentence_selection_answer")
    assert (v.decision, v.numbers["rate"]) == (HOLD, 0.8)
    assert one(4, lazy[:4], rule, task_type="sentence_selection_answer").decision == SKIP
    fine = [sub(h, h, 2, ss(h == 1)) for h in range(1, 6)]
    assert one(1, fine, rule, task_type="sentence_selection_answer").decision == PASS


def test_a_verdict_is_made_once_per_parameters_and_inputs():
    """Assignments a rule judges alike share one verdict object (``StageFacts.verdict``),
    for the rules as prepared once for a run; other inputs or other parameters make
    another, and each is what the rule says."""
    subs = [
        sub(1, 1, 1, mc(0), seconds=12),
        sub(2, 2, 2, mc(0), seconds=12),
        sub(3, 3, 3, mc(0), seconds=40),
    ]
    strict, lenient = {"rule": "work_time", "min_seconds": 30}, {"rule": "work_time"}
    f = facts(subs, [strict, lenient])
    prepared = rules_prepare([strict, lenient])
    (first, other), (second, _), (third, _) = (
        review_prepared(s, f, prepared).verdicts for s in subs
    )
    assert first is second
    assert first is not third
    assert (first.decision, first.numbers) == (REJECT, {"seconds": 12, "floor": 30.0})
    assert third.decision == PASS
    assert other is not first
    assert (other.decision, other.numbers["floor"]) == (PASS, 10.0)
    # Another run's facts make it anew, the same.
    again = review_prepared(subs[0], facts(subs, [strict]), prepared).verdicts[0]
    assert again is not first
    assert again == first


# --- Combination and schemas ----------------------------------------------------------------


def test_combination_reject_beats_hold_beats_approve():
    a, r, h, s = (
        Verdict(n, d, n) for n, d in [("a", APPROVE), ("r", REJECT), ("h", HOLD), ("s", SKIP)]
    )
    assert combine([a, h, r, s]).decision == REJECT
    assert combine([a, h, r, s]).source == "rule:r"
    assert combine([a, h, s]).decision == HOLD
    assert (combine([a, s]).decision, combine([a, s]).source) == (APPROVE, "rule:a")
    assert combine([s]).decision == NONE
    assert combine([]).decision == NONE
    both = combine([a, Verdict("b", APPROVE, "b")])
    assert both.source == "rule:a+b"
    assert both.reason == "a: a; b: b"


def test_a_rule_that_only_looks_for_problems_never_approves():
    """Issue 19, point 21: a Mintaka writing answer with markup, alone under
    ``duplicates``, is no longer approved by that rule: no rule votes, so it waits for a
    person; an approving rule (auto_approve, gold, consensus, agreement) still approves."""
    pair = {"question": "How many films?", "answer": "<script>x</script>10 <b>films</b>"}
    answer = {"questions": [pair]}
    subs = [sub(1, 1, 1, answer)]
    for rule in (
        {"rule": "duplicates"},
        {"rule": "work_time", "min_seconds": 1},
        {"rule": "paste_share", "min_chars": 1},
        {"rule": "no_answer_rate", "min_answers": 1},
    ):
        result = review(subs[0], facts(subs, [rule], task_type="question_writing"), [rule])
        assert result.decision == NONE, rule
        assert result.source == ""
    both = [{"rule": "duplicates"}, {"rule": "auto_approve"}]
    result = review(subs[0], facts(subs, both, task_type="question_writing"), both)
    assert (result.decision, result.source) == (APPROVE, "rule:auto_approve")
    # Asking a problem-finder to approve when it has no data is refused at save.
    errors = review_rules_validate([{"rule": "work_time", "on_missing": "approve"}])
    assert len(errors) == 1
    assert "cannot approve" in errors[0]
    assert review_rules_validate([{"rule": "consensus", "on_missing": "approve"}]) == []
    assert rules_approving([{"rule": "duplicates"}, {"rule": "gold_accuracy"}]) == ["gold_accuracy"]


def test_review_rules_validate():
    ok = [
        {"rule": "gold_accuracy", "min": 0.5, "min_gold": 4},
        {"rule": "work_time", "min_seconds": 20, "action": "hold"},
        {"rule": "duplicates", "threshold": 0.9, "fields": ["questions"]},
        {"rule": "gold_disqualify", "qualification": 3},
        {"rule": "final_labels", "count_writer": True, "discard_labels": ["invalid"]},
        {"rule": "auto_approve"},
    ]
    assert review_rules_validate(ok) == []
    errors = review_rules_validate(
        [
            {"rule": "nope"},
            {"rule": "consensus", "min": 2},
            {"rule": "work_time", "min_secs": 3},
            {"rule": "paste_share", "action": "delete"},
            {"rule": "gold_disqualify"},
            "x",
        ]
    )
    assert len(errors) == 6, errors
    assert "unknown rule 'nope'" in errors[0]
    assert "min must be between 0 and 1" in errors[1]
    assert "unknown parameter 'min_secs'" in errors[2]
    assert review_rules_validate({"rule": "x"}) != []
    assert bonus_rules_validate([{"rule": "gold_bonus", "amount": "0.50"}]) == []
    assert bonus_rules_validate([{"rule": "gold_bonus"}]) == [
        "bonus_rules[0] (gold_bonus): amount is required"
    ]
    assert bonus_rules_validate([{"rule": "gold_bonus", "amount": "0.505"}]) != []
    assert escalation_rule_validate({"rule": "early_stop", "first": 3, "extend_to": 8}) == []
    assert escalation_rule_validate({"rule": "early_stop", "first": 3, "extend_to": 2}) != []
    assert escalation_rule_validate({"rule": "third_on_disagreement"}) == []


def test_needs_review_after_submit():
    assert not needs_review_after_submit([], {})
    assert not needs_review_after_submit([{"rule": "auto_approve"}], {})
    assert needs_review_after_submit([{"rule": "work_time"}], {})
    assert needs_review_after_submit([], {"rule": "early_stop"})


def test_the_submit_trigger_knows_every_rule():
    assert (set(RULE_FUNCTIONS) | WORKER_LEVEL) - {
        "auto_approve",
        "final_labels",
    } == REVIEWING_RULES
    assert needs_review_after_submit([{"rule": "gold_disqualify", "block": True}], {})
