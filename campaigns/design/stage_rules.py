"""Checks of a stage's rule settings, each by the app that runs the rule.

``review_rules`` and ``early_stop`` belong to validation/, ``entity_agreement``
and ``per_agreed_entity`` to linking/, ``gold_bonus`` to validation/.
"""

from __future__ import annotations

from typing import Any

from linking import agreement as linking_rules

LINKING_BONUS_RULES = frozenset({linking_rules.BONUS_RULE})
ESCALATION_RULES = frozenset({"early_stop", linking_rules.ESCALATION_RULE})


def stage_rules_problems(
    *, review_rules: Any, bonus_rules: Any, escalation_rule: Any
) -> dict[str, list[str]]:
    """Problems by field (only fields with problems appear)."""
    # Imported here: validation.rules loads ROUGE and NLTK (seconds), needed only now.
    from validation import rules as validation_rules

    problems: dict[str, list[str]] = {}
    review = validation_rules.review_rules_validate(review_rules)
    if review:
        problems["review_rules"] = review
    if not isinstance(bonus_rules, list):
        problems["bonus_rules"] = ["bonus_rules must be a list of {'rule': name, ...} objects"]
    else:
        ours = [
            r for r in bonus_rules if isinstance(r, dict) and r.get("rule") in LINKING_BONUS_RULES
        ]
        theirs = [r for r in bonus_rules if r not in ours]
        bonus = linking_rules.bonus_rules_validate(bonus_rules)
        bonus += validation_rules.bonus_rules_validate(theirs) if theirs else []
        if bonus:
            problems["bonus_rules"] = bonus
    if escalation_rule:
        if (
            not isinstance(escalation_rule, dict)
            or escalation_rule.get("rule") not in ESCALATION_RULES
        ):
            problems["escalation_rule"] = [
                "escalation_rule must be {} or a rule named one of: "
                + ", ".join(sorted(ESCALATION_RULES))
            ]
        else:
            escalation = validation_rules.escalation_rule_validate(escalation_rule)
            escalation += linking_rules.escalation_rule_validate(escalation_rule)
            if escalation:
                problems["escalation_rule"] = escalation
    return problems
