"""Review rules: per-stage, composable, each deciding approve / reject / hold with the
numbers that made it. Pure functions over plain data; ``validation.services`` loads
the data and applies the decisions.

A stage's ``review_rules`` is a list of ``{"rule": name, ...params}``; check it with
``review_rules_validate`` when the stage is saved. Rules and their params
(defaults in ``RULES``; every deciding rule takes ``action`` — what a failed
check does, "reject" or "hold" — and ``on_missing`` — what it says when it has no
data yet: "approve", "hold" or "skip"):

- ``auto_approve`` — approve (also applied at submit by ``assignment_submit``).
- ``gold_accuracy`` {min, min_gold} — the worker's accuracy on gold items in the
  stage is ≥ ``min`` once they answered ``min_gold`` gold items.
- ``consensus`` {min, min_answers} — share of the assignment's items whose label
  equals the item's majority label (over the HIT's stored, not rejected
  answers; ties have no majority), among items with ≥ ``min_answers`` answers.
- ``peer_overlap`` {metric, min, fields} — mean over items of the best match
  with a peer's answer on the same item: ``metric`` "sentences" (sentence-id
  overlap, WhyQA) or a ROUGE F ("rouge1", "rouge2", "rougeL", "rougeSU4") of the
  entry's texts.
- ``work_time`` {min_seconds, per_item} — work time (accept to submit) ≥ the floor.
- ``paste_share`` {max, min_chars, fields} — pasted characters (page telemetry)
  / characters of the answer's texts ≤ ``max``.
- ``duplicates`` {threshold, max_share, fields} — share of the assignment's
  texts that duplicate (equal after normalising, or token Jaccard ≥
  ``threshold``) a text submitted earlier in the stage (or earlier in the same
  answer) ≤ ``max_share``. The earliest text of a group is the original.
- ``no_answer_rate`` {max, min_answers} — the worker's share of "no answer"
  over the stage ≤ ``max`` once they gave ``min_answers`` answers.

Worker-level entries, which decide no assignment (their verdict is "skip"):

- ``gold_disqualify`` {min, min_gold, qualification, block} — revoke
  qualification type ``qualification`` (id) and/or block the worker from the
  requester's work when their gold accuracy is < ``min`` after ``min_gold``.
- ``final_labels`` {count_writer, discard_labels, require, ties} — how the
  dashboard's final labels are voted (``validation.selectors.stage_final_labels``).

Who may approve: only a rule that decides to approve — agreement with gold
(``gold_accuracy``), with the majority (``consensus``), with peers (``peer_overlap``)
or an explicit ``auto_approve`` (``APPROVING``). The others only look for problems
(``work_time``, ``paste_share``, ``duplicates``, ``no_answer_rate``): when they find
none their verdict is "pass", which does not vote, so an assignment no approving rule
vouches for stays submitted and reaches a person in the review queue.

Combination (``combine``): any reject → reject; else any hold → hold; else any
approve → approve; rules that skip or pass do not vote, and when none votes there is
no decision (the assignment stays submitted).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal, InvalidOperation
from statistics import mean
from typing import Any

from validation.gold import DEFAULT_SENTENCE_THRESHOLD, gold_accuracy, gold_correct
from validation.projections import (
    DEFAULT_TEXT_FIELDS,
    categorical_label,
    entries_by_item,
    entry_texts,
    is_no_answer,
    sentence_set,
)
from validation.text import find_duplicates, rouge_f, sentence_overlap

APPROVE, REJECT, HOLD, SKIP = "approve", "reject", "hold", "skip"
PASS = "pass"  # a problem-finding rule found no problem: it does not vote
NONE = "none"  # combined: no rule voted
DECISIONS = (APPROVE, REJECT, HOLD)
# The rules that decide to approve; every other rule only looks for problems.
APPROVING = frozenset({"auto_approve", "gold_accuracy", "consensus", "peer_overlap"})
ROUGE_METRICS = ("rouge1", "rouge2", "rougeL", "rougeSU4")

# --- Schema ---------------------------------------------------------------------------


def _num(lo: float, hi: float | None = None) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            return "must be a number"
        if v < lo or (hi is not None and v > hi):
            return f"must be between {lo} and {hi}" if hi is not None else f"must be >= {lo}"
        return None

    return check


def _int(lo: int) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        if isinstance(v, bool) or not isinstance(v, int):
            return "must be an integer"
        return None if v >= lo else f"must be >= {lo}"

    return check


def _choice(*options: Any) -> Callable[[Any], str | None]:
    return lambda v: None if v in options else f"must be one of {', '.join(map(str, options))}"


def _bool(v: Any) -> str | None:
    return None if isinstance(v, bool) else "must be true or false"


def _str_list(v: Any) -> str | None:
    ok = isinstance(v, list) and v and all(isinstance(s, str) and s for s in v)
    return None if ok else "must be a non-empty list of names"


def _any_list(v: Any) -> str | None:
    return None if isinstance(v, list) else "must be a list"


def _money(v: Any) -> str | None:
    try:
        amount = Decimal(str(v))
    except (InvalidOperation, ValueError):
        return "must be an amount like 0.50"
    if isinstance(v, bool) or not amount.is_finite() or amount <= 0:
        return "must be a positive amount"
    return None if amount == amount.quantize(Decimal("0.01")) else "must be whole cents"


def _qualification(v: Any) -> str | None:
    return (
        None if v is None or (isinstance(v, int) and not isinstance(v, bool)) else "must be an id"
    )


_DECIDING = {
    "action": (_choice(REJECT, HOLD), None),  # default per rule below
    "on_missing": (_choice(APPROVE, HOLD, SKIP), None),
}

# name -> {param: (check, default)}; "action"/"on_missing" defaults per rule.
RULES: dict[str, dict[str, tuple[Callable[[Any], str | None], Any]]] = {
    "auto_approve": {},
    "gold_accuracy": {
        "min": (_num(0, 1), 0.5),
        "min_gold": (_int(1), 3),
        "sentence_threshold": (_num(0, 1), DEFAULT_SENTENCE_THRESHOLD),
        "action": (_DECIDING["action"][0], REJECT),
        "on_missing": (_DECIDING["on_missing"][0], SKIP),
    },
    "consensus": {
        "min": (_num(0, 1), 0.5),
        "min_answers": (_int(2), 3),
        "dimension": (lambda v: None if isinstance(v, str) else "must be a name", "answerable"),
        "action": (_DECIDING["action"][0], HOLD),
        "on_missing": (_DECIDING["on_missing"][0], HOLD),
    },
    "peer_overlap": {
        "metric": (_choice("sentences", *ROUGE_METRICS), "sentences"),
        "min": (_num(0, 1), 0.3),
        "fields": (_str_list, list(DEFAULT_TEXT_FIELDS)),
        "action": (_DECIDING["action"][0], HOLD),
        "on_missing": (_DECIDING["on_missing"][0], HOLD),
    },
    "work_time": {
        "min_seconds": (_num(0), 10),
        "per_item": (_bool, False),
        "action": (_DECIDING["action"][0], REJECT),
        "on_missing": (_DECIDING["on_missing"][0], SKIP),
    },
    "paste_share": {
        "max": (_num(0, 1), 0.5),
        "min_chars": (_int(1), 20),
        "fields": (_str_list, list(DEFAULT_TEXT_FIELDS)),
        "action": (_DECIDING["action"][0], HOLD),
        "on_missing": (_DECIDING["on_missing"][0], SKIP),
    },
    "duplicates": {
        "threshold": (_num(0.01, 1), 0.8),
        "max_share": (_num(0, 1), 0.0),
        "fields": (_str_list, list(DEFAULT_TEXT_FIELDS)),
        "action": (_DECIDING["action"][0], REJECT),
        "on_missing": (_DECIDING["on_missing"][0], SKIP),
    },
    "no_answer_rate": {
        "max": (_num(0, 1), 0.6),
        "min_answers": (_int(1), 5),
        "action": (_DECIDING["action"][0], HOLD),
        "on_missing": (_DECIDING["on_missing"][0], SKIP),
    },
    "gold_disqualify": {
        "min": (_num(0, 1), 0.5),
        "min_gold": (_int(1), 4),
        "sentence_threshold": (_num(0, 1), DEFAULT_SENTENCE_THRESHOLD),
        "qualification": (_qualification, None),
        "block": (_bool, False),
    },
    "final_labels": {
        "count_writer": (_bool, False),
        "discard_labels": (_any_list, []),
        "require": (_choice("plurality", "absolute"), "plurality"),
        "ties": (_choice("none", "first"), "none"),
        "dimension": (lambda v: None if isinstance(v, str) else "must be a name", "answerable"),
    },
}
WORKER_LEVEL = frozenset({"gold_disqualify", "final_labels"})

BONUS_RULES: dict[str, dict[str, tuple[Callable[[Any], str | None], Any]]] = {
    "gold_bonus": {
        "amount": (_money, None),
        "block": (_int(1), 4),
        "correct": (_int(1), 3),
        "sentence_threshold": (_num(0, 1), DEFAULT_SENTENCE_THRESHOLD),
    },
    # Fair pay: top approved work up to ``hourly`` for its measured time, counting at
    # most ``cap_seconds`` (an idle tab is not work); campaigns.payments.wages.
    "wage_floor": {
        "hourly": (_money, None),
        "cap_seconds": (_int(60), 3600),
    },
}

ESCALATION_RULES: dict[str, dict[str, tuple[Callable[[Any], str | None], Any]]] = {
    "early_stop": {
        "first": (_int(1), 3),
        "drop_if_no_answer": (_int(1), 2),
        "extend_to": (_int(1), 8),
    },
}


def _validate(
    entries: Any, known: Mapping[str, Mapping[str, Any]], where: str, required: set[str]
) -> list[str]:
    if not isinstance(entries, list):
        return [f"{where} must be a list of {{'rule': name, ...}} objects"]
    errors: list[str] = []
    for n, entry in enumerate(entries):
        at = f"{where}[{n}]"
        if not isinstance(entry, Mapping):
            errors.append(f"{at}: must be an object with a 'rule' name")
            continue
        name = entry.get("rule")
        if not isinstance(name, str) or name not in known:
            errors.append(f"{at}: unknown rule {name!r}; known rules: {', '.join(sorted(known))}")
            continue
        spec = known[name]
        for key, value in entry.items():
            if key == "rule":
                continue
            if key not in spec:
                errors.append(f"{at} ({name}): unknown parameter {key!r}")
                continue
            problem = spec[key][0](value)
            if problem:
                errors.append(f"{at} ({name}): {key} {problem}")
        for key in sorted(required & set(spec)):
            if spec[key][1] is None and key not in entry:
                errors.append(f"{at} ({name}): {key} is required")
    return errors


def review_rules_validate(rules: Any) -> list[str]:
    """Problems with a stage's ``review_rules`` (empty list when valid).

    Call it where the stage is saved (``stage_add``/``stage_update`` and the stage
    API serializer) and refuse the save when it returns anything.
    """
    errors = _validate(rules, RULES, "review_rules", set())
    for n, entry in enumerate(rules if isinstance(rules, list) else []):
        name = entry.get("rule") if isinstance(entry, Mapping) else None
        if name in RULES and name not in APPROVING and entry.get("on_missing") == APPROVE:
            errors.append(
                f"review_rules[{n}] ({name}): only looks for problems and cannot approve; "
                "on_missing must be hold or skip"
            )
        if (
            isinstance(entry, Mapping)
            and entry.get("rule") == "gold_disqualify"
            and entry.get("qualification") is None
            and not entry.get("block")
        ):
            errors.append(
                f"review_rules[{n}] (gold_disqualify): give a qualification id, block: true, "
                "or both"
            )
    return errors


def bonus_rules_validate(rules: Any) -> list[str]:
    """Problems with a stage's ``bonus_rules`` (``gold_bonus`` {amount, block, correct};
    ``wage_floor`` {hourly, cap_seconds})."""
    errors = _validate(rules, BONUS_RULES, "bonus_rules", {"amount", "hourly"})
    for n, entry in enumerate(rules if not errors else []):
        if entry.get("correct", 3) > entry.get("block", 4):
            errors.append(f"bonus_rules[{n}] (gold_bonus): correct cannot exceed block")
    return errors


def escalation_rule_validate(rule: Any) -> list[str]:
    """Problems with a stage's ``escalation_rule`` when it is an ``early_stop`` one.

    Other escalation rules (``{}``, or rules other modules own) are not checked here.
    """
    if not isinstance(rule, Mapping) or rule.get("rule") != "early_stop":
        return []
    errors = _validate([rule], ESCALATION_RULES, "escalation_rule", set())
    if not errors:
        p = params_of(rule, ESCALATION_RULES)
        if p["drop_if_no_answer"] > p["first"]:
            errors.append("escalation_rule: drop_if_no_answer cannot exceed first")
        if p["extend_to"] <= p["first"]:
            errors.append("escalation_rule: extend_to must exceed first")
    return [e.replace("escalation_rule[0]", "escalation_rule") for e in errors]


def params_of(
    entry: Mapping[str, Any],
    known: Mapping[str, Mapping[str, tuple[Any, Any]]] = RULES,
) -> dict[str, Any]:
    """The entry's parameters with the defaults filled in."""
    spec = known[entry["rule"]]
    return {key: entry.get(key, default) for key, (_, default) in spec.items()}


