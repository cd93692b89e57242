"""Who may do what only the owner may: manage sharing, and change the money settings.

A collaborator designs, publishes and reviews; the owner (or staff) alone decides whose
money a campaign spends and how much: the budget cap, the bonus ceiling, the sandbox
flag (real money or not), the platform's credentials, and a stage's wage floor (a bonus
rule that tops up every approved assignment). The currency and the platform are chosen
when the campaign is created and never change afterwards.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied

from campaigns.models import Campaign

# Campaign fields only the owner may change (``design.access.campaign_update``).
CAMPAIGN_MONEY_FIELDS = frozenset({"budget_cap", "bonus_max", "sandbox"})
# Bonus rules only the owner may add, change or remove on a stage.
OWNER_BONUS_RULES = frozenset({"wage_floor"})


def campaign_can_manage(*, campaign: Campaign, user: AbstractBaseUser | AnonymousUser) -> bool:
    """Whether ``user`` may change who works on ``campaign``, its money settings, and
    delete it: owner or staff.

    Collaborators can do everything else a visible campaign allows; sharing, removal and
    money stay with the owner so a collaborator cannot lock the owner out or spend past
    the owner's guards.
    """
    if not user.is_authenticated:
        return False
    return bool(getattr(user, "is_staff", False)) or campaign.owner_id == user.pk


def _owner_rules(rules: Any) -> list[Any]:
    if not isinstance(rules, list):
        return []
    return [r for r in rules if isinstance(r, dict) and r.get("rule") in OWNER_BONUS_RULES]


def check_stage_money_rules(
    *,
    campaign: Campaign,
    actor: AbstractBaseUser | AnonymousUser | None,
    before: Any,
    after: Any,
) -> None:
    """Refuse (``PermissionDenied``) a non-owner's change to a stage's owner-only bonus
    rules (the wage floor). ``actor=None`` is the system itself (recipes, clones,
    commands): always allowed."""
    if actor is None or campaign_can_manage(campaign=campaign, user=actor):
        return
    if _owner_rules(before) != _owner_rules(after):
        raise PermissionDenied("Only the campaign's owner can set or change a wage floor.")
