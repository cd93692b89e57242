"""A stage against its platform's rules, for pages and the API: how each requirement is
applied there (and which cannot be), and the reward's hourly rate against the minimum.

Reads only. The rules are the platform's own (``Platform.rules()``);
nothing here names a platform.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from campaigns.design.platform import platform_for
from campaigns.models import Stage
from campaigns.workforce.requirements import stage_requirements
from qaportal.errors import DomainError


def stage_platform_rules(*, stage: Stage) -> dict[str, Any]:
    """``{"requirements": [{requirement, filter, note, refused}], "pay": {...},
    "problems": [...]}`` for ``stage`` on its campaign's platform. ``problems`` lists
    what publishing would refuse (an empty list: nothing)."""
    campaign = stage.campaign
    rules = platform_for(campaign.provider).rules()
    try:
        requirements = stage_requirements(stage=stage)
    except DomainError as exc:
        return {
            "platform": rules.name,
            "explained": False,
            "requirements": [],
            "pay": None,
            "problems": [str(exc)],
        }
    notes = [n.as_dict() for n in rules.requirement_notes(requirements)]
    pay = rules.pay_check(
        reward=Decimal(stage.reward),
        currency=campaign.currency,
        config=stage.config,
        assignment_duration=stage.assignment_duration,
    )
    problems = [n["refused"] for n in notes if n["refused"]]
    if pay.problem:
        problems.append(pay.problem)
    return {
        "platform": rules.name,
        # Anything the platform does differently from what the requirements say.
        "explained": any(n["filter"] or n["note"] or n["refused"] for n in notes),
        "requirements": notes,
        "pay": {
            "currency": pay.currency,
            "reward": str(pay.reward),
            "estimated_minutes": pay.estimated_minutes,
            "hourly_rate": None if pay.hourly_rate is None else str(pay.hourly_rate),
            "minimum_hourly": None if pay.minimum_hourly is None else str(pay.minimum_hourly),
        },
        "problems": problems,
        # What the stage page offers by name (countries on Prolific), {} when nothing.
        "choices": rules.requirement_choices(),
    }