# --- Data the rules read -------------------------------------------------------------


@dataclass(frozen=True)
class ItemRef:
    id: int
    external_id: str
    gold: Any = None

    @property
    def is_gold(self) -> bool:
        return self.gold is not None


@dataclass
class Submission:
    """One stored assignment as the rules see it."""

    id: int
    hit_id: int
    worker_id: int
    status: str  # submitted / approved / rejected
    answers: Any
    work_seconds: int | None = None
    telemetry: Mapping[str, Any] = field(default_factory=dict)
    submitted_at: datetime | None = None
    entries: dict[int, dict[str, Any]] = field(default_factory=dict)  # item id -> entry
    provider: str = ""  # the assignment's provider ("" when not read)


@dataclass
class GoldTally:
    outcomes: list[bool] = field(default_factory=list)  # in answer order
    # (assignment id, item id) of each outcome, same order
    keys: list[tuple[int, int]] = field(default_factory=list)

    @property
    def correct(self) -> int:
        return sum(self.outcomes)

    @property
    def total(self) -> int:
        return len(self.outcomes)

    @property
    def accuracy(self) -> float | None:
        return gold_accuracy(self.correct, self.total)


@dataclass(frozen=True)
class DuplicateOf:
    text: str
    original_assignment: int
    similarity: float


