"""Checks of a stage's rule settings, each by the room that runs the rule.

The rooms that run rules (validation: review rules, early stopping, gold bonuses;
linking: entity agreement, bonus per agreed entity) register a ``RuleChecks`` in
their ``AppConfig.ready()``; design asks them all, never importing them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from campaigns.models import Stage

Check = Callable[[Any], list[str]]


@dataclass(frozen=True)
class ParamCheck:
    """One rule parameter's check, with what a form needs to ask for it: ``kind``
    ("number", "integer", "boolean", "choice", "names", "list", "money",
    "qualification" or "text"), the ``options`` of a choice and the bounds of a number.
    Called like the check it wraps (a problem in words, or None)."""

    fn: Callable[[Any], str | None]
    kind: str
    options: tuple[Any, ...] = ()
    minimum: float | None = None
    maximum: float | None = None

    def __call__(self, value: Any) -> str | None:
        return self.fn(value)


# rule name -> {parameter: (check, default)}; a default of None means required (or,
# for a "qualification", none).
RuleParams = Mapping[str, Mapping[str, tuple[Callable[[Any], str | None], Any]]]


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
    # The rules this room runs and their parameters, for forms (``stage_rule_kinds``).
    review_rule_params: RuleParams = field(default_factory=dict)
    bonus_rule_params: RuleParams = field(default_factory=dict)
    escalation_rule_params: RuleParams = field(default_factory=dict)
    # What each of these rules does, in one sentence, by rule name.
    rule_help: Mapping[str, str] = field(default_factory=dict)


_CHECKS: dict[str, RuleChecks] = {}


def stage_rule_checks_register(checks: RuleChecks) -> None:
    """Register (or replace) ``checks.owner``'s rule checks (at start-up)."""
    _CHECKS[checks.owner] = checks


RULE_SETTINGS = ("review_rules", "bonus_rules", "escalation_rule")


def stage_rule_kinds(setting: str) -> dict[str, Mapping[str, tuple[Any, Any]]]:
    """Every rule the registered rooms run for ``setting`` ("review_rules",
    "bonus_rules" or "escalation_rule"), by name, with its parameters."""
    attribute = {
        "review_rules": "review_rule_params",
        "bonus_rules": "bonus_rule_params",
        "escalation_rule": "escalation_rule_params",
    }[setting]
    kinds: dict[str, Mapping[str, tuple[Any, Any]]] = {}
    for checks in _CHECKS.values():
        kinds.update(getattr(checks, attribute))
    return kinds


def stage_rule_help(rule: str) -> str:
    """What ``rule`` does, in a sentence ("" when no room says)."""
    for checks in _CHECKS.values():
        if rule in checks.rule_help:
            return checks.rule_help[rule]
    return ""


def _every_room(check: Callable[[RuleChecks], Check | None], value: Any) -> list[str]:
    """The problems every registered room that has ``check`` finds in ``value``."""
    return [p for c in _CHECKS.values() if (fn := check(c)) is not None for p in fn(value)]


def stage_rules_problems(
    *, review_rules: Any, bonus_rules: Any, escalation_rule: Any
) -> dict[str, list[str]]:
    """Problems by field (only fields with problems appear)."""
    problems: dict[str, list[str]] = {}
    review = _every_room(lambda c: c.review_rules_validate, review_rules)
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
            escalation = _every_room(lambda c: c.escalation_rule_validate, escalation_rule)
            if escalation:
                problems["escalation_rule"] = escalation
    return problems


def stage_auto_approves(stage: Stage) -> bool:
    """True when the stage's review rules hold ``{"rule": "auto_approve"}``."""
    return any(
        isinstance(rule, Mapping) and rule.get("rule") == "auto_approve"
        for rule in stage.review_rules or []
    )
