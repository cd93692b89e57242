"""Entity agreement as pure functions over plain data (no database).

Two annotations of an item agree when they select the same set of (span, id)
pairs; "not in Wikidata" (NIL) is an id of its own. The decision rule, Mintaka's
"2 annotators, a 3rd on disagreement":

- an item is resolved when one link set is given by at least two annotators and
  by more than half of them;
- a *seen* item (every span pre-filled from a link agreed elsewhere in the
  campaign) needs one annotator: it is resolved when that annotator keeps the
  pre-filled links; when they change them, it needs ``annotators`` like any other,
  the pre-filled set counting as one more vote;
- otherwise one more annotator is asked for, up to ``max``; past it, the item
  goes to the requester's review queue.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Any

LinkKey = tuple[int, int, str]
LinkSet = frozenset[LinkKey]
NIL = "NIL"

ESCALATION_RULE = "entity_agreement"
BONUS_RULE = "per_agreed_entity"
DEFAULT_ANNOTATORS = 2
DEFAULT_MAX_ANNOTATORS = 3
DEFAULT_SEEN_ANNOTATORS = 1


def link_key(link: Mapping[str, Any]) -> LinkKey:
    """``(start, end, qid or "NIL")`` of one link."""
    qid = NIL if link.get("none") or not link.get("qid") else str(link["qid"])
    return (int(link["start"]), int(link["end"]), qid)


def link_set(links: Iterable[Mapping[str, Any]]) -> LinkSet:
    """The set of (span, id) pairs of a list of links."""
    return frozenset(link_key(link) for link in links)


def links_from_set(keys: LinkSet, *, texts: Mapping[tuple[int, int], str]) -> list[dict[str, Any]]:
    """Links (``start``, ``end``, ``text``, ``qid``, ``none``) in span order from a set."""
    return [
        {
            "start": start,
            "end": end,
            "text": texts.get((start, end), ""),
            "qid": None if qid == NIL else qid,
            "none": qid == NIL,
        }
        for start, end, qid in sorted(keys)
    ]


@dataclass(frozen=True)
class EscalationRule:
    """A stage's ``escalation_rule`` ``{"rule": "entity_agreement", "annotators": 2,
    "max": 3, "seen_annotators": 1}`` with its defaults."""

    annotators: int = DEFAULT_ANNOTATORS
    max: int = DEFAULT_MAX_ANNOTATORS
    seen_annotators: int = DEFAULT_SEEN_ANNOTATORS

    @classmethod
    def from_json(cls, data: Any) -> EscalationRule | None:
        """The rule, or None when ``data`` is not an entity-agreement rule."""
        if not isinstance(data, Mapping) or data.get("rule") != ESCALATION_RULE:
            return None
        annotators = max(1, int(data.get("annotators", DEFAULT_ANNOTATORS)))
        return cls(
            annotators=annotators,
            max=max(annotators, int(data.get("max", DEFAULT_MAX_ANNOTATORS))),
            seen_annotators=max(1, int(data.get("seen_annotators", DEFAULT_SEEN_ANNOTATORS))),
        )


class Verdict(StrEnum):
    RESOLVED = "resolved"
    MORE = "more"  # ask for another annotator (``needed`` in all)
    REVIEW = "review"


@dataclass(frozen=True)
class ItemDecision:
    verdict: Verdict
    links: LinkSet | None = None  # the agreed set when resolved
    needed: int = 0  # annotators wanted in all when ``MORE``
    source: str = ""  # "agreement" or "seen_confirmed"


def majority_set(sets: Sequence[LinkSet]) -> LinkSet | None:
    """The set given by at least two annotators and more than half of them, if any."""
    if not sets:
        return None
    (top, count), *_ = Counter(sets).most_common(1)
    return top if count >= 2 and count * 2 > len(sets) else None


def item_decide(
    *, sets: Sequence[LinkSet], rule: EscalationRule, prefilled: LinkSet | None
) -> ItemDecision:
    """What to do with one item given its annotators' link sets, in submission order.

    ``prefilled`` is the pre-filled set of a seen item (None for a new one).
    """
    n = len(sets)
    if prefilled is not None and n == 1 and sets[0] == prefilled:
        return ItemDecision(Verdict.RESOLVED, links=prefilled, source="seen_confirmed")
    agreed = majority_set(sets)
    if agreed is None and prefilled is not None and n >= 2:
        # The earlier agreement counts as one more vote once the first annotator
        # changed the pre-filled links: [changed, kept] resolves to the kept ones.
        agreed = majority_set([*sets, prefilled])
    if agreed is not None:
        return ItemDecision(Verdict.RESOLVED, links=agreed, source="agreement")
    needed = rule.seen_annotators if prefilled is not None else rule.annotators
    if n >= needed:
        needed = n + 1 if n >= rule.annotators else rule.annotators
    if needed > rule.max:
        return ItemDecision(Verdict.REVIEW)
    return ItemDecision(Verdict.MORE, needed=needed)


@dataclass(frozen=True)
class AgreementSummary:
    """Agreement on one stage: after the first two annotators of each item and after
    at most three (Mintaka reports 82 % → 97 % for answers)."""

    items: int
    with_two: int
    agreed_after_2: int
    agreed_after_3: int
    seen_confirmed: int

    @property
    def after_2(self) -> float | None:
        return self.agreed_after_2 / self.with_two if self.with_two else None

    @property
    def after_3(self) -> float | None:
        return self.agreed_after_3 / self.with_two if self.with_two else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "items": self.items,
            "with_two": self.with_two,
            "agreed_after_2": self.agreed_after_2,
            "agreed_after_3": self.agreed_after_3,
            "after_2": self.after_2,
            "after_3": self.after_3,
            "seen_confirmed": self.seen_confirmed,
        }


def agreement_summary(
    per_item: Iterable[tuple[Sequence[LinkSet], LinkSet | None]],
) -> AgreementSummary:
    """``per_item``: each item's link sets in submission order and its pre-filled set.

    Over the items with at least two annotations: the share whose first two agree
    (``after_2``) and the share with a majority among their first three
    (``after_3``; an item whose first two agree counts, as it needed no third).
    Seen items confirmed by their single annotator are counted apart.
    """
    items = with_two = after_2 = after_3 = confirmed = 0
    for sets, prefilled in per_item:
        items += 1
        if len(sets) == 1 and prefilled is not None and sets[0] == prefilled:
            confirmed += 1
        if len(sets) < 2:
            continue
        with_two += 1
        if sets[0] == sets[1]:
            after_2 += 1
            after_3 += 1
        elif majority_set(sets[:3]) is not None:
            after_3 += 1
    return AgreementSummary(items, with_two, after_2, after_3, confirmed)


@dataclass(frozen=True)
class BonusRule:
    """``{"rule": "per_agreed_entity", "amount": "0.05", "beyond": 1}``: ``amount`` for
    each agreed entity (a link with a Wikidata id) beyond the first ``beyond``."""

    amount: Decimal
    beyond: int = 1

    @classmethod
    def all_from_json(cls, rules: Any) -> list[BonusRule]:
        out = []
        for rule in rules if isinstance(rules, list) else []:
            if isinstance(rule, Mapping) and rule.get("rule") == BONUS_RULE:
                out.append(cls(Decimal(str(rule["amount"])), int(rule.get("beyond", 1))))
        return out

    def amount_for(self, agreed: LinkSet) -> Decimal:
        entities = sum(1 for _, _, qid in agreed if qid != NIL)
        return self.amount * max(0, entities - self.beyond)


def escalation_rule_validate(rule: Any) -> list[str]:
    """Problems with an ``entity_agreement`` escalation rule (others are not checked here)."""
    if not isinstance(rule, Mapping) or rule.get("rule") != ESCALATION_RULE:
        return []
    errors = []
    known = {"rule", "annotators", "max", "seen_annotators"}
    errors += [
        f"escalation_rule (entity_agreement): unknown parameter {k!r}"
        for k in rule
        if k not in known
    ]
    for key in ("annotators", "max", "seen_annotators"):
        value = rule.get(key)
        if value is not None and (
            not isinstance(value, int) or isinstance(value, bool) or value < 1
        ):
            errors.append(f"escalation_rule (entity_agreement): {key} must be a whole number >= 1")
    if not errors and int(rule.get("max", DEFAULT_MAX_ANNOTATORS)) < int(
        rule.get("annotators", DEFAULT_ANNOTATORS)
    ):
        errors.append("escalation_rule (entity_agreement): max cannot be below annotators")
    return errors


def bonus_rules_validate(rules: list[Any]) -> list[str]:
    """Problems with the ``per_agreed_entity`` entries of a stage's ``bonus_rules``."""
    errors = []
    for n, rule in enumerate(rules):
        if not isinstance(rule, Mapping) or rule.get("rule") != BONUS_RULE:
            continue
        at = f"bonus_rules[{n}] ({BONUS_RULE})"
        errors += [
            f"{at}: unknown parameter {k!r}" for k in rule if k not in {"rule", "amount", "beyond"}
        ]
        try:
            amount = Decimal(str(rule.get("amount")))
            if not amount.is_finite() or amount <= 0:
                raise ValueError
        except (ArithmeticError, ValueError):
            errors.append(f'{at}: amount must be a positive decimal such as "0.05"')
        beyond = rule.get("beyond", 1)
        if not isinstance(beyond, int) or isinstance(beyond, bool) or beyond < 0:
            errors.append(f"{at}: beyond must be a whole number >= 0")
    return errors