@dataclass
class StageFacts:
    """What the rules need to know about the stage beyond one assignment."""

    task_type: str
    items_by_hit: dict[int, list[ItemRef]]
    submissions: dict[int, Submission]
    gold: dict[tuple[float, int], GoldTally] = field(default_factory=dict)  # (thr, worker)
    consensus: dict[tuple[str, int], tuple[Hashable | None, int]] = field(default_factory=dict)
    peers: dict[int, list[int]] = field(default_factory=dict)  # item id -> assignment ids
    no_answers: dict[int, tuple[int, int]] = field(default_factory=dict)  # worker -> (na, all)
    duplicates: dict[tuple[float, tuple[str, ...]], dict[int, list[DuplicateOf]]] = field(
        default_factory=dict
    )
    text_counts: dict[tuple[str, ...], dict[int, int]] = field(default_factory=dict)

    _sentence_sets: dict[tuple[int, int], frozenset[int] | None] = field(default_factory=dict)

    def sentences(self, sub: Submission, item_id: int) -> frozenset[int] | None:
        """``sentence_set`` of ``sub``'s entry for the item, computed once."""
        key = (sub.id, item_id)
        if key not in self._sentence_sets:
            self._sentence_sets[key] = sentence_set(sub.entries.get(item_id))
        return self._sentence_sets[key]

    _peer_best: dict[int, dict[int, float]] = field(default_factory=dict)
    _verdicts: dict[tuple[Any, ...], tuple[Mapping[str, Any], Verdict]] = field(
        default_factory=dict
    )

    def verdict(
        self,
        rule: str,
        p: Mapping[str, Any],
        inputs: tuple[Any, ...],
        compute: Callable[[], Verdict],
    ) -> Verdict:
        """``compute()``, once per rule, parameters and ``inputs``: everything else the
        verdict depends on, each of a type that compares equal only to what prints the
        same (ints, strings). A stage's verdicts repeat (the same work time, the same
        share of the majority, …): one object each, shared by the assignments it
        judges; not to be changed."""
        key = (rule, id(p), inputs)
        cached = self._verdicts.get(key)
        if cached is not None and cached[0] is p:
            return cached[1]
        verdict = compute()
        self._verdicts[key] = (p, verdict)  # holds p: its id is not reused
        return verdict

    def worker_verdict(
        self, rule: str, worker_id: int, p: Mapping[str, Any], compute: Callable[[], Verdict]
    ) -> Verdict:
        """The verdict of a rule that looks only at the worker (the same for all their
        assignments), computed once per worker and parameters (``verdict``)."""
        return self.verdict(rule, p, (worker_id,), compute)

    def peer_sentence_best(self, item_id: int) -> dict[int, float]:
        """For each peer (``peers``) of the item, the highest ``sentence_overlap`` of
        its sentences with another peer's; computed once per item, each pair once.
        A peer alone on the item has no entry."""
        best = self._peer_best.get(item_id)
        if best is None:
            ids = self.peers.get(item_id, [])
            sets = [self.sentences(self.submissions[a], item_id) for a in ids]
            best = {}
            for i in range(len(ids)):
                for j in range(i + 1, len(ids)):
                    score = sentence_overlap(sets[i], sets[j])
                    if score > best.get(ids[i], -1.0):
                        best[ids[i]] = score
                    if score > best.get(ids[j], -1.0):
                        best[ids[j]] = score
            self._peer_best[item_id] = best
        return best

    def gold_tally(self, worker_id: int, threshold: float) -> GoldTally:
        return self.gold.get((threshold, worker_id)) or GoldTally()


