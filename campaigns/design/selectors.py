"""Reads. Visibility rule: a campaign is visible to its owner, its collaborators and staff."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from campaigns.models import HIT, Assignment, Campaign, Item, Stage


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
    return Stage.objects.filter(campaign__in=campaign_list_visible(user=user)).select_related(
        "campaign"
    )


def item_list_visible(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[Item]:
    return Item.objects.filter(stage__in=stage_list_visible(user=user))


def stage_list_with_counts(*, campaign: Campaign) -> QuerySet[Stage]:
    """The campaign's stages in order, with item, HIT and assignment counts.

    One correlated subquery per count: a join over items x HITs x assignments
    would multiply rows on large stages.
    """
    return stages_with_counts(campaign.stages.all()).order_by("position")


def _count(model: type, **filters: object) -> Coalesce:
    sub = (
        model.objects.filter(**filters)  # type: ignore[attr-defined]
        .order_by()
        .values(*filters.keys())
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(sub, output_field=IntegerField()), 0)


def stages_with_counts(stages: QuerySet[Stage]) -> QuerySet[Stage]:
    """``stages`` annotated with ``item_count``, ``hit_count`` and ``assignment_count``."""
    return stages.annotate(
        item_count=_count(Item, stage=OuterRef("pk")),
        hit_count=_count(HIT, stage=OuterRef("pk")),
        assignment_count=_count(Assignment, hit__stage=OuterRef("pk")),
    )
