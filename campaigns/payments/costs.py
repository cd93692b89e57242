"""Cost estimates: what a campaign's items would cost in rewards and platform fees.

Reads only; nothing here writes or locks. The fee rules are the provider's own
(``Platform.fee_model``), so estimates and the ledger agree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation

from campaigns.design.platform import FeeModel, platform_for
from campaigns.models import Campaign, CampaignState, Stage
from campaigns.work.selectors.counts import stage_item_counts
from qaportal.errors import DomainError
from qaportal.money import CENT

# Stage config key: how many items of the next stage one accepted assignment yields.
EXPECTED_OUTPUTS_KEY = "expected_outputs_per_assignment"
ZERO = Decimal("0.00")


@dataclass(frozen=True)
class StageCost:
    stage_id: int
    stage_name: str
    items: int
    hits: int
    assignments: int
    reward_per_assignment: Decimal
    fee_per_assignment: Decimal
    rewards: Decimal
    fees: Decimal
    total: Decimal
    # The platform's pay rule (``Platform.rules()``): the reward per hour for the
    # stage's estimated minutes, the platform's minimum, and what is wrong, if anything.
    estimated_minutes: int | None = None
    hourly_rate: Decimal | None = None
    minimum_hourly: Decimal | None = None
    pay_warning: str = ""


@dataclass(frozen=True)
class CostEstimate:
    currency: str
    provider: str
    stages: list[StageCost]
    total_rewards: Decimal
    total_fees: Decimal
    total: Decimal
    budget_cap: Decimal | None
    within_budget: bool
    fee_rate: Decimal | None = None  # the platform's service fee on rewards and bonuses
    fee_note: str = ""
    # Prices converted from USD (a recipe's): {"from", "to", "rate", "source"} per stage.
    conversions: dict[str, dict[str, str]] = field(default_factory=dict)


def _outputs_per_assignment(stage: Stage) -> Decimal | None:
    raw = (stage.config or {}).get(EXPECTED_OUTPUTS_KEY)
    if raw is None:
        return None
    try:
        if isinstance(raw, bool):
            raise InvalidOperation
        value = Decimal(str(raw))
    except InvalidOperation:
        value = Decimal("NaN")
    if not value.is_finite() or value < 0:
        raise DomainError(
            f"Stage {stage.name!r}: {EXPECTED_OUTPUTS_KEY} must be a number of 0 or more, "
            f"not {raw!r}.",
            errors={"config": [f"{EXPECTED_OUTPUTS_KEY}: {raw!r}"]},
        )
    return value


def _hits_and_assignments(*, stage: Stage, items: int) -> tuple[int, int]:
    hits = math.ceil(items / stage.items_per_hit) if items > 0 else 0
    return hits, hits * stage.assignments_per_hit


class _ItemCounts:
    """Expected items per stage of one campaign, following the stage links."""

    def __init__(self, stages: list[Stage], current: dict[int, int] | None = None) -> None:
        self.stages = stages
        ids = [s.pk for s in stages]
        # Every item, whatever its status, from the counters the database keeps.
        self.current: dict[int, int] = (
            current
            if current is not None
            else {
                stage_id: sum(by_status.values())
                for stage_id, by_status in stage_item_counts(stage_ids=ids).items()
            }
        )
        self._memo: dict[int, int] = {}

    def of(self, stage: Stage, _seen: frozenset[int] = frozenset()) -> int:
        if stage.pk in self._memo:
            return self._memo[stage.pk]
        count = self.current.get(stage.pk, 0)
        upstream = [s for s in self.stages if s.next_stage_id == stage.pk]
        if count == 0 and upstream and stage.pk not in _seen:
            expected = ZERO
            configured = False
            for up in upstream:
                rate = _outputs_per_assignment(up)
                if rate is None:
                    continue
                configured = True
                _, assignments = _hits_and_assignments(
                    stage=up, items=self.of(up, _seen | {stage.pk})
                )
                expected += assignments * rate
            if configured:
                # Round up: an estimate guards a budget, better a little high.
                count = math.ceil(expected)
        self._memo[stage.pk] = count
        return count


def _stage_cost(*, stage: Stage, items: int, fee_model: FeeModel) -> StageCost:
    hits, assignments = _hits_and_assignments(stage=stage, items=items)
    reward = stage.reward
    fee = fee_model.assignment_fee(reward=reward, max_assignments=stage.assignments_per_hit)
    rewards = (assignments * reward).quantize(CENT)
    fees = (assignments * fee).quantize(CENT)
    return StageCost(
        stage_id=stage.pk,
        stage_name=stage.name,
        items=items,
        hits=hits,
        assignments=assignments,
        reward_per_assignment=reward,
        fee_per_assignment=fee,
        rewards=rewards,
        fees=fees,
        total=rewards + fees,
    )


def _with_pay_check(cost: StageCost, *, stage: Stage, provider: str, currency: str) -> StageCost:
    """``cost`` with the platform's pay rule applied to ``stage`` (rate, minimum, warning)."""
    check = (
        platform_for(provider)
        .rules()
        .pay_check(
            reward=stage.reward,
            currency=currency,
            config=stage.config,
            assignment_duration=stage.assignment_duration,
        )
    )
    return replace(
        cost,
        estimated_minutes=check.estimated_minutes,
        hourly_rate=check.hourly_rate,
        minimum_hourly=check.minimum_hourly,
        pay_warning=check.problem,
    )