def _order_key(sub: Submission) -> tuple[float, int]:
    return (sub.submitted_at.timestamp() if sub.submitted_at else 0.0, sub.id)


def facts_build(
    *,
    task_type: str,
    items_by_hit: Mapping[int, list[ItemRef]],
    submissions: Sequence[Submission],
    rules: Sequence[Mapping[str, Any]],
    bonus_rules: Sequence[Mapping[str, Any]] = (),
) -> StageFacts:
    """Index ``submissions`` (the stage's stored assignments in scope) for ``rules``.

    Fills each submission's ``entries``; computes only what the rules ask for.
    """
    facts = StageFacts(
        task_type=task_type,
        items_by_hit=dict(items_by_hit),
        submissions={s.id: s for s in submissions},
    )
    ordered = sorted(submissions, key=_order_key)
    for sub in ordered:
        items = facts.items_by_hit.get(sub.hit_id, [])
        sub.entries = entries_by_item(
            sub.answers, [{"id": i.id, "external_id": i.external_id} for i in items]
        )
        if sub.status != "rejected":
            for item_id in sub.entries:
                facts.peers.setdefault(item_id, []).append(sub.id)
    names = {r["rule"] for r in rules}
    thresholds = {
        float(params_of(r, RULES if r["rule"] in RULES else BONUS_RULES)["sentence_threshold"])
        for r in [*rules, *bonus_rules]
        if r["rule"] in ("gold_accuracy", "gold_disqualify", "gold_bonus")
    }
    for threshold in thresholds:
        _gold_facts(facts, ordered, threshold)
    for r in rules:
        if r["rule"] == "consensus":
            _consensus_facts(facts, ordered, params_of(r)["dimension"])
        if r["rule"] == "duplicates":
            p = params_of(r)
            _duplicate_facts(facts, ordered, float(p["threshold"]), tuple(p["fields"]))
    if "no_answer_rate" in names:
        counts: dict[int, list[int]] = defaultdict(lambda: [0, 0])
        for sub in ordered:
            for entry in sub.entries.values():
                flag = is_no_answer(task_type, entry)
                if flag is not None:
                    counts[sub.worker_id][0] += flag
                    counts[sub.worker_id][1] += 1
        facts.no_answers = {w: (na, n) for w, (na, n) in counts.items()}
    return facts


