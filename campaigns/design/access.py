"""Editing a campaign's settings and collaborators, and deleting drafts.

``campaign_can_manage`` lives in ``design.owners`` (with the money settings only the owner
changes) and is re-exported here.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import ProtectedError

from campaigns.design.owners import CAMPAIGN_MONEY_FIELDS, campaign_can_manage
from campaigns.design.services import check_campaign_name_free
from campaigns.models import Campaign, CampaignState
from qaportal.errors import DomainError, StateConflict

CampaignStateConflictError = StateConflict

__all__ = ["campaign_can_manage", "campaign_delete", "campaign_update"]


CAMPAIGN_EDITABLE_FIELDS = frozenset(
    {"name", "description", "budget_cap", "bonus_max", "sandbox", "collaborators"}
)


def _resolve_collaborators(*, campaign: Campaign, usernames: list[str]) -> list[Any]:
    wanted = list(dict.fromkeys(usernames))
    users = list(get_user_model().objects.filter(username__in=wanted))
    found = {u.get_username() for u in users}
    missing = [name for name in wanted if name not in found]
    if missing:
        raise DomainError(
            f"Unknown users: {', '.join(missing)}.",
            errors={"collaborators": [f"unknown user {name!r}" for name in missing]},
        )
    if any(u.pk == campaign.owner_id for u in users):
        raise DomainError(
            "The owner cannot also be a collaborator.",
            errors={"collaborators": ["the owner is not a collaborator"]},
        )
    return users


def campaign_update(
    *, campaign: Campaign, actor: AbstractBaseUser | AnonymousUser, **changes: Any
) -> Campaign:
    """Change name, description, budget cap, bonus ceiling, sandbox flag or collaborators
    (usernames).

    Raises ``PermissionDenied`` when a non-manager changes collaborators or a money
    setting (``design.owners.CAMPAIGN_MONEY_FIELDS``), and
    ``CampaignStateConflictError`` when the sandbox flag changes after the draft
    state: work published in one environment cannot follow the flag to the other.
    Locks the campaign row so the state check and the write see the same state.
    """
    unknown = set(changes) - CAMPAIGN_EDITABLE_FIELDS
    if unknown:
        raise DomainError(
            f"These campaign fields cannot be changed: {', '.join(sorted(unknown))}.",
            errors={f: ["read-only"] for f in sorted(unknown)},
        )
    manager = campaign_can_manage(campaign=campaign, user=actor)
    if "collaborators" in changes and not manager:
        raise PermissionDenied("Only the owner can change the collaborators of a campaign.")
    money = sorted(CAMPAIGN_MONEY_FIELDS & set(changes))
    if money and not manager:
        raise PermissionDenied(
            f"Only the campaign's owner can change its money settings ({', '.join(money)})."
        )
    budget_cap: Decimal | None = changes.get("budget_cap")
    if budget_cap is not None and budget_cap < 0:
        raise DomainError("The budget cap cannot be negative.", errors={"budget_cap": ["negative"]})

    with transaction.atomic():
        locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
        if (
            "sandbox" in changes
            and changes["sandbox"] != locked.sandbox
            and locked.state != CampaignState.DRAFT
        ):
            raise CampaignStateConflictError(
                f"The sandbox flag can only change while the campaign is a draft; "
                f"it is {locked.state!r}.",
                errors={"sandbox": ["only in draft"]},
            )
        if "name" in changes:
            check_campaign_name_free(owner=locked.owner, name=changes["name"], exclude_pk=locked.pk)
        fields = [f for f in changes if f != "collaborators"]
        for field in fields:
            setattr(locked, field, changes[field])
        if fields:
            locked.save(update_fields=[*fields, "updated_at"])
        if "collaborators" in changes:
            locked.collaborators.set(
                _resolve_collaborators(campaign=locked, usernames=changes["collaborators"])
            )
    return locked


def campaign_delete(*, campaign: Campaign, actor: AbstractBaseUser | AnonymousUser) -> None:
    """Delete a draft campaign with its stages and items; only its owner or staff may.

    A campaign that has started (or still holds ledger entries or provider
    operations from a pilot) keeps its history: ``CampaignStateConflictError``.
    """
    if not campaign_can_manage(campaign=campaign, user=actor):
        raise PermissionDenied("Only the owner can delete a campaign.")
    with transaction.atomic():
        locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
        if locked.state != CampaignState.DRAFT:
            raise CampaignStateConflictError(
                f"Only draft campaigns can be deleted; this one is {locked.state!r}. "
                "Complete it instead.",
                errors={"state": [locked.state]},
            )
        try:
            locked.delete()
        except ProtectedError as exc:
            raise CampaignStateConflictError(
                "The campaign has payments, provider operations or published work on record "
                "and cannot be deleted.",
            ) from exc
