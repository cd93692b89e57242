"""The campaign's budget: what it has spent or holds, and the check before money moves.

``campaign_spending`` is the one formula (``spending_total``); the dashboard's costs
(``campaigns.insights.money``) apply it to the sums they have already read, so the
budget check and what the requester sees agree. Reads only; no locks of their own
(the caller of ``campaign_budget_check`` holds the campaign row).
"""

from __future__ import annotations

from decimal import Decimal

from django.db.models import DecimalField, F, Sum, Value
from django.db.models.functions import Coalesce

from campaigns.design.platform import FeeModel, platform_for
from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    Campaign,
    HITStatus,
    LedgerEntry,
    LedgerStatus,
)
from campaigns.payments.totals import ledger_stage_totals
from campaigns.work.selectors.counts import stage_held_work, stage_hit_counts
from qaportal.errors import DomainError

_MONEY = DecimalField(max_digits=14, decimal_places=2)


class BudgetExceededError(DomainError):
    """The operation would take the campaign's committed spending past its budget cap."""

    code = "budget_exceeded"


def spending_total(*, ledger: Decimal, held_rewards: Decimal, fee_model: FeeModel) -> Decimal:
    """What the budget counts: committed and paid ``ledger`` amounts, plus the rewards the
    platform holds (open places, undecided work) with one platform fee on their total."""
    return ledger + held_rewards + fee_model.assignment_fee(reward=held_rewards, max_assignments=1)


def campaign_spending(*, campaign: Campaign) -> Decimal:
    """Committed and paid ledger amounts, plus the cost of places still open or undecided.

    Open places (``places_left`` of published HITs) and accepted / submitted
    assignments without ledger entries yet are counted at reward + platform fee: the
    platform holds that money (Prolific charges a study's places when it is published).
    Read from the ledger's running totals and the stage counters the database keeps
    (a few rows per stage, whatever the campaign's size); ``campaign_spending_full``
    counts the same on the rows.
    """
    stage_ids = list(campaign.stages.values_list("pk", flat=True))
    ledger = sum(
        ledger_stage_totals(
            campaign_id=campaign.pk, statuses=[LedgerStatus.COMMITTED, LedgerStatus.PAID]
        ).values(),
        Decimal("0"),
    )
    held = sum(
        (
            by_status[HITStatus.PUBLISHED]["free_reward"]
            for by_status in stage_hit_counts(stage_ids=stage_ids).values()
            if HITStatus.PUBLISHED in by_status
        ),
        Decimal("0"),
    ) + sum((reward for _, reward in stage_held_work(stage_ids=stage_ids).values()), Decimal("0"))
    return spending_total(
        ledger=ledger, held_rewards=held, fee_model=platform_for(campaign).fee_model()
    )


def campaign_spending_full(*, campaign: Campaign) -> Decimal:
    """``campaign_spending`` counted on the ledger, HITs and assignments (for checks and
    tests). Three aggregate queries."""
    ledger = LedgerEntry.objects.filter(
        campaign=campaign, status__in=[LedgerStatus.COMMITTED, LedgerStatus.PAID]
    ).aggregate(total=Coalesce(Sum("amount"), Value(Decimal("0")), output_field=_MONEY))["total"]
    open_places = HIT.objects.filter(
        stage__campaign=campaign, status=HITStatus.PUBLISHED
    ).aggregate(
        total=Coalesce(
            Sum(F("places_left") * F("reward"), output_field=_MONEY),
            Value(Decimal("0")),
            output_field=_MONEY,
        )
    )["total"]
    undecided = Assignment.objects.filter(
        hit__stage__campaign=campaign,
        status__in=[AssignmentStatus.ACCEPTED, AssignmentStatus.SUBMITTED],
        ledger__isnull=True,
    ).aggregate(total=Coalesce(Sum("hit__reward"), Value(Decimal("0")), output_field=_MONEY))[
        "total"
    ]
    return spending_total(
        ledger=Decimal(ledger),
        held_rewards=Decimal(open_places) + Decimal(undecided),
        fee_model=platform_for(campaign).fee_model(),
    )


def campaign_budget_check(*, campaign: Campaign, extra: Decimal, what: str) -> None:
    """Refuse (``BudgetExceededError``) when ``extra`` would pass ``campaign.budget_cap``."""
    if campaign.budget_cap is None:
        return
    spending = campaign_spending(campaign=campaign)
    if spending + extra > campaign.budget_cap:
        raise BudgetExceededError(
            f"{what} would cost {extra} {campaign.currency}; the campaign has "
            f"{spending} committed of its {campaign.budget_cap} budget.",
            errors={"budget_cap": [str(campaign.budget_cap)], "needed": [str(extra)]},
        )


__all__ = [
    "BudgetExceededError",
    "campaign_budget_check",
    "campaign_spending",
    "campaign_spending_full",
    "spending_total",
]