def _gold_facts(facts: StageFacts, ordered: Sequence[Submission], threshold: float) -> None:
    for sub in ordered:
        for item in facts.items_by_hit.get(sub.hit_id, []):
            if not item.is_gold:
                continue
            outcome = gold_correct(
                facts.task_type, sub.entries.get(item.id), item.gold, sentence_threshold=threshold
            )
            tally = facts.gold.setdefault((threshold, sub.worker_id), GoldTally())
            tally.outcomes.append(bool(outcome))
            tally.keys.append((sub.id, item.id))


def _consensus_facts(facts: StageFacts, ordered: Sequence[Submission], dimension: str) -> None:
    """Per item: the plurality label of the answers not rejected (None on a tie, as
    ``majority_vote(ties="none")`` decides it) and how many answers have a label.
    Counted here rather than through ``majority_vote``: the labels are strings, and a
    stage's review should not pay for building a pandas table (or importing pandas)."""
    votes: dict[int, Counter[Hashable]] = {}
    for sub in ordered:
        if sub.status == "rejected":
            continue
        for item_id, entry in sub.entries.items():
            label = categorical_label(facts.task_type, entry, dimension=dimension)
            if label is not None:
                votes.setdefault(item_id, Counter())[label] += 1
    for item_id, counts in votes.items():
        top = counts.most_common(2)
        winner = top[0][0] if len(top) == 1 or top[0][1] > top[1][1] else None
        facts.consensus[(dimension, item_id)] = (winner, sum(counts.values()))


