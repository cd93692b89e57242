"""Costs and ledger endpoints: exact Decimal sums on a crafted ledger, filters, permissions."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from campaigns.insights.money import campaign_costs
from campaigns.models import AssignmentStatus, Campaign, HITStatus, LedgerEntry, Stage
from campaigns.payments.budget import campaign_spending
from tests.factories import (
    AssignmentFactory,
    CampaignFactory,
    HITFactory,
    ItemFactory,
    LedgerEntryFactory,
    StageFactory,
    WorkerFactory,
)

pytestmark = pytest.mark.django_db
D = Decimal


def _done(hit, status: str, seconds: int, **kwargs):
    now = timezone.now()
    return AssignmentFactory.create(
        hit=hit,
        provider=hit.provider,
        status=status,
        accepted_at=now - timedelta(seconds=seconds),
        submitted_at=now,
        work_seconds=seconds,
        **kwargs,
    )


@pytest.fixture
def crafted(requester) -> tuple[Campaign, Stage, Stage]:
    """An MTurk campaign (20 % fee) with a ledger whose sums are worked out by hand."""
    campaign = CampaignFactory.create(
        owner=requester, slug="money", provider="mturk", budget_cap=D("100.00")
    )
    s1 = StageFactory.create(
        campaign=campaign, name="Write", position=0, reward=D("0.50"), assignments_per_hit=2
    )
    s2 = StageFactory.create(campaign=campaign, name="Check", position=1, reward=D("1.00"))
    for n in range(3):
        ItemFactory.create(stage=s1, external_id=f"i{n}")
    open_hit = HITFactory.create(
        stage=s1,
        provider="mturk",
        reward=D("0.50"),
        max_assignments=2,
        places_left=1,
        status=HITStatus.PUBLISHED,
        provider_hit_id="H1",
    )
    full_hit = HITFactory.create(
        stage=s1,
        provider="mturk",
        reward=D("0.50"),
        max_assignments=2,
        places_left=0,
        status=HITStatus.COMPLETED,
        provider_hit_id="H2",
    )
    approved = _done(open_hit, AssignmentStatus.APPROVED, 60, provider_assignment_id="A1")
    _done(full_hit, AssignmentStatus.SUBMITTED, 120, provider_assignment_id="A2")
    _done(full_hit, AssignmentStatus.REJECTED, 90, provider_assignment_id="A3")
    check_hit = HITFactory.create(
        stage=s2,
        provider="mturk",
        reward=D("1.00"),
        max_assignments=1,
        places_left=0,
        status=HITStatus.COMPLETED,
        provider_hit_id="H3",
    )
    _done(check_hit, AssignmentStatus.APPROVED, 100, provider_assignment_id="A4")

    def entry(stage, kind, status, amount, **kw):
        LedgerEntryFactory.create(
            campaign=campaign, stage=stage, kind=kind, status=status, amount=D(amount), **kw
        )

    entry(s1, "reward", "paid", "0.50", assignment=approved, worker=approved.worker)
    entry(s1, "platform_fee", "paid", "0.10", assignment=approved)
    entry(s1, "bonus", "committed", "0.25")
    entry(s1, "bonus_fee", "committed", "0.05")
    entry(s1, "bonus", "planned", "0.33")
    entry(s1, "reward", "cancelled", "9.99")
    entry(s2, "quiz_payment", "paid", "0.07")
    entry(None, "quiz_payment", "committed", "1.11")
    return campaign, s1, s2


def test_costs_sum_exactly_by_stage_kind_and_status(crafted):
    campaign, s1, s2 = crafted
    costs = campaign_costs(campaign=campaign, wage_floor=D("15.00"))
    assert (costs.spent, costs.committed, costs.planned) == (D("0.67"), D("1.41"), D("0.33"))
    assert costs.by_kind["reward"] == {"planned": D("0"), "committed": D("0"), "paid": D("0.50")}
    assert costs.by_kind["bonus"] == {"planned": D("0.33"), "committed": D("0.25"), "paid": 0}
    assert costs.by_kind["quiz_payment"]["committed"] == D("1.11")
    first, second, unstaged = costs.stages
    assert first.stage_id == s1.pk
    assert second.stage_id == s2.pk
    assert unstaged.stage_id is None
    # Stage 1: 3 items x 2 assignments estimated, 4 places published, 2 left at 0.50 + 0.10.
    assert (first.estimated_assignments, first.published_places) == (6, 4)
    assert first.forecast_remaining == D("1.20")
    # Held: one open place and one submitted assignment, 1.00 of rewards + 0.20 fee.
    assert first.held == D("1.20")
    assert (first.spent, first.committed, first.planned) == (D("0.60"), D("0.30"), D("0.33"))
    assert first.forecast_total == D("3.63")
    assert first.cost_per_accepted == D("0.90")
    assert first.median_work_seconds == 90.0
    assert first.hourly_wage == D("20.00")
    assert not first.below_wage_floor
    assert second.hourly_wage == D("36.00")
    assert second.forecast_total == D("0.07")
    assert second.remaining_assignments == 0
    assert unstaged.committed == D("1.11")
    assert costs.forecast_total == D("4.81")
    assert costs.accepted_examples == 1
    assert costs.cost_per_accepted_example == D("2.08")
    # The budget check's count: committed + paid 2.08, held 1.00 + 0.20 fee.
    assert costs.budget_used == D("3.28")
    assert costs.budget_left == D("96.72")
    assert costs.budget_used == campaign_spending(campaign=campaign)


def test_costs_api_money_as_strings_and_wage_floor(crafted, token_client):
    response = token_client.get("/api/v1/campaigns/money/costs/?wage_floor=25")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["spent"] == "0.67"
    assert body["budget_left"] == "96.72"
    assert body["wage_floor"] == "25.00"
    assert body["stages"][0]["hourly_wage"] == "20.00"
    assert body["stages"][0]["below_wage_floor"] is True
    assert body["stages"][1]["below_wage_floor"] is False
    assert body["by_kind"]["bonus"]["planned"] == "0.33"


def test_costs_api_bad_wage_floor_names_the_field(crafted, token_client):
    response = token_client.get("/api/v1/campaigns/money/costs/?wage_floor=cheap")
    assert response.status_code == 400
    assert "wage_floor" in response.json()


def test_costs_and_ledger_permissions(crafted, client_for, other_requester, api_client):
    bob = client_for(other_requester)
    for url in ("/api/v1/campaigns/money/costs/", "/api/v1/campaigns/money/ledger/"):
        assert bob.get(url).status_code == 404
        assert api_client.get(url).status_code == 401


def test_collaborator_sees_costs(crafted, client_for):
    from tests.factories import UserFactory

    carol = UserFactory.create(username="carol")
    crafted[0].collaborators.add(carol)
    assert client_for(carol).get("/api/v1/campaigns/money/costs/").status_code == 200


def test_ledger_filters_ordering_and_pagination(crafted, token_client):
    campaign, s1, _ = crafted
    url = "/api/v1/campaigns/money/ledger/"
    everything = token_client.get(url).json()
    assert everything["count"] == LedgerEntry.objects.filter(campaign=campaign).count() == 8
    bonuses = token_client.get(url, {"kind": "bonus", "status": "committed"}).json()
    assert [e["amount"] for e in bonuses["results"]] == ["0.25"]
    in_stage = token_client.get(url, {"stage": s1.pk, "ordering": "-amount"}).json()
    assert [e["amount"] for e in in_stage["results"]] == [
        "9.99",
        "0.50",
        "0.33",
        "0.25",
        "0.10",
        "0.05",
    ]
    assert in_stage["results"][1]["worker"].startswith("w_")
    cheapest = token_client.get(url, {"ordering": "amount"}).json()["results"][0]
    assert cheapest["amount"] == "0.05"
    assert everything["next"] is None


def test_ledger_bad_filter_names_the_field(crafted, token_client):
    response = token_client.get("/api/v1/campaigns/money/ledger/", {"kind": "salary"})
    assert response.status_code == 400
    assert "kind" in response.json()


def test_worker_external_id_never_in_ledger(crafted, token_client):
    worker = WorkerFactory.create(provider="mturk", external_id="A3SECRETWORKER")
    LedgerEntryFactory.create(campaign=crafted[0], worker=worker, amount=D("0.01"))
    body = token_client.get("/api/v1/campaigns/money/ledger/").content.decode()
    assert "A3SECRETWORKER" not in body
    assert worker.pseudonym in body


def test_medians_in_sql_and_in_python_agree(crafted, monkeypatch):
    from django.db.models import Count

    from campaigns.models import Assignment
    from campaigns.workforce import stats as selectors_stats

    work = Assignment.objects.filter(hit__stage__campaign=crafted[0])
    group, value = "hit__stage_id", "work_seconds"
    in_sql = selectors_stats.grouped_with_median(
        queryset=work, group=group, value=value, n=Count("id")
    )
    assert in_sql[crafted[1].pk]["median"] == 90.0
    assert in_sql[crafted[1].pk]["n"] == 3

    class NotPostgres:
        vendor = "sqlite"

    monkeypatch.setattr(selectors_stats, "connection", NotPostgres())
    in_python = selectors_stats.grouped_with_median(
        queryset=work, group=group, value=value, n=Count("id")
    )
    assert in_python == in_sql
    medians = selectors_stats.medians_by(queryset=work, group=group, value=value)
    assert medians == {k: v["median"] for k, v in in_sql.items()}
