"""Entity agreement as pure functions over plain data (no database).

Two annotations of an item agree when they select the same set of (span, id)
pairs; "not in Wikidata" (NIL) is an id of its own. Links on value spans (dates,
numbers, ordinals, ...: not entities to link, their values come from the spans)
do not count. The decision rule, Mintaka's "2 annotators, a 3rd on disagreement",
works per entity as §4.3 does, in two parts of each item:

- the *seen* entities (links overlapping a span pre-filled from a link agreed
  elsewhere in the campaign) are decided by their first annotation when it keeps
  the pre-filled links (``seen_annotators``, one); when it changes them, they
  need ``annotators`` like any other, the pre-filled set counting as one more vote;
  what later annotators (asked for the new entities) say of them is not asked for
  and does not count against that first annotation;
- the *new* entities (every other link) need one link set given by at least two
  annotators and by more than half of them; an item with no new entity span (a
  *seen* item) has none unless an annotator adds one;
- while a part is undecided one more annotator is asked for, up to ``max``; past
  it, the item goes to the requester's review queue.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Any

from campaigns.design.stage_rules import ParamCheck

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


Span = tuple[int, int]


def entity_links(links: LinkSet, *, values: Collection[Span] = ()) -> LinkSet:
    """``links`` without those on a value span (``values``: ``(start, end)`` pairs)."""
    return frozenset(k for k in links if (k[0], k[1]) not in values) if values else links


def _overlaps(key: LinkKey, spans: Sequence[Span]) -> bool:
    return any(key[0] < end and start < key[1] for start, end in spans)


def _part_decide(
    sets: Sequence[LinkSet], *, rule: EscalationRule, prefilled: LinkSet | None
) -> tuple[LinkSet | None, int]:
    """One part of an item (its seen entities with their ``prefilled`` set, or its new
    ones with None): the agreed set, or None and the annotators wanted in all."""
    n = len(sets)
    first = rule.seen_annotators
    if prefilled is not None and n >= first and all(s == prefilled for s in sets[:first]):
        return prefilled, 0
    agreed = majority_set(sets)
    if agreed is None and prefilled is not None and n >= 2:
        # The earlier agreement counts as one more vote once the first annotator
        # changed the pre-filled links: [changed, kept] resolves to the kept ones.
        agreed = majority_set([*sets, prefilled])
    if agreed is not None:
        return agreed, 0
    needed = first if prefilled is not None else rule.annotators
    if n >= needed:
        needed = n + 1 if n >= rule.annotators else rule.annotators
    return None, needed


def item_decide(
    *,
    sets: Sequence[LinkSet],
    rule: EscalationRule,
    prefilled: LinkSet | None,
    seen: bool | None = None,
    values: Collection[Span] = (),
) -> ItemDecision:
    """What to do with one item given its annotators' link sets, in submission order.

    ``prefilled``: the item's pre-filled links (its seen entities; None or empty: none).
    ``seen``: whether the item has no new entity span (every one pre-filled or
    overlapping a pre-filled one); by default, whether ``prefilled`` is given.
    ``values``: the item's value spans, whose links do not count.
    """
    if seen is None:
        seen = prefilled is not None
    known = prefilled or frozenset()
    sets = [entity_links(s, values=values) for s in sets]
    regions = [(start, end) for start, end, _ in known]
    seen_parts = [frozenset(k for k in s if _overlaps(k, regions)) for s in sets]
    new_parts = [s - part for s, part in zip(sets, seen_parts, strict=True)]
    parts = []
    if known:
        parts.append(_part_decide(seen_parts, rule=rule, prefilled=known))
    if not seen or any(new_parts):
        parts.append(_part_decide(new_parts, rule=rule, prefilled=None))
    n = len(sets)
    needed = max((wanted for agreed, wanted in parts if agreed is None), default=0)
    if seen and n < rule.seen_annotators:
        needed = max(needed, rule.seen_annotators)
    if needed > rule.max:
        return ItemDecision(Verdict.REVIEW)
    if needed:
        return ItemDecision(Verdict.MORE, needed=needed)
    links = frozenset().union(*(agreed for agreed, _ in parts if agreed is not None))
    source = "seen_confirmed" if n < rule.annotators else "agreement"
    return ItemDecision(Verdict.RESOLVED, links=links, source=source)


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


def _whole_from(lowest: int) -> ParamCheck:
    def check(value: Any) -> str | None:
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= lowest
        return None if ok else f"must be a whole number >= {lowest}"

    return ParamCheck(check, "integer", minimum=lowest)


def _positive_amount(value: Any) -> str | None:
    try:
        amount = Decimal(str(value))
    except ArithmeticError:
        return 'must be a positive decimal such as "0.05"'
    ok = amount.is_finite() and amount > 0 and not isinstance(value, bool)
    return None if ok else 'must be a positive decimal such as "0.05"'


# The parameters of linking's rules with their defaults, for the stage form (the checks
# below are what saving runs).
ESCALATION_PARAMS = {
    ESCALATION_RULE: {
        "annotators": (_whole_from(1), DEFAULT_ANNOTATORS),
        "max": (_whole_from(1), DEFAULT_MAX_ANNOTATORS),
        "seen_annotators": (_whole_from(1), DEFAULT_SEEN_ANNOTATORS),
    }
}
BONUS_PARAMS = {
    BONUS_RULE: {
        "amount": (ParamCheck(_positive_amount, "money"), None),
        "beyond": (_whole_from(0), 1),
    }
}
RULE_HELP = {
    ESCALATION_RULE: "Ask annotators per item; while they disagree on the entities, add "
    "one more, up to max (seen_annotators for spans already linked elsewhere).",
    BONUS_RULE: "Pay amount for each agreed entity beyond the first beyond.",
}


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
