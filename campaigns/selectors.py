"""Reads. Visibility rule: a campaign is visible to its owner, its collaborators and staff."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, Q, QuerySet

from campaigns.models import Campaign, Item, Stage


def campaign_list_visible(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[Campaign]:
    """Campaigns ``user`` may see, newest first."""
    if not user.is_authenticated:
        return Campaign.objects.none()
    qs = Campaign.objects.select_related("owner")
    if getattr(user, "is_staff", False):
        return qs
    return qs.filter(Q(owner=user) | Q(collaborators=user)).distinct()


def campaign_get_visible(*, user: AbstractBaseUser | AnonymousUser, slug: str) -> Campaign:
    """The campaign ``slug`` if ``user`` may see it; ``Campaign.DoesNotExist`` otherwise."""
    return campaign_list_visible(user=user).get(slug=slug)


def stage_list_visible(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[Stage]:
    return Stage.objects.filter(campaign__in=campaign_list_visible(user=user)).select_related("campaign")


def item_list_visible(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[Item]:
    return Item.objects.filter(stage__in=stage_list_visible(user=user))


def stage_list_with_counts(*, campaign: Campaign) -> QuerySet[Stage]:
    """The campaign's stages in order, with item, HIT and assignment counts."""
    return campaign.stages.annotate(
        item_count=Count("items", distinct=True),
        hit_count=Count("hits", distinct=True),
        assignment_count=Count("hits__assignments", distinct=True),
    ).order_by("position")
