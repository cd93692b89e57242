"""Checks of a stage's rule settings, each by the room that runs the rule.

The rooms that run rules (validation: review rules, early stopping, gold bonuses;
linking: entity agreement, bonus per agreed entity) register a ``RuleChecks`` in
their ``AppConfig.ready()``; design asks them all, never importing them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from campaigns.models import Stage

Check = Callable[[Any], list[str]]


@dataclass(frozen=True)
class RuleChecks:
    """What one room checks. ``bonus_rules`` names the bonus rules it owns (None: all
    the others); ``escalation_rules`` the escalation rules it runs."""

    owner: str
    bonus_rules: frozenset[str] | None
    escalation_rules: frozenset[str]
    review_rules_validate: Check | None = None
    bonus_rules_validate: Check | None = None
    escalation_rule_validate: Check | None = None


_CHECKS: dict[str, RuleChecks] = {}


def stage_rule_checks_register(checks: RuleChecks) -> None:
    """Register (or replace) ``checks.owner``'s rule checks (at start-up)."""
    _CHECKS[checks.owner] = checks


def stage_rules_problems(
    *, review_rules: Any, bonus_rules: Any, escalation_rule: Any
) -> dict[str, list[str]]:
    """Problems by field (only fields with problems appear)."""
    problems: dict[str, list[str]] = {}
    review = [
        p
        for c in _CHECKS.values()
        if c.review_rules_validate is not None
        for p in c.review_rules_validate(review_rules)
    ]
    if review:
        problems["review_rules"] = review
    if not isinstance(bonus_rules, list):
        problems["bonus_rules"] = ["bonus_rules must be a list of {'rule': name, ...} objects"]
    else:
        named = frozenset(n for c in _CHECKS.values() for n in c.bonus_rules or ())
        bonus: list[str] = []
        for c in _CHECKS.values():
            if c.bonus_rules_validate is None:
                continue
            if c.bonus_rules is None:  # the rest
                rest = [
                    r for r in bonus_rules if not (isinstance(r, dict) and r.get("rule") in named)
                ]
                bonus += c.bonus_rules_validate(rest) if rest else []
            else:
                bonus += c.bonus_rules_validate(bonus_rules)
        if bonus:
            problems["bonus_rules"] = bonus
    if escalation_rule:
        known = frozenset(n for c in _CHECKS.values() for n in c.escalation_rules)
        if not isinstance(escalation_rule, dict) or escalation_rule.get("rule") not in known:
            problems["escalation_rule"] = [
                "escalation_rule must be {} or a rule named one of: " + ", ".join(sorted(known))
            ]
        else:
            escalation = [
                p
                for c in _CHECKS.values()
                if c.escalation_rule_validate is not None
                for p in c.escalation_rule_validate(escalation_rule)
            ]
            if escalation:
                problems["escalation_rule"] = escalation
    return problems


def stage_auto_approves(stage: Stage) -> bool:
    """True when the stage's review rules hold ``{"rule": "auto_approve"}``."""
    return any(
        isinstance(rule, Mapping) and rule.get("rule") == "auto_approve"
        for rule in stage.review_rules or []
    )
