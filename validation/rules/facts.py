"""What the review rules read: one submission (``Submission``) and what they need to
know about its stage (``StageFacts``, built once per batch by ``facts_build``: gold
tallies, majorities, peers, duplicates), and what a rule says (``Verdict``), which
the facts keep so that a stage's repeated verdicts are computed once.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from validation.gold import gold_accuracy, gold_correct
from validation.projections import (
    categorical_label,
    entries_by_item,
    entry_texts,
    is_no_answer,
    sentence_set,
)
from validation.rules.settings import BONUS_RULES, RULES, params_of
from validation.text import find_duplicates, sentence_overlap


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
    llm_flag: Mapping[str, Any] | None = None  # Assignment.llm_flag (None: not there yet)


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


# What a rule says; ``StageFacts.verdict`` keeps them, so it is declared here.


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
