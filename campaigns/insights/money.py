"""Money reads: the ledger summed by stage, kind and status, the forecast to completion,
the budget left, cost per accepted example and the effective hourly wage per stage.

Reads only; takes no locks. A constant number of GROUP BY queries per campaign,
whatever the number of entries, assignments or stages.

Definitions (docs/api.md, "Costs"):

- ``spent``: ledger entries ``paid``; ``committed``: entries ``committed`` (asked of the
  platform, not yet paid); ``planned``: entries ``planned`` (e.g. gold bonuses found but
  not yet requested). Cancelled entries count nowhere.
- ``held``: what the platform holds for work under way and not in the ledger yet: open
  places of published HITs and accepted or submitted assignments, at reward + fee
  (as ``payments.budget.campaign_spending`` counts them for the budget).
- ``forecast_remaining``: the cost estimate (``services.costs``) of the assignments not
  published yet: the stage's estimated assignments less the places of its HITs.
- ``forecast_total`` = spent + committed + planned + held + forecast_remaining.
- ``budget_used``: what the budget check counts (``payments.budget.campaign_spending``):
  committed and paid entries plus held work; ``budget_left`` = budget cap - that.
- ``cost_per_accepted``: (spent + committed) over approved assignments; for the campaign,
  over the approved assignments of its last stage (the accepted examples).
- ``hourly_wage``: the stage's reward over the median work time of its submitted work,
  per hour (``validation.selectors.hourly_wage``), marked under the wage floor.

On the local workforce qaportal moves no money: rewards are not in the ledger (only
the bonuses it records), so ``spent`` there is what was recorded, not salaries.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal

from django.conf import settings
from django.core.cache import cache
from django.db.models import DecimalField, QuerySet

from campaigns.design.platform import FeeModel, platform_for
from campaigns.models import (
    HANDED_IN,
    Assignment,
    AssignmentStatus,
    Campaign,
    HITStatus,
    LedgerEntry,
    LedgerKind,
    LedgerStatus,
)
from campaigns.payments.budget import spending_total
from campaigns.payments.costs import campaign_cost_estimate
from campaigns.payments.totals import ledger_stage_totals
from campaigns.work.selectors.counts import (
    HITCounts,
    stage_assignment_counts,
    stage_held_work,
    stage_hit_counts,
    stage_work_versions,
)
from campaigns.workforce.stats import medians_by
from qaportal.dbrouter import replica_reads
from qaportal.money import CENT
from validation.selectors import hourly_wage

MEDIANS_CACHE_SECONDS = 600

ZERO = Decimal("0.00")
COUNTED_STATUSES = (LedgerStatus.PLANNED, LedgerStatus.COMMITTED, LedgerStatus.PAID)
_MONEY = DecimalField(max_digits=14, decimal_places=2)


def wage_floor_default() -> Decimal:
    """The configured wage floor (``WAGE_FLOOR``, per hour)."""
    return Decimal(str(settings.WAGE_FLOOR))


def _sums() -> dict[str, dict[str, Decimal]]:
    return {kind: dict.fromkeys(COUNTED_STATUSES, ZERO) for kind in LedgerKind.values}


@dataclass
class StageCosts:
    stage_id: int | None  # None: ledger entries not tied to a stage
    stage_name: str
    by_kind: dict[str, dict[str, Decimal]] = field(default_factory=_sums)
    spent: Decimal = ZERO
    committed: Decimal = ZERO
    planned: Decimal = ZERO
    held: Decimal = ZERO
    estimated_assignments: int = 0
    published_places: int = 0
    remaining_assignments: int = 0
    forecast_remaining: Decimal = ZERO
    forecast_total: Decimal = ZERO
    approved: int = 0
    cost_per_accepted: Decimal | None = None
    reward: Decimal | None = None
    median_work_seconds: float | None = None
    hourly_wage: Decimal | None = None
    below_wage_floor: bool = False


@dataclass
class CampaignCosts:
    currency: str
    provider: str
    budget_cap: Decimal | None
    wage_floor: Decimal
    by_kind: dict[str, dict[str, Decimal]]
    spent: Decimal
    committed: Decimal
    planned: Decimal
    held: Decimal
    forecast_remaining: Decimal
    forecast_total: Decimal
    budget_used: Decimal
    budget_left: Decimal | None
    accepted_examples: int
    cost_per_accepted_example: Decimal | None
    stages: list[StageCosts]


def _per(total: Decimal, count: int) -> Decimal | None:
    return (total / count).quantize(CENT) if count else None


@replica_reads()
def campaign_costs(*, campaign: Campaign, wage_floor: Decimal | None = None) -> CampaignCosts:
    """The campaign's money, overall and per stage (see the module docstring).

    ``wage_floor`` defaults to the configured ``WAGE_FLOOR``. Reads only.
    """
    floor = wage_floor_default() if wage_floor is None else wage_floor
    stages = list(campaign.stages.order_by("position", "id"))
    rows: dict[int | None, StageCosts] = {s.pk: StageCosts(s.pk, s.name) for s in stages}
    totals = _sums()

    # The ledger's running totals (kept by its writer), not the entries.
    ledger = ledger_stage_totals(campaign_id=campaign.pk, statuses=COUNTED_STATUSES)
    for (stage_id, kind, status), amount in sorted(ledger.items(), key=repr):
        row = rows.get(stage_id)
        if row is None:
            row = rows[stage_id] = StageCosts(stage_id, "")
        row.by_kind[kind][status] += amount
        totals[kind][status] += amount

    for row in rows.values():
        row.spent = sum((k[LedgerStatus.PAID] for k in row.by_kind.values()), ZERO)
        row.committed = sum((k[LedgerStatus.COMMITTED] for k in row.by_kind.values()), ZERO)
        row.planned = sum((k[LedgerStatus.PLANNED] for k in row.by_kind.values()), ZERO)

    fee_model = platform_for(campaign).fee_model()
    hit_counts = stage_hit_counts(stage_ids=[s.pk for s in stages])
    held_rewards = _add_held(rows=rows, fee_model=fee_model, hit_counts=hit_counts)
    _add_counts_and_wages(campaign=campaign, rows=rows, floor=floor)

    estimate = {c.stage_id: c for c in campaign_cost_estimate(campaign=campaign).stages}
    places = {
        stage_id: sum(
            sums["places"] for status, sums in by_status.items() if status != HITStatus.PENDING
        )
        for stage_id, by_status in hit_counts.items()
    }
    for stage in stages:
        row = rows[stage.pk]
        cost = estimate[stage.pk]
        row.reward = stage.reward
        row.estimated_assignments = cost.assignments
        row.published_places = int(places.get(stage.pk, 0))
        row.remaining_assignments = max(0, cost.assignments - row.published_places)
        unit = cost.reward_per_assignment + cost.fee_per_assignment
        row.forecast_remaining = (row.remaining_assignments * unit).quantize(CENT)
    for row in rows.values():
        row.forecast_total = (
            row.spent + row.committed + row.planned + row.held + row.forecast_remaining
        )
        row.cost_per_accepted = _per(row.spent + row.committed, row.approved)

    ordered = [rows[s.pk] for s in stages] + [r for k, r in rows.items() if k not in estimate]
    spent = sum((r.spent for r in ordered), ZERO)
    committed = sum((r.committed for r in ordered), ZERO)
    accepted = rows[stages[-1].pk].approved if stages else 0
    # ``payments.budget.campaign_spending``'s formula, from the sums already made:
    # committed and paid entries, plus held rewards with one fee on their total.
    budget_used = spending_total(
        ledger=spent + committed, held_rewards=held_rewards, fee_model=fee_model
    )
    cap = campaign.budget_cap
    return CampaignCosts(
        currency=campaign.currency,
        provider=campaign.provider,
        budget_cap=cap,
        wage_floor=floor,
        by_kind=totals,
        spent=spent,
        committed=committed,
        planned=sum((r.planned for r in ordered), ZERO),
        held=sum((r.held for r in ordered), ZERO),
        forecast_remaining=sum((r.forecast_remaining for r in ordered), ZERO),
        forecast_total=sum((r.forecast_total for r in ordered), ZERO),
        budget_used=budget_used,
        budget_left=None if cap is None else cap - budget_used,
        accepted_examples=accepted,
        cost_per_accepted_example=_per(spent + committed, accepted),
        stages=ordered,
    )


def _add_held(
    *, rows: dict[int | None, StageCosts], fee_model: FeeModel, hit_counts: HITCounts
) -> Decimal:
    """Open places and undecided assignments without ledger entries, at reward + fee, per
    stage; returns the rewards held in all (before fees). From the counters the database
    keeps (``stage_hit_counts``' free places of published HITs, ``stage_held_work``)."""
    rewards: dict[int, Decimal] = defaultdict(lambda: ZERO)
    for stage_id, by_status in hit_counts.items():
        published = by_status.get(HITStatus.PUBLISHED)
        if published:
            rewards[stage_id] += published["free_reward"]
    stage_ids = [pk for pk in rows if pk is not None]
    for stage_id, (_, reward) in stage_held_work(stage_ids=stage_ids).items():
        rewards[stage_id] += reward
    for stage_id, reward in rewards.items():
        if stage_id in rows:
            fee = fee_model.assignment_fee(reward=reward, max_assignments=1)
            rows[stage_id].held = (reward + fee).quantize(CENT)
    return sum(rewards.values(), ZERO)


def _add_counts_and_wages(
    *, campaign: Campaign, rows: dict[int | None, StageCosts], floor: Decimal
) -> None:
    """Approved assignments (from the counters the database keeps) and the median work
    time of submitted work (cached until the stage's assignments change), per stage."""
    stage_ids = [pk for pk in rows if pk is not None]
    for stage_id, by_status in stage_assignment_counts(stage_ids=stage_ids).items():
        rows[stage_id].approved = by_status.get(AssignmentStatus.APPROVED, 0)
    medians = _stage_work_medians(campaign=campaign, stage_ids=stage_ids)
    stage_rewards = dict(campaign.stages.values_list("pk", "reward"))
    for stage_id, median in medians.items():
        row = rows.get(stage_id)
        if row is None:
            continue
        row.median_work_seconds = median
        row.hourly_wage = hourly_wage(stage_rewards[stage_id], median)
        row.below_wage_floor = row.hourly_wage is not None and row.hourly_wage < floor


def _stage_work_medians(*, campaign: Campaign, stage_ids: list[int]) -> dict[int, float]:
    """The median work time of each stage's submitted work, cached under the stages'
    work versions (``stage_work_versions``): a submission or decision recomputes it, a
    page view reads one cache key."""
    versions = stage_work_versions(stage_ids=stage_ids)
    digest = hashlib.sha256(repr(sorted(versions.items())).encode()).hexdigest()[:32]
    key = f"qaportal:stage-work-medians:{campaign.pk}:{digest}"
    found: dict[int, float] | None = cache.get(key)
    if found is None:
        work = Assignment.objects.filter(hit__stage_id__in=stage_ids, status__in=HANDED_IN)
        found = {
            stage_id: float(median)
            for stage_id, median in medians_by(
                queryset=work, group="hit__stage_id", value="work_seconds"
            ).items()
            if median is not None
        }
        cache.set(key, found, MEDIANS_CACHE_SECONDS)
    return found


def ledger_list(*, campaign: Campaign) -> QuerySet[LedgerEntry]:
    """The campaign's ledger entries, newest first, with stage and worker loaded."""
    return LedgerEntry.objects.filter(campaign=campaign).select_related("stage", "worker")


__all__ = ["CampaignCosts", "StageCosts", "campaign_costs", "ledger_list", "wage_floor_default"]
