"""Reads for the requester's side of the local workforce: review queue, grants, telemetry.

Visibility follows ``campaigns.design.selectors``: what belongs to a campaign the user
may not see is filtered out, so callers answer 404 for it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import connections, transaction
from django.db.models import F, QuerySet, Sum

from campaigns.design.selectors import campaign_list_visible
from campaigns.models import (
    Assignment,
    AssignmentStatus,
    Campaign,
    HITItem,
    InviteLink,
    LocalGrant,
    Stage,
    StageAssignmentCount,
)
from campaigns.work.selectors.counts import stage_assignment_counts, stage_worker_counts


def assignment_list_visible(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[Assignment]:
    """Assignments of the campaigns ``user`` may see."""
    return Assignment.objects.filter(hit__stage__campaign__in=campaign_list_visible(user=user))


def invite_list_visible(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[InviteLink]:
    """Invite links of the campaigns ``user`` may see."""
    return InviteLink.objects.filter(campaign__in=campaign_list_visible(user=user))


def assignment_list_for_campaign(
    *,
    campaign: Campaign,
    status: str | None = None,
    stage: Stage | None = None,
    stage_ids: list[int] | None = None,
) -> QuerySet[Assignment]:
    """The campaign's assignments (optionally one status, one stage), oldest submission first.

    Unsubmitted ones come last, in id order. Worker, stage and decider are joined in.
    Filtered by the campaign's stage ids as constants, so that PostgreSQL's statistics
    of the HITs per stage tell a large campaign (read the queue's index in order and
    stop at the page) from a small one beside it (read its few HITs' assignments).
    ``stage_ids``: the campaign's, when the caller has them (one query less).
    """
    stage_ids = _stage_ids(campaign, stage, stage_ids)
    qs = Assignment.objects.filter(hit__stage_id__in=stage_ids)
    if status:
        qs = qs.filter(status=status)
    return qs.select_related("worker", "hit__stage", "decided_by").order_by(
        F("submitted_at").asc(nulls_last=True), "id"
    )


# A campaign holding at least this share of the site's review queue (or a queue of
# QUEUE_WALK_ALWAYS) reads its first page by walking the queue's index in submission
# order (at most 25 / share entries); a smaller one reads its own HITs' submitted work
# and sorts it. PostgreSQL cannot tell the two apart from its statistics alone (a small
# campaign's stages look like the average stage), so the counters decide.
QUEUE_WALK_SHARE = 0.005
QUEUE_WALK_ALWAYS = 50_000


def assignment_review_queue(
    *,
    campaign: Campaign,
    stage: Stage | None = None,
    stage_ids: list[int] | None = None,
    size: int | None = None,
) -> QuerySet[Assignment]:
    """Submitted assignments awaiting a decision, oldest submission first. ``stage_ids``
    (the campaign's) and ``size`` (``review_queue_size``'s) when the caller has them."""
    stage_ids = _stage_ids(campaign, stage, stage_ids)
    queue = assignment_list_for_campaign(
        campaign=campaign, status=AssignmentStatus.SUBMITTED, stage=stage, stage_ids=stage_ids
    )
    if size is None:
        size = review_queue_size(
            campaign=campaign, status=AssignmentStatus.SUBMITTED, stage=stage, stage_ids=stage_ids
        )
    if size >= QUEUE_WALK_ALWAYS:
        return queue
    site = (
        StageAssignmentCount.objects.filter(status=AssignmentStatus.SUBMITTED).aggregate(
            n=Sum("n")
        )["n"]
        or 0
    )
    if size >= site * QUEUE_WALK_SHARE:
        return queue
    # The same order (a submitted assignment always has its submission time), written
    # so that the queue's index (submitted_at ASC NULLS LAST) cannot serve it.
    return queue.order_by(F("submitted_at").asc(nulls_first=True), "id")


def queue_page(queryset: QuerySet[Assignment]) -> list[Assignment]:
    """A page of a review queue (``queryset`` already cut), read without parallel workers
    and without JIT on PostgreSQL: a small campaign's queue is planned as if its stages
    held the average stage's HITs, and launching two workers (or compiling the plan) for
    its few hundred rows cost 20 to 25 ms quiet, far more under load, against ~2 ms for the
    read itself. A big campaign's queue walks its index in order and used neither."""
    connection = connections[queryset.db]
    if connection.vendor != "postgresql":
        return list(queryset)
    with transaction.atomic(using=queryset.db), connection.cursor() as cursor:
        cursor.execute("SET LOCAL max_parallel_workers_per_gather = 0")
        cursor.execute("SET LOCAL jit = off")  # the same misestimate would compile it
        return list(queryset)


def review_queue_size(
    *,
    campaign: Campaign,
    status: str,
    stage: Stage | None = None,
    stage_ids: list[int] | None = None,
) -> int:
    """How many of the campaign's assignments (one stage's, when given) are in ``status``:
    the length of the queue ``assignment_list_for_campaign`` gives for it, read from the
    counters the database keeps (a few rows, however long the queue)."""
    stage_ids = _stage_ids(campaign, stage, stage_ids)
    counts = stage_assignment_counts(stage_ids=stage_ids)
    return sum(by_status.get(status, 0) for by_status in counts.values())


def hit_items_by_hit(*, hit_ids: Iterable[int]) -> dict[int, list[dict[str, Any]]]:
    """The items of several HITs in one query: ``{hit_id: [{"id", "external_id", "data"}]}``.

    The shape is that of ``selectors_work.hit_items``, for a page of assignments.
    """
    rows = (
        HITItem.objects.filter(hit_id__in=set(hit_ids))
        .order_by("hit_id", "position")
        .values("hit_id", "item_id", "item__external_id", "item__data")
    )
    out: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        out[r["hit_id"]].append(
            {"id": r["item_id"], "external_id": r["item__external_id"], "data": r["item__data"]}
        )
    return dict(out)


def worker_history_in_campaign(
    *, campaign: Campaign, worker_ids: Iterable[int], stage_ids: list[int] | None = None
) -> dict[int, dict[str, int]]:
    """Each worker's assignments in ``campaign`` counted by status:
    ``{worker_id: {"submitted": 3, "approved": 10, ...}}`` (what the review queue shows
    beside each submission). From the per-worker counters the database keeps
    (``stage_worker_counts``: a few rows per worker and stage on PostgreSQL, whatever
    their work; a count of their assignments on SQLite)."""
    stage_ids = _stage_ids(campaign, None, stage_ids)
    return stage_worker_counts(stage_ids=stage_ids, worker_ids=worker_ids)


def _stage_ids(campaign: Campaign, stage: Stage | None, given: list[int] | None) -> list[int]:
    """``stage``'s id, else ``given`` (the campaign's, as the caller read them), else the
    campaign's read here."""
    if stage is not None:
        return [stage.pk]
    if given is not None:
        return list(given)
    return list(campaign.stages.values_list("pk", flat=True))


def local_grant_list(*, campaign: Campaign) -> QuerySet[LocalGrant]:
    """The campaign's grants to logged-in annotators, by username."""
    return campaign.local_grants.select_related("user", "granted_by").order_by("user__username")


def telemetry_summary(telemetry: Any) -> dict[str, int | None]:
    """The page telemetry a reviewer looks at first, from a stored (sanitised) record.

    ``keystrokes``, ``paste_count``, ``pasted_chars`` (total length pasted),
    ``focus_losses``, ``visibility_changes``; None where the page sent nothing
    (no JavaScript, or an older page).
    """
    data: Mapping[str, Any] = telemetry if isinstance(telemetry, Mapping) else {}

    def number(key: str) -> int | None:
        value = data.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    pastes = data.get("pastes")
    pasted_chars: int | None = None
    if isinstance(pastes, list):
        pasted_chars = sum(
            p["length"]
            for p in pastes
            if isinstance(p, Mapping) and isinstance(p.get("length"), int)
        )
    paste_count = number("paste_count")
    if paste_count is None and isinstance(pastes, list):
        paste_count = len(pastes)
    return {
        "keystrokes": number("keystrokes"),
        "paste_count": paste_count,
        "pasted_chars": pasted_chars,
        "focus_losses": number("focus_losses"),
        "visibility_changes": number("visibility_changes"),
    }
