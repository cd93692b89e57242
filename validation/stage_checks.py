"""Validation's rule checks for stage settings (registered in ``ValidationConfig.ready()``)."""

from __future__ import annotations

from campaigns.design.stage_rules import RuleChecks
from validation import rules

CHECKS = RuleChecks(
    owner="validation",
    bonus_rules=None,  # every bonus rule linking does not own
    escalation_rules=frozenset({"early_stop"}),
    review_rules_validate=rules.review_rules_validate,
    bonus_rules_validate=rules.bonus_rules_validate,
    escalation_rule_validate=rules.escalation_rule_validate,
)