def stage_plan_cost(
    *,
    name: str,
    reward: Decimal,
    assignments_per_hit: int,
    items_per_hit: int,
    items: int,
    provider: str,
) -> StageCost:
    """What ``items`` items would cost on a stage not yet made (a recipe's plan), with
    ``provider``'s fees; the arithmetic of ``stage_cost_estimate``. Reads nothing."""
    plan = Stage(
        name=name,
        reward=reward,
        assignments_per_hit=assignments_per_hit,
        items_per_hit=items_per_hit,
    )
    return _stage_cost(stage=plan, items=items, fee_model=platform_for(provider).fee_model())


def stage_cost_estimate(*, stage: Stage, items: int | None = None) -> StageCost:
    """What ``items`` items (default: the stage's expected items) would cost on ``stage``.

    HITs = ceil(items / items_per_hit); assignments = HITs x assignments_per_hit;
    rewards = assignments x reward; fees = assignments x the provider's fee for
    one assignment of a HIT with ``assignments_per_hit`` assignments.

    Expected items: the stage's current items (all of them, whatever their
    status: this is the plan's cost, not what is left to spend). A stage that
    an earlier stage feeds (it is that stage's ``next_stage``) and has no items
    yet is estimated instead as the sum, over the stages feeding it whose config
    sets ``expected_outputs_per_assignment``, of their expected assignments x
    that number, rounded up; with no such config it counts as 0 items.
    Adaptive extra assignments (escalation, extensions) and bonuses are not
    included.

    Reads only; takes no locks.
    """
    if items is not None and items < 0:
        raise DomainError("The number of items cannot be negative.", errors={"items": [items]})
    campaign = stage.campaign
    fee_model = platform_for(campaign).fee_model(requirements=stage.qualification_requirements)
    if items is None:
        stages = [s for s in campaign.stages.all() if s.pk != stage.pk] + [stage]
        items = _ItemCounts(stages).of(stage)
    return _with_pay_check(
        _stage_cost(stage=stage, items=items, fee_model=fee_model),
        stage=stage,
        provider=campaign.provider,
        currency=campaign.currency,
    )


def campaign_cost_estimate(
    *,
    campaign: Campaign,
    stages: list[Stage] | None = None,
    item_counts: dict[int, int] | None = None,
) -> CostEstimate:
    """Expected cost of all stages of ``campaign``, in ``campaign.currency``.

    Each stage as in ``stage_cost_estimate`` with its expected items; the
    campaign is within budget when it has no cap or the total does not exceed it.

    Reads only; takes no locks. ``stages`` (all of the campaign's) and ``item_counts``
    (``{stage_id: items}``, every status) when the caller has read them already.
    """
    if stages is None:
        stages = list(campaign.stages.order_by("position", "id"))
    else:
        stages = sorted(stages, key=lambda s: (s.position, s.pk))
    counts = _ItemCounts(stages, item_counts)
    costs = [
        _with_pay_check(
            _stage_cost(
                stage=s,
                items=counts.of(s),
                fee_model=platform_for(campaign).fee_model(
                    requirements=s.qualification_requirements
                ),
            ),
            stage=s,
            provider=campaign.provider,
            currency=campaign.currency,
        )
        for s in stages
    ]
    total_rewards = sum((c.rewards for c in costs), ZERO)
    total_fees = sum((c.fees for c in costs), ZERO)
    total = total_rewards + total_fees
    cap = campaign.budget_cap
    fee_model = platform_for(campaign).fee_model()
    return CostEstimate(
        currency=campaign.currency,
        provider=campaign.provider,
        stages=costs,
        total_rewards=total_rewards,
        total_fees=total_fees,
        total=total,
        budget_cap=cap,
        within_budget=cap is None or total <= cap,
        fee_rate=getattr(fee_model, "rate", None),
        fee_note=fee_model.description(),
        conversions={
            s.name: dict((s.config or {})["priced_in"])
            for s in stages
            if isinstance((s.config or {}).get("priced_in"), dict)
        },
    )


def bonus_cost(*, provider: str, amount: Decimal) -> tuple[Decimal, Decimal]:
    """``(amount, fee)`` of one bonus payment of ``amount`` on ``provider``.

    ``amount`` must be whole cents and not negative. Reads only.
    """
    if amount < 0 or amount != amount.quantize(CENT):
        raise DomainError(
            f"A bonus is a non-negative amount in whole cents, not {amount}.",
            errors={"amount": [str(amount)]},
        )
    return amount.quantize(CENT), platform_for(provider).fee_model().bonus_fee(amount=amount)


def transition_commits_money(*, campaign: Campaign, to_state: str) -> bool:
    """Whether moving ``campaign`` to ``to_state`` publishes paid work on a platform that
    moves money (starting a pilot, going live, resuming): the pages ask for a
    confirmation stating places, rewards, fees and the total first. Reads only."""
    return platform_for(campaign.provider).moves_money and to_state in (
        CampaignState.PILOT,
        CampaignState.LIVE,
    )
