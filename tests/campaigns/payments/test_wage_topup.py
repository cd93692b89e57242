"""Fair pay: the wage_floor bonus rule tops approved work up to the hourly floor for
its measured (capped) time, once per assignment; the rule is validated."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from campaigns.design.services import campaign_create, stage_add
from campaigns.models import HIT, Assignment, LedgerEntry, LedgerKind
from campaigns.payments.wages import (
    stage_estimate_from_pilot,
    stage_wage_topup_pay,
    stage_wage_topups,
)
from qaportal.errors import DomainError
from tests.factories import WorkerFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def stage(requester):
    campaign = campaign_create(owner=requester, name="Fair", slug="fair")
    stage = stage_add(
        campaign=campaign,
        name="Write",
        task_type="question_writing",
        reward=Decimal("0.10"),
        bonus_rules=[{"rule": "wage_floor", "hourly": "15.00", "cap_seconds": 600}],
    )
    hit = HIT.objects.create(
        stage=stage, provider="local", reward=Decimal("0.10"), max_assignments=5
    )
    now = timezone.now()
    for seconds, status in (
        (120, "approved"),
        (6000, "approved"),
        (120, "rejected"),
        (12, "approved"),
    ):
        Assignment.objects.create(
            hit=hit,
            worker=WorkerFactory.create(provider="local"),
            provider="local",
            status=status,
            answers={},
            accepted_at=now,
            submitted_at=now,
            work_seconds=seconds,
        )
    return stage


def test_topups_reach_the_floor_once(stage, requester):
    wanted = sorted(t.amount for t in stage_wage_topups(stage=stage))
    # 2 min at $15/h = $0.50 (reward $0.10: top-up $0.40); 100 min capped at 10 min = $2.50;
    # 12 s = $0.05, under the reward: nothing; rejected work: nothing.
    assert wanted == [Decimal("0.40"), Decimal("2.40")]
    stage_wage_topup_pay(stage=stage)
    assert stage_wage_topup_pay(stage=stage) == []
    bonuses = sorted(
        LedgerEntry.objects.filter(kind=LedgerKind.BONUS).values_list("amount", flat=True)
    )
    assert bonuses == [Decimal("0.40"), Decimal("2.40")]

    api = APIClient()
    api.force_authenticate(requester)
    assert api.post(f"/api/v1/stages/{stage.pk}/wage-topup/").json() == []


def test_the_rule_is_checked(requester):
    campaign = campaign_create(owner=requester, name="Unfair", slug="unfair")
    with pytest.raises(DomainError):
        stage_add(
            campaign=campaign,
            name="Write",
            task_type="question_writing",
            bonus_rules=[{"rule": "wage_floor", "hourly": "lots"}],
        )
    plain = stage_add(campaign=campaign, name="Plain", task_type="question_writing")
    api = APIClient()
    api.force_authenticate(requester)
    refused = api.post(f"/api/v1/stages/{plain.pk}/wage-topup/")
    assert refused.status_code == 400
    assert "bonus_rules" in refused.json()


def test_the_estimate_becomes_the_pilots_median(stage):
    # 120, 6000, 120 and 12 seconds stored: the median is 120 s, 2 minutes.
    assert stage_estimate_from_pilot(stage=stage, least_assignments=5) is None
    assert "estimated_minutes" not in (stage.config or {})
    assert stage_estimate_from_pilot(stage=stage, least_assignments=4) == 2
    stage.refresh_from_db()
    assert stage.config["estimated_minutes"] == 2
    assert stage.config["estimated_from"] == {"median_seconds": 120.0, "assignments": 4}
