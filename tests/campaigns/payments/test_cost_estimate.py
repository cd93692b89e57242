"""Cost estimates with the platforms' fee rules; expected numbers worked out by hand."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.test import override_settings

from campaigns.models import Campaign, Item, ItemSource, Stage
from campaigns.payments.costs import (
    CostEstimate,
    StageCost,
    bonus_cost,
    campaign_cost_estimate,
    stage_cost_estimate,
)
from qaportal.errors import DomainError
from tests.factories import CampaignFactory, StageFactory

pytestmark = pytest.mark.django_db

D = Decimal


def _items(stage: Stage, n: int) -> None:
    Item.objects.bulk_create(
        Item(
            stage=stage,
            external_id=f"i{k}",
            data={"topic": "t", "complexity_type": "count"},
            source=ItemSource.UPLOADED,
        )
        for k in range(n)
    )


def _stage(campaign: Campaign, **kwargs: object) -> Stage:
    return StageFactory.create(campaign=campaign, **kwargs)


@pytest.fixture
def mturk() -> Campaign:
    return CampaignFactory.create(provider="mturk", currency="USD")


def test_worked_example_on_mturk(mturk):
    # 100 items, 5 per HIT -> 20 HITs; 3 assignments each -> 60 assignments.
    # $1.25 reward, fee 20 % = $0.25; rewards 60 x 1.25 = 75.00, fees 60 x 0.25 = 15.00.
    stage = _stage(mturk, name="write", items_per_hit=5, assignments_per_hit=3, reward=D("1.25"))
    _items(stage, 100)

    estimate = campaign_cost_estimate(campaign=mturk)

    assert isinstance(estimate, CostEstimate)
    assert estimate.stages == [
        StageCost(
            stage_id=stage.pk,
            stage_name="write",
            items=100,
            hits=20,
            assignments=60,
            reward_per_assignment=D("1.25"),
            fee_per_assignment=D("0.25"),
            rewards=D("75.00"),
            fees=D("15.00"),
            total=D("90.00"),
            estimated_minutes=15,  # a quarter of the hour allowed
            hourly_rate=D("5.00"),
            minimum_hourly=None,  # MTurk sets no minimum
            pay_warning="",
        )
    ]
    assert (estimate.total_rewards, estimate.total_fees, estimate.total) == (
        D("75.00"),
        D("15.00"),
        D("90.00"),
    )
    assert (estimate.currency, estimate.provider) == ("USD", "mturk")
    assert estimate.budget_cap is None
    assert estimate.within_budget is True


def test_partial_last_hit_counts_as_a_hit(mturk):
    # 101 items, 5 per HIT -> 21 HITs (the last holds one item), 63 assignments.
    stage = _stage(mturk, items_per_hit=5, assignments_per_hit=3, reward=D("1.25"))
    cost = stage_cost_estimate(stage=stage, items=101)
    assert (cost.hits, cost.assignments, cost.rewards, cost.fees) == (
        21,
        63,
        D("78.75"),
        D("15.75"),
    )


def test_ten_assignments_pay_the_extra_twenty_percent(mturk):
    # 10 assignments: 20 % + 20 % of $0.10 = $0.04 per assignment.
    ten = _stage(mturk, assignments_per_hit=10, reward=D("0.10"))
    cost = stage_cost_estimate(stage=ten, items=1)
    assert (cost.assignments, cost.fee_per_assignment, cost.rewards, cost.fees, cost.total) == (
        10,
        D("0.04"),
        D("1.00"),
        D("0.40"),
        D("1.40"),
    )
    # 9 assignments: only the base 20 % = $0.02.
    nine = _stage(mturk, assignments_per_hit=9, reward=D("0.10"))
    assert stage_cost_estimate(stage=nine, items=1).fee_per_assignment == D("0.02")


def test_minimum_fee_of_one_cent(mturk):
    # 20 % of $0.02 is $0.004: the minimum $0.01 applies.
    stage = _stage(mturk, reward=D("0.02"))
    cost = stage_cost_estimate(stage=stage, items=3)
    assert (cost.fee_per_assignment, cost.fees, cost.total) == (D("0.01"), D("0.03"), D("0.09"))


def test_no_reward_no_fee(mturk):
    stage = _stage(mturk, reward=D("0.00"))
    cost = stage_cost_estimate(stage=stage, items=4)
    assert (cost.fee_per_assignment, cost.total) == (D("0.00"), D("0.00"))


def test_bonus_fees():
    assert bonus_cost(provider="mturk", amount=D("0.03")) == (D("0.03"), D("0.01"))
    assert bonus_cost(provider="mturk", amount=D("0.02")) == (D("0.02"), D("0.01"))
    assert bonus_cost(provider="mturk", amount=D("2.50")) == (D("2.50"), D("0.50"))
    assert bonus_cost(provider="local", amount=D("2.50")) == (D("2.50"), D("0.00"))
    with override_settings(PROLIFIC_FEE_RATE="0.25"):
        assert bonus_cost(provider="prolific", amount=D("2.00")) == (D("2.00"), D("0.50"))


@pytest.mark.parametrize("amount", [D("-0.01"), D("0.005")])
def test_bonus_must_be_whole_non_negative_cents(amount):
    with pytest.raises(DomainError, match="whole cents"):
        bonus_cost(provider="mturk", amount=amount)


def test_local_provider_has_no_fees():
    campaign = CampaignFactory.create(provider="local")
    stage = _stage(campaign, assignments_per_hit=10, reward=D("0.50"))
    _items(stage, 7)

    estimate = campaign_cost_estimate(campaign=campaign)
    # 7 items x 10 assignments x $0.50 = $35.00, nothing on top.
    assert (estimate.total_rewards, estimate.total_fees, estimate.total) == (
        D("35.00"),
        D("0.00"),
        D("35.00"),
    )
    assert estimate.stages[0].fee_per_assignment == D("0.00")


def test_prolific_rate_and_currency():
    campaign = CampaignFactory.create(provider="prolific", currency="GBP")
    stage = _stage(campaign, reward=D("1.50"))
    _items(stage, 4)
    with override_settings(PROLIFIC_FEE_RATE="0.30"):
        estimate = campaign_cost_estimate(campaign=campaign)
    # 4 assignments x $1.50 = 6.00; fee 30 % of 1.50 = 0.45 each, 1.80.
    assert (estimate.currency, estimate.total_fees, estimate.total) == ("GBP", D("1.80"), D("7.80"))


@pytest.mark.parametrize(
    ("cap", "within"),
    [(None, True), (D("90.00"), True), (D("89.99"), False), (D("1000"), True), (D("0"), False)],
)
def test_budget_cap(mturk, cap, within):
    mturk.budget_cap = cap
    mturk.save()
    stage = _stage(mturk, items_per_hit=5, assignments_per_hit=3, reward=D("1.25"))
    _items(stage, 100)  # $90.00, as in the worked example

    estimate = campaign_cost_estimate(campaign=mturk)
    assert (estimate.total, estimate.budget_cap, estimate.within_budget) == (
        D("90.00"),
        cap,
        within,
    )


def test_totals_add_up_over_stages_in_position_order(mturk):
    second = _stage(mturk, name="b", position=2, reward=D("0.50"))
    first = _stage(mturk, name="a", position=1, reward=D("1.00"))
    _items(first, 2)
    _items(second, 3)
    estimate = campaign_cost_estimate(campaign=mturk)
    # a: 2 x (1.00 + 0.20) = 2.40; b: 3 x (0.50 + 0.10) = 1.80.
    assert [s.stage_name for s in estimate.stages] == ["a", "b"]
    assert [s.total for s in estimate.stages] == [D("2.40"), D("1.80")]
    assert (estimate.total_rewards, estimate.total_fees, estimate.total) == (
        D("3.50"),
        D("0.70"),
        D("4.20"),
    )


def test_fed_stage_without_items_is_estimated_from_upstream_outputs(mturk):
    write = _stage(
        mturk,
        name="write",
        position=0,
        items_per_hit=5,
        assignments_per_hit=3,
        config={"expected_outputs_per_assignment": 5},
    )
    link = _stage(mturk, name="link", position=1, items_per_hit=10, reward=D("0.20"))
    write.next_stage = link
    write.save()
    _items(write, 100)

    estimate = campaign_cost_estimate(campaign=mturk)
    # write: 20 HITs x 3 = 60 assignments, 5 questions each -> 300 items to link.
    linking = estimate.stages[1]
    assert (linking.items, linking.hits, linking.assignments) == (300, 30, 30)
    assert stage_cost_estimate(stage=link).items == 300

    # Once the stage has items of its own, those are counted.
    _items(link, 12)
    assert stage_cost_estimate(stage=link).items == 12


def test_expected_outputs_chain_and_round_up(mturk):
    a = _stage(mturk, name="a", position=0, config={"expected_outputs_per_assignment": "2.5"})
    b = _stage(
        mturk,
        name="b",
        position=1,
        assignments_per_hit=2,
        config={"expected_outputs_per_assignment": 1},
    )
    c = _stage(mturk, name="c", position=2)
    a.next_stage, b.next_stage = b, c
    a.save()
    b.save()
    _items(a, 3)
    # a: 3 assignments x 2.5 = 7.5 -> 8 items in b; b: 8 x 2 = 16 assignments -> 16 items in c.
    assert [s.items for s in campaign_cost_estimate(campaign=mturk).stages] == [3, 8, 16]


def test_fed_stage_without_config_counts_its_items(mturk):
    write = _stage(mturk, name="write", position=0)
    link = _stage(mturk, name="link", position=1)
    write.next_stage = link
    write.save()
    _items(write, 10)
    assert stage_cost_estimate(stage=link).items == 0


def test_bad_expected_outputs_is_a_clear_error(mturk):
    write = _stage(mturk, name="write", config={"expected_outputs_per_assignment": "many"})
    link = _stage(mturk, name="link")
    write.next_stage = link
    write.save()
    with pytest.raises(DomainError, match="expected_outputs_per_assignment"):
        stage_cost_estimate(stage=link)


def test_explicit_item_count_and_empty_stage(mturk):
    stage = _stage(mturk, reward=D("1.00"))
    _items(stage, 5)
    assert stage_cost_estimate(stage=stage).items == 5
    assert stage_cost_estimate(stage=stage, items=50).total == D("60.00")
    empty = stage_cost_estimate(stage=stage, items=0)
    assert (empty.hits, empty.assignments, empty.total) == (0, 0, D("0.00"))
    with pytest.raises(DomainError):
        stage_cost_estimate(stage=stage, items=-1)
