"""Fair pay: a stage's ``wage_floor`` bonus rule tops approved work up to an hourly
wage for the time it measurably took. Each assignment's top-up is a bonus under key
``wage-topup:<assignment>`` (paid once, whatever is asked twice); what the worker
already earned there (reward and earlier bonuses) counts toward the floor; the time
counted is capped (``cap_seconds``), so a tab left open is not paid as work."""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from django.db.models import QuerySet, Sum

from campaigns.design.platform import platform_for
from campaigns.design.services import stage_update
from campaigns.models import (
    Assignment,
    AssignmentStatus,
    LedgerEntry,
    LedgerKind,
    LedgerStatus,
    Stage,
)
from qaportal.errors import StateConflict
from qaportal.money import CENT


def wage_floor_rule(*, stage: Stage) -> dict[str, object] | None:
    """The stage's ``wage_floor`` rule, if it has one."""
    for rule in stage.bonus_rules or []:
        if isinstance(rule, dict) and rule.get("rule") == "wage_floor":
            return rule
    return None


@dataclass(frozen=True)
class TopUp:
    assignment_id: int
    amount: Decimal


def stage_wage_topups(*, stage: Stage) -> list[TopUp]:
    """What each approved assignment of ``stage`` still needs to reach the floor."""
    rule = wage_floor_rule(stage=stage)
    if rule is None:
        return []
    hourly = Decimal(str(rule["hourly"]))
    cap = int(rule.get("cap_seconds", 3600))  # type: ignore[call-overload]
    work = list(
        Assignment.objects.filter(
            hit__stage=stage, status=AssignmentStatus.APPROVED, work_seconds__isnull=False
        ).values_list("pk", "work_seconds", "hit__reward")
    )
    paid = dict(
        LedgerEntry.objects.filter(
            assignment_id__in=[pk for pk, _, _ in work],
            kind=LedgerKind.BONUS,
            status__in=(LedgerStatus.COMMITTED, LedgerStatus.PAID),
        )
        .values_list("assignment_id")
        .annotate(total=Sum("amount"))
    )
    out = []
    for pk, seconds, reward in work:
        owed = (hourly * Decimal(min(seconds, cap)) / Decimal(3600)).quantize(CENT, ROUND_HALF_UP)
        missing = owed - reward - (paid.get(pk) or Decimal("0"))
        if missing >= CENT:
            out.append(TopUp(assignment_id=pk, amount=missing))
    return out


def stage_wage_topup_pay(*, stage: Stage) -> list[TopUp]:
    """Pay every top-up ``stage_wage_topups`` finds, each once (key
    ``wage-topup:<assignment>``; asking again pays nothing more). Budget checks apply
    as for any bonus."""
    topups = stage_wage_topups(stage=stage)
    platform = platform_for(stage.campaign)
    for t in topups:
        platform.bonus_pay(
            assignment=Assignment.objects.get(pk=t.assignment_id),
            amount=t.amount,
            reason="Top-up to the hourly wage floor for the time this task took.",
            key=f"wage-topup:{t.assignment_id}",
        )
    return topups


def _timed_assignments(stage: Stage) -> QuerySet[Assignment]:
    """The stage's stored assignments (submitted or decided) that measured their work time."""
    return Assignment.objects.filter(
        hit__stage=stage,
        status__in=(
            AssignmentStatus.SUBMITTED,
            AssignmentStatus.APPROVED,
            AssignmentStatus.REJECTED,
        ),
        work_seconds__isnull=False,
    )


def stage_estimate_from_pilot(*, stage: Stage, least_assignments: int = 5) -> int | None:
    """Set the stage's ``config["estimated_minutes"]`` to the median time its stored
    assignments took (``work_seconds``, rounded up to the minute), noting
    ``config["estimated_from"]``; the minutes, or None (nothing changed) when fewer than
    ``least_assignments`` assignments measured their time. Platforms with a minimum
    hourly rate then price the stage by it (the stage page, the go-live confirmation).
    Goes through ``stage_update`` (its state rules: a draft or a pilot)."""
    seconds: list[int] = sorted(
        s for s in _timed_assignments(stage).values_list("work_seconds", flat=True) if s is not None
    )
    if len(seconds) < max(1, least_assignments):
        return None
    middle = len(seconds) // 2
    median = float(
        seconds[middle] if len(seconds) % 2 else (seconds[middle - 1] + seconds[middle]) / 2
    )
    minutes = max(1, math.ceil(median / 60))
    config = {
        **(stage.config or {}),
        "estimated_minutes": minutes,
        "estimated_from": {"median_seconds": median, "assignments": len(seconds)},
    }
    stage_update(stage=stage, config=config)
    return minutes


@dataclass(frozen=True)
class PilotEstimate:
    """What ``stage_pilot_estimate_set`` set, and the reward against it."""

    estimated_minutes: int
    median_seconds: float
    assignments: int
    currency: str
    reward: Decimal
    hourly_rate: Decimal | None
    minimum_hourly: Decimal | None  # None: the platform sets no minimum
    meets_minimum: bool
    problem: str  # the platform's objection to the reward, "" when none


def stage_pilot_estimate_set(*, stage: Stage, least_assignments: int = 5) -> PilotEstimate:
    """``stage_estimate_from_pilot`` as a requester asks for it: ``StateConflict`` (the
    API's 409) when fewer than ``least_assignments`` assignments measured their time,
    else the new estimate with the stage's reward checked against the platform's hourly
    minimum (Prolific) at that many minutes."""
    minutes = stage_estimate_from_pilot(stage=stage, least_assignments=least_assignments)
    if minutes is None:
        measured = _timed_assignments(stage).count()
        raise StateConflict(
            f"The pilot has {measured} submitted assignment(s) with a measured time; the "
            f"estimate needs at least {least_assignments}. Run the pilot further first.",
            errors={"assignments": [f"{measured} of {least_assignments} needed"]},
        )
    stage.refresh_from_db()
    campaign = stage.campaign
    check = (
        platform_for(campaign.provider)
        .rules()
        .pay_check(
            reward=Decimal(stage.reward),
            currency=campaign.currency,
            config=stage.config,
            assignment_duration=stage.assignment_duration,
        )
    )
    measured_from = (stage.config or {})["estimated_from"]
    return PilotEstimate(
        estimated_minutes=minutes,
        median_seconds=float(measured_from["median_seconds"]),
        assignments=int(measured_from["assignments"]),
        currency=check.currency,
        reward=check.reward,
        hourly_rate=check.hourly_rate,
        minimum_hourly=check.minimum_hourly,
        meets_minimum=not check.below_minimum,
        problem=check.problem,
    )