def _duplicate_facts(
    facts: StageFacts, ordered: Sequence[Submission], threshold: float, fields: tuple[str, ...]
) -> None:
    texts: list[str] = []
    owner: list[int] = []
    counts: dict[int, int] = {}
    for sub in ordered:
        own = entry_texts(sub.answers, fields=fields)
        counts[sub.id] = len(own)
        texts += own
        owner += [sub.id] * len(own)
    found: dict[int, list[DuplicateOf]] = defaultdict(list)
    if texts:
        result = find_duplicates(texts, threshold=threshold)
        similarity: dict[tuple[int, int], float] = {
            (p.a, p.b): p.similarity for p in result.near_pairs
        }
        for group in result.groups:
            first = group[0]  # texts are in submission order: the earliest is the original
            for other in group[1:]:
                found[owner[other]].append(
                    DuplicateOf(
                        text=texts[other][:200],
                        original_assignment=owner[first],
                        similarity=round(similarity.get((first, other), 1.0), 4),
                    )
                )
    facts.duplicates[(threshold, fields)] = dict(found)
    facts.text_counts[fields] = counts


# --- Rules ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    rule: str
    decision: str  # approve / reject / hold / skip
    reason: str
    numbers: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "decision": self.decision,
            "reason": self.reason,
            "numbers": self.numbers,
        }


def _approval(rule: str) -> str:
    """What ``rule`` says when it is satisfied: approve, or pass for a rule that only
    looks for problems (see ``APPROVING``)."""
    return APPROVE if rule in APPROVING else PASS


def _missing(rule: str, p: Mapping[str, Any], reason: str, **numbers: Any) -> Verdict:
    decision = p["on_missing"]
    return Verdict(rule, _approval(rule) if decision == APPROVE else decision, reason, numbers)


def _check(rule: str, p: Mapping[str, Any], ok: bool, reason: str, **numbers: Any) -> Verdict:
    return Verdict(rule, _approval(rule) if ok else p["action"], reason, numbers)


def rules_approving(rules: Sequence[Mapping[str, Any]]) -> list[str]:
    """The names of the rules in ``rules`` that can approve an assignment; empty when
    approval is a person's (the review queue)."""
    return [str(r["rule"]) for r in rules if isinstance(r, Mapping) and r.get("rule") in APPROVING]


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


RULE_FUNCTIONS: dict[str, Callable[[Submission, StageFacts, Mapping[str, Any]], Verdict]] = {
    "auto_approve": rule_auto_approve,
    "gold_accuracy": rule_gold_accuracy,
    "consensus": rule_consensus,
    "peer_overlap": rule_peer_overlap,
    "work_time": rule_work_time,
    "paste_share": rule_paste_share,
    "duplicates": rule_duplicates,
    "no_answer_rate": rule_no_answer_rate,
}


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
    for decision in (REJECT, HOLD, APPROVE):
        deciding = [v for v in verdicts if v.decision == decision]
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
