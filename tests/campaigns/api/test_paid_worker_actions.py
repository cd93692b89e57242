"""Bonuses, messages and earnings on a paid provider (Prolific): the API goes through
``platforms.review`` / ``platforms.workers``; nothing is sent here (the operations stay
pending: carrying them out is the provider tests' business)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from campaigns.models import AssignmentStatus, HITStatus, LedgerEntry, ProviderOperation
from campaigns.payments.totals import ledger_totals_rebuild
from tests.factories import (
    AssignmentFactory,
    CampaignFactory,
    HITFactory,
    StageFactory,
    WorkerFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def prolific(requester):
    campaign = CampaignFactory.create(
        owner=requester, slug="paid", provider="prolific", currency="GBP"
    )
    stage = StageFactory.create(campaign=campaign, name="Answer", position=0)
    hit = HITFactory.create(
        stage=stage,
        provider="prolific",
        provider_hit_id="H-1",
        provider_group_id="study-1",
        status=HITStatus.PUBLISHED,
    )
    now = timezone.now()

    def done(pid: str, identity: str):
        return AssignmentFactory.create(
            hit=hit,
            provider="prolific",
            provider_assignment_id=f"session-{pid}",
            worker=WorkerFactory.create(provider="prolific", external_id=pid),
            status=AssignmentStatus.APPROVED,
            accepted_at=now - timedelta(minutes=3),
            submitted_at=now,
            work_seconds=180,
            review_details={"identity": {"status": identity}},
        )

    return campaign, done("PID0000CONFIRMED", "confirmed"), done("PID000UNCONFIRM", "unconfirmed")


def test_paid_bonus_commits_bonus_and_fee_once(prolific, token_client):
    _, confirmed, _ = prolific
    url = f"/api/v1/assignments/{confirmed.pk}/bonus/"
    body = {"amount": "1.50", "reason": "Thorough answers"}
    first = token_client.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY="pb-1")
    assert first.status_code == 201, first.content
    out = first.json()
    op = ProviderOperation.objects.get(kind="bonus")
    assert op.provider == "prolific"
    assert op.payload["amount"] == "1.50"
    assert out["operation"] == op.pk
    assert out["state"] == "pending"
    assert out["currency"] == "GBP"
    entries = {e.kind: e for e in LedgerEntry.objects.filter(operation=op)}
    assert entries["bonus"].amount == Decimal("1.50")
    assert entries["bonus"].status == "committed"
    assert out["fee"] == str(entries["bonus_fee"].amount)
    assert entries["bonus_fee"].amount > 0
    again = token_client.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY="pb-1")
    assert again.json() == out
    assert LedgerEntry.objects.filter(kind="bonus").count() == 1
    assert "PID0000CONFIRMED" not in first.content.decode()


def test_paid_bonus_refuses_an_unconfirmed_worker(prolific, token_client):
    _, _, unconfirmed = prolific
    response = token_client.post(
        f"/api/v1/assignments/{unconfirmed.pk}/bonus/",
        {"amount": "1.00", "reason": "x"},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["code"] == "identity_unconfirmed"
    assert not ProviderOperation.objects.filter(kind="bonus").exists()


def test_paid_message_names_the_study_and_shows_only_pseudonyms(prolific, token_client):
    campaign, confirmed, unconfirmed = prolific
    names = [confirmed.worker.pseudonym, unconfirmed.worker.pseudonym]
    response = token_client.post(
        f"/api/v1/campaigns/{campaign.slug}/messages/",
        {"workers": names, "subject": "Thanks", "body": "Round 2 opens Monday."},
        format="json",
    )
    assert response.status_code == 201, response.content
    op = ProviderOperation.objects.get(kind="notify")
    assert op.provider == "prolific"
    assert op.payload["study_id"] == "study-1"
    assert op.payload["participant_ids"] == ["PID0000CONFIRMED", "PID000UNCONFIRM"]
    assert "PID0000" not in response.content.decode()
    assert response.json()["workers"] == names


def test_earnings_are_rewards_and_bonuses_committed_or_paid(prolific, token_client):
    campaign, confirmed, _ = prolific
    token_client.post(
        f"/api/v1/assignments/{confirmed.pk}/bonus/",
        {"amount": "1.50", "reason": "Thorough"},
        format="json",
    )
    LedgerEntry.objects.create(
        campaign=campaign,
        kind="reward",
        status="paid",
        amount=Decimal("0.80"),
        key="reward:test",
        worker=confirmed.worker,
        assignment=confirmed,
    )
    LedgerEntry.objects.create(
        campaign=campaign,
        kind="reward",
        status="cancelled",
        amount=Decimal("9.00"),
        key="reward:cancelled",
        worker=confirmed.worker,
    )
    ledger_totals_rebuild()  # entries made here, not by payments.ledger
    rows = token_client.get(f"/api/v1/campaigns/{campaign.slug}/workers/").json()["results"]
    by_name = {r["pseudonym"]: r for r in rows}
    # 1.50 bonus (committed) + 0.80 reward (paid); fees and cancelled entries are not earnings.
    assert by_name[confirmed.worker.pseudonym]["earnings"] == "2.30"
    assert by_name[confirmed.worker.pseudonym]["median_work_seconds"] == 180.0
