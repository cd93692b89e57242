"""The review rules' verdicts: one function per deciding rule (``RULE_FUNCTIONS``),
their combination into one review (``combine``), and the rules a submission is
reviewed for once it is stored (``REVIEWING_RULES``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from statistics import mean
from typing import Any

from validation.projections import (
    categorical_label,
    entry_texts,
)
from validation.rules.facts import DuplicateOf, StageFacts, Submission, Verdict
from validation.rules.settings import (
    APPROVE,
    APPROVING,
    GOLD_ACTIONS,
    HOLD,
    NONE,
    PASS,
    REJECT,
    params_of,
)
from validation.text import rouge_f, sentence_overlap


def _approval(rule: str) -> str:
    """What ``rule`` says when it is satisfied: approve, or pass for a rule that only
    looks for problems (see ``APPROVING``)."""
    return APPROVE if rule in APPROVING else PASS


def _missing(rule: str, p: Mapping[str, Any], reason: str, **numbers: Any) -> Verdict:
    decision = p["on_missing"]
    return Verdict(rule, _approval(rule) if decision == APPROVE else decision, reason, numbers)


def _check(rule: str, p: Mapping[str, Any], ok: bool, reason: str, **numbers: Any) -> Verdict:
    return Verdict(rule, _approval(rule) if ok else p["action"], reason, numbers)


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def rule_auto_approve(sub: Submission, facts: StageFacts, p: Mapping[str, Any]) -> Verdict:
    return Verdict("auto_approve", APPROVE, "auto_approve rule")


def rule_gold_accuracy(sub: Submission, facts: StageFacts, p: Mapping[str, Any]) -> Verdict:
    return facts.worker_verdict(
        "gold_accuracy", sub.worker_id, p, lambda: _gold_accuracy(sub.worker_id, facts, p)
    )


def _gold_accuracy(worker_id: int, facts: StageFacts, p: Mapping[str, Any]) -> Verdict:
    tally = facts.gold_tally(worker_id, float(p["sentence_threshold"]))
    nums = {"correct": tally.correct, "gold": tally.total, "min": p["min"]}
    if tally.total < p["min_gold"]:
        return _missing(
            "gold_accuracy",
            p,
            f"{tally.total} gold answer(s) so far; judged from {p['min_gold']}",
            **nums,
            min_gold=p["min_gold"],
        )
    acc = tally.accuracy or 0.0
    return _check(
        "gold_accuracy",
        p,
        acc >= p["min"],
        f"gold accuracy {acc:.0%} ({tally.correct}/{tally.total}) "
        + (">=" if acc >= p["min"] else "<")
        + f" {p['min']:.0%}",
        **nums,
        accuracy=_r(acc),
    )


def rule_consensus(sub: Submission, facts: StageFacts, p: Mapping[str, Any]) -> Verdict:
    dimension = p["dimension"]
    agree = counted = 0
    for item_id, entry in sub.entries.items():
        majority, n = facts.consensus.get((dimension, item_id), (None, 0))
        if majority is None or n < p["min_answers"]:
            continue
        counted += 1
        agree += categorical_label(facts.task_type, entry, dimension=dimension) == majority
    return facts.verdict("consensus", p, (agree, counted), lambda: _consensus(agree, counted, p))


def _consensus(agree: int, counted: int, p: Mapping[str, Any]) -> Verdict:
    if not counted:
        return _missing(
            "consensus",
            p,
            f"no item has a majority over {p['min_answers']}+ answers yet",
            min_answers=p["min_answers"],
        )
    share = agree / counted
    return _check(
        "consensus",
        p,
        share >= p["min"],
        f"agrees with the majority on {agree}/{counted} item(s) "
        + (">=" if share >= p["min"] else "<")
        + f" {p['min']:.0%}",
        agree=agree,
        items=counted,
        share=_r(share),
        min=p["min"],
    )


def rule_peer_overlap(sub: Submission, facts: StageFacts, p: Mapping[str, Any]) -> Verdict:
    metric, fields = p["metric"], tuple(p["fields"])
    best: list[float] = []
    for item_id, entry in sub.entries.items():
        if metric == "sentences" and sub.status != "rejected":
            # A submission not rejected is among the item's peers: its best match
            # is computed once for all of them.
            score_of = facts.peer_sentence_best(item_id)
            if sub.id in score_of:
                best.append(score_of[sub.id])
            continue
        others = [facts.submissions[a] for a in facts.peers.get(item_id, []) if a != sub.id]
        peer_entries = [o.entries[item_id] for o in others if item_id in o.entries]
        if not peer_entries:
            continue
        if metric == "sentences":
            mine = facts.sentences(sub, item_id)
            best.append(max(sentence_overlap(mine, facts.sentences(o, item_id)) for o in others))
        else:
            text = " ".join(entry_texts(entry, fields=fields))
            peer_texts = [" ".join(entry_texts(e, fields=fields)) for e in peer_entries]
            scores = [rouge_f(text, t)[metric] for t in peer_texts if t and text]
            if scores:
                best.append(max(scores))
    if not best:
        return facts.verdict("peer_overlap", p, (), lambda: _peer_overlap(None, 0, p))
    # mean() sums exactly (fractions), which is slow; one item's score is its own mean.
    # Scores are fractions >= 0: equal ones print the same.
    score = best[0] if len(best) == 1 else mean(best)
    items = len(best)
    return facts.verdict("peer_overlap", p, (score, items), lambda: _peer_overlap(score, items, p))


def _peer_overlap(score: float | None, items: int, p: Mapping[str, Any]) -> Verdict:
    metric = p["metric"]
    if score is None:
        return _missing("peer_overlap", p, "no peer answer on the same item yet", metric=metric)
    return _check(
        "peer_overlap",
        p,
        score >= p["min"],
        f"{metric} best match with peers {score:.2f} "
        + (">=" if score >= p["min"] else "<")
        + f" {p['min']}",
        metric=metric,
        score=_r(score),
        items=items,
        min=p["min"],
    )


def rule_work_time(sub: Submission, facts: StageFacts, p: Mapping[str, Any]) -> Verdict:
    seconds = sub.work_seconds
    items = max(1, len(facts.items_by_hit.get(sub.hit_id, []))) if p["per_item"] else 1
    return facts.verdict("work_time", p, (seconds, items), lambda: _work_time(seconds, items, p))


def _work_time(seconds: int | None, items: int, p: Mapping[str, Any]) -> Verdict:
    if seconds is None:
        return _missing("work_time", p, "no work time recorded")
    floor = float(p["min_seconds"]) * items
    ok = seconds >= floor
    return _check(
        "work_time",
        p,
        ok,
        f"worked {seconds}s " + (">=" if ok else "<") + f" floor {floor:g}s",
        seconds=seconds,
        floor=floor,
    )


def rule_paste_share(sub: Submission, facts: StageFacts, p: Mapping[str, Any]) -> Verdict:
    chars = sum(len(t) for t in entry_texts(sub.answers, fields=p["fields"]))
    pastes = sub.telemetry.get("pastes") if isinstance(sub.telemetry, Mapping) else None
    pasted = sum(int(x.get("length") or 0) for x in (pastes or []) if isinstance(x, Mapping))
    return facts.verdict("paste_share", p, (chars, pasted), lambda: _paste_share(chars, pasted, p))


def _paste_share(chars: int, pasted: int, p: Mapping[str, Any]) -> Verdict:
    if chars < p["min_chars"]:
        return _missing(
            "paste_share", p, f"{chars} characters of text: too little to judge", chars=chars
        )
    share = min(1.0, pasted / chars)
    ok = share <= p["max"]
    return _check(
        "paste_share",
        p,
        ok,
        f"pasted {pasted} of {chars} characters ({share:.0%}) "
        + ("<=" if ok else ">")
        + f" {p['max']:.0%}",
        pasted=pasted,
        chars=chars,
        share=_r(share),
        max=p["max"],
    )


def rule_duplicates(sub: Submission, facts: StageFacts, p: Mapping[str, Any]) -> Verdict:
    fields = tuple(p["fields"])
    key = (float(p["threshold"]), fields)
    total = facts.text_counts.get(fields, {}).get(sub.id, 0)
    dups = facts.duplicates.get(key, {}).get(sub.id, []) if total else []
    if not dups:  # the verdict depends on the count of texts alone
        return facts.verdict("duplicates", p, (total,), lambda: _duplicates(total, [], p))
    return _duplicates(total, dups, p)


def _duplicates(total: int, dups: list[DuplicateOf], p: Mapping[str, Any]) -> Verdict:
    if not total:
        return _missing("duplicates", p, "no text to compare")
    share = len(dups) / total
    ok = share <= p["max_share"]
    return _check(
        "duplicates",
        p,
        ok,
        f"{len(dups)} of {total} text(s) duplicate earlier ones"
        + ("" if ok else f" (> {p['max_share']:.0%})"),
        duplicates=len(dups),
        texts=total,
        share=_r(share),
        of=[{"assignment": d.original_assignment, "similarity": d.similarity} for d in dups[:10]],
    )


def rule_no_answer_rate(sub: Submission, facts: StageFacts, p: Mapping[str, Any]) -> Verdict:
    return facts.worker_verdict(
        "no_answer_rate", sub.worker_id, p, lambda: _no_answer_rate(sub.worker_id, facts, p)
    )


def _no_answer_rate(worker_id: int, facts: StageFacts, p: Mapping[str, Any]) -> Verdict:
    na, n = facts.no_answers.get(worker_id, (0, 0))
    if n < p["min_answers"]:
        return _missing(
            "no_answer_rate", p, f"{n} answer(s) so far; judged from {p['min_answers']}", answers=n
        )
    rate = na / n
    ok = rate <= p["max"]
    return _check(
        "no_answer_rate",
        p,
        ok,
        f"'no answer' on {na}/{n} ({rate:.0%}) " + ("<=" if ok else ">") + f" {p['max']:.0%}",
        no_answer=na,
        answers=n,
        rate=_r(rate),
        max=p["max"],
    )


def rule_llm_flag(sub: Submission, facts: StageFacts, p: Mapping[str, Any]) -> Verdict:
    """Hold an answer a model may have written for a person; never reject on it (the
    rule's only action is hold). No flag yet: ``on_missing``."""
    flag = sub.llm_flag if isinstance(sub.llm_flag, Mapping) else None
    if flag is None:
        return _missing("llm_flag", p, "no LLM flag yet (the model has not answered)")
    score = flag.get("score")
    if not flag.get("flagged"):
        return Verdict(
            "llm_flag",
            PASS,
            f"not flagged ({flag.get('status', '')})",
            {"score": score, "status": flag.get("status")},
        )
    return Verdict(
        "llm_flag",
        HOLD,  # whatever the settings say: a flag alone never rejects
        f"may have been written by a model (score {score})",
        {"score": score, "status": flag.get("status")},
    )


RULE_FUNCTIONS: dict[str, Callable[[Submission, StageFacts, Mapping[str, Any]], Verdict]] = {
    "auto_approve": rule_auto_approve,
    "gold_accuracy": rule_gold_accuracy,
    "consensus": rule_consensus,
    "peer_overlap": rule_peer_overlap,
    "work_time": rule_work_time,
    "paste_share": rule_paste_share,
    "duplicates": rule_duplicates,
    "no_answer_rate": rule_no_answer_rate,
    "llm_flag": rule_llm_flag,
}
# The rules a stored submission is reviewed for (``validation.review_submission``,
# queued by ``validation.subscriptions``): every deciding rule but auto_approve, which
# ``assignment_submit`` applies itself, and the worker-level gold actions.
REVIEWING_RULES = (frozenset(RULE_FUNCTIONS) - {"auto_approve"}) | GOLD_ACTIONS


@dataclass(frozen=True)
class Review:
    decision: str  # approve / reject / hold / none
    source: str  # "rule:<name>" of the deciding rule(s)
    reason: str
    verdicts: list[Verdict]

    def details(self, *, at: datetime | None = None) -> dict[str, Any]:
        """What goes into ``Assignment.review_details["review"]``."""
        return {**self.head(at=at), "rules": [v.as_json() for v in self.verdicts]}

    def head(self, *, at: datetime | None = None) -> dict[str, Any]:
        """``details`` without the verdicts (its "rules")."""
        return {
            "decision": self.decision,
            "source": self.source,
            "reason": self.reason,
            "at": at.isoformat() if at else None,
        }


def combine(verdicts: Sequence[Verdict]) -> Review:
    """Any reject → reject; else any hold → hold; else any approve → approve; else none
    (skip and pass do not vote)."""
    # One pass over the verdicts (a stage review combines one list per assignment).
    voting: dict[str, list[Verdict]] = {REJECT: [], HOLD: [], APPROVE: []}
    for v in verdicts:
        votes = voting.get(v.decision)
        if votes is not None:
            votes.append(v)
    for decision, deciding in voting.items():
        if deciding:
            source = "rule:" + "+".join(v.rule for v in deciding)
            if len(source) > 80:
                source = f"rule:{deciding[0].rule}+{len(deciding) - 1}"
            return Review(
                decision=decision,
                source=source,
                reason="; ".join(f"{v.rule}: {v.reason}" for v in deciding),
                verdicts=list(verdicts),
            )
    return Review(decision=NONE, source="", reason="no rule decided", verdicts=list(verdicts))


RuleFunction = Callable[[Submission, StageFacts, Mapping[str, Any]], Verdict]

Prepared = list[tuple[RuleFunction, dict[str, Any]]]


def rules_prepare(rules: Sequence[Mapping[str, Any]]) -> Prepared:
    """The deciding rules of ``rules`` with their parameters filled in, ready for ``review``."""
    return [
        (RULE_FUNCTIONS[r["rule"]], params_of(r)) for r in rules if r.get("rule") in RULE_FUNCTIONS
    ]


def review(sub: Submission, facts: StageFacts, rules: Sequence[Mapping[str, Any]]) -> Review:
    """Run every deciding rule of ``rules`` on ``sub`` and combine their verdicts."""
    return review_prepared(sub, facts, rules_prepare(rules))


def review_prepared(sub: Submission, facts: StageFacts, prepared: Prepared) -> Review:
    """``review`` with the rules prepared once (``rules_prepare``), for many assignments."""
    return combine([fn(sub, facts, params) for fn, params in prepared])
