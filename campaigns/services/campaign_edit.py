"""Editing a campaign's settings and collaborators, and deleting drafts."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import ProtectedError

from campaigns.models import Campaign, CampaignState
from campaigns.services.campaigns import check_campaign_name_free
from campaigns.services.errors import DomainError, StateConflict

CampaignStateConflictError = StateConflict


CAMPAIGN_EDITABLE_FIELDS = frozenset(
    {"name", "description", "budget_cap", "sandbox", "collaborators"}
)


def campaign_can_manage(*, campaign: Campaign, user: AbstractBaseUser | AnonymousUser) -> bool:
    """Whether ``user`` may change who works on ``campaign`` and delete it: owner or staff.

    Collaborators can do everything else a visible campaign allows; sharing and
    removal stay with the owner so a collaborator cannot lock the owner out.
    """
    if not user.is_authenticated:
        return False
    return bool(getattr(user, "is_staff", False)) or campaign.owner_id == user.pk


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
    """Change name, description, budget cap, sandbox flag or collaborators (usernames).

    Raises ``PermissionDenied`` when a non-manager changes collaborators, and
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
    if "collaborators" in changes and not campaign_can_manage(campaign=campaign, user=actor):
        raise PermissionDenied("Only the owner can change the collaborators of a campaign.")
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
