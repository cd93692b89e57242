"""HIT reads for the API: a campaign's HITs with their counts, one HIT, visibility."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from campaigns.design.selectors import campaign_list_visible
from campaigns.models import HIT, Assignment, AssignmentStatus, Campaign, HITItem


def _per_hit(model: type, **filters: object) -> Coalesce:
    sub = (
        model.objects.filter(hit=OuterRef("pk"), **filters)  # type: ignore[attr-defined]
        .order_by()
        .values("hit")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(sub, output_field=IntegerField()), 0)


def hits_with_counts(hits: QuerySet[HIT]) -> QuerySet[HIT]:
    """``hits`` with ``item_count``, ``assignment_count``, ``submitted_count`` (awaiting a
    decision) and ``approved_count``: one correlated subquery each, no join blow-up."""
    return hits.select_related("stage").annotate(
        item_count=_per_hit(HITItem),
        assignment_count=_per_hit(Assignment),
        submitted_count=_per_hit(Assignment, status=AssignmentStatus.SUBMITTED),
        approved_count=_per_hit(Assignment, status=AssignmentStatus.APPROVED),
    )


def hit_list_for_campaign(*, campaign: Campaign) -> QuerySet[HIT]:
    """The campaign's HITs with their counts, newest first."""
    return hits_with_counts(HIT.objects.filter(stage__campaign=campaign)).order_by(
        "-created_at", "-id"
    )


def hit_list_visible(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[HIT]:
    """HITs of the campaigns ``user`` may see, with their counts."""
    return hits_with_counts(
        HIT.objects.filter(Q(stage__campaign__in=campaign_list_visible(user=user)))
    )
