"""Every amount the API takes goes through the one strict parser: a 400 that says what
is expected, nothing stored, for text ``Decimal()`` would have read (or made a 500 of)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from campaigns.design.services import campaign_create, stage_add
from campaigns.models import Campaign, LedgerEntry, LedgerKind
from tests.helpers import local_pipeline, submitted_assignment

pytestmark = pytest.mark.django_db

HOSTILE = ["1e1", "1_0", "\uff11\uff10", "NaN", "sNaN", "Infinity", "-Infinity"]


@pytest.mark.parametrize("amount", HOSTILE)
def test_campaign_money_settings_refuse_hostile_numbers(token_client, requester, amount):
    campaign_create(owner=requester, name="M", slug="m")
    for field in ("budget_cap", "bonus_max"):
        response = token_client.patch("/api/v1/campaigns/m/", {field: amount}, format="json")
        assert response.status_code == 400, response.content
        assert "plain decimal text" in str(response.json()), response.json()
    assert Campaign.objects.values_list("budget_cap", "bonus_max").get() == (None, None)


@pytest.mark.parametrize("amount", HOSTILE)
def test_stage_reward_refuses_hostile_numbers(token_client, requester, amount):
    campaign = campaign_create(owner=requester, name="M", slug="m")
    stage = stage_add(
        campaign=campaign, name="W", task_type="question_writing", config={"questions_per_hit": 5}
    )
    response = token_client.patch(f"/api/v1/stages/{stage.pk}/", {"reward": amount}, format="json")
    assert response.status_code == 400
    stage.refresh_from_db()
    assert stage.reward == Decimal("0.00")


@pytest.mark.parametrize("amount", HOSTILE)
def test_a_bonus_refuses_hostile_numbers(token_client, requester, amount):
    _campaign, writing, _ = local_pipeline(requester, slug="hostile-bonus")
    waiting = submitted_assignment(writing)
    response = token_client.post(
        f"/api/v1/assignments/{waiting.pk}/bonus/",
        {"amount": amount, "reason": "x"},
        format="json",
    )
    assert response.status_code == 400
    assert not LedgerEntry.objects.filter(kind=LedgerKind.BONUS).exists()
