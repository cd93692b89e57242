"""A stage runs on Toy Crowd, a platform defined only in this folder: published, worked
through Toy Crowd's entry page, synced, approved, rejected, bonused, a worker blocked and
messaged, every platform call an operation carried out once."""

from __future__ import annotations

from decimal import Decimal
from typing import cast

import pytest
from django.core.exceptions import ValidationError

from campaigns.design.platform import (
    WorkerMessage,
    platform_for,
    platform_names,
    platform_register,
    platform_unregister,
)
from campaigns.models import (
    HIT,
    AssignmentStatus,
    CampaignState,
    HITStatus,
    LedgerEntry,
    LedgerKind,
    LedgerStatus,
    OperationKind,
    OperationState,
    ProviderOperation,
)
from campaigns.platforms import provider_for
from campaigns.platforms.credentials import campaign_credentials_set, credentials_validate
from campaigns.platforms.publishing import campaign_start
from campaigns.platforms.worker_actions import worker_block
from campaigns.tasks import platform_sync_task
from campaigns.work.decisions import assignment_approve, assignment_reject
from campaigns.work.lifecycle import hit_add_assignments
from qaportal.errors import DomainError
from qaportal.models import OutboxMessage
from tests.campaigns.platforms.conftest import run_operations
from tests.campaigns.platforms.toy_platform.conftest import (
    WEBHOOK_SECRET,
    toy_campaign,
    work_through_toy_crowd,
)
from tests.campaigns.platforms.toy_platform.platform import ToyPlatform
from tests.campaigns.platforms.toy_platform.provider import ToyProvider
from tests.campaigns.platforms.toy_platform.service import API_KEY

pytestmark = pytest.mark.django_db


def test_toy_crowd_is_a_registered_platform_with_its_own_pieces(toy):
    platform = platform_for("toy")
    assert "toy" in platform_names()
    assert isinstance(provider_for("toy"), ToyProvider)
    assert platform.fee_model().assignment_fee(
        reward=Decimal("1.00"), max_assignments=2
    ) == Decimal("0.10")
    assert platform.currency == "EUR"
    assert credentials_validate(provider="toy", values={"api_key": "own-key-123"}) == {
        "api_key": "own-key-123"
    }
    with pytest.raises(DomainError):
        credentials_validate(provider="toy", values={"api_key": "NOT A KEY"})


def test_a_stage_runs_on_toy_crowd_from_publish_to_message(toy, requester):
    campaign, stage = toy_campaign(requester)
    assert campaign.currency == "EUR"

    # Publish: the HITs wait for Toy Crowd, then open with its ids.
    campaign = campaign_start(campaign=campaign, to_state=CampaignState.PILOT)
    assert set(HIT.objects.filter(stage=stage).values_list("status", flat=True)) == {
        HITStatus.PENDING
    }
    run_operations()
    hits = list(HIT.objects.filter(stage=stage).order_by("pk"))
    assert {h.status for h in hits} == {HITStatus.PUBLISHED}
    assert {h.provider_hit_id for h in hits} == set(toy.hits)
    assert {h.provider_group_id for h in hits} == {f"toy-stage-{stage.pk}"}

    # Submit through Toy Crowd's entry page; the sync confirms who did the work.
    first = work_through_toy_crowd(toy, hits[0], "TW-ANNA")
    second = work_through_toy_crowd(toy, hits[0], "TW-BORIS")
    assert {first.status, second.status} == {AssignmentStatus.SUBMITTED}
    with pytest.raises(DomainError):  # not confirmed by Toy Crowd yet: nothing is paid
        assignment_approve(assignment=first, source="requester")
    assert platform_sync_task("toy") == {"toy": {"confirmed": 2}}

    # Approve and reject: operations carried out by Toy Crowd, then recorded.
    assignment_approve(assignment=first, source="requester")
    assignment_reject(
        assignment=second,
        decided_by=requester,
        source="requester",
        reason="Off topic",  # Toy Crowd takes a short message (its rules set no minimum)
    )
    first.refresh_from_db()
    assert first.status == AssignmentStatus.SUBMITTED  # until Toy Crowd has done it
    run_operations()
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.status, second.status) == (AssignmentStatus.APPROVED, AssignmentStatus.REJECTED)
    assert toy.assignments[first.provider_assignment_id].status == "approved"
    assert toy.assignments[second.provider_assignment_id].status == "rejected"
    reward = LedgerEntry.objects.filter(assignment=first, kind=LedgerKind.REWARD).get()
    fee = LedgerEntry.objects.filter(assignment=first, kind=LedgerKind.PLATFORM_FEE).get()
    assert (reward.amount, reward.status) == (Decimal("1.00"), LedgerStatus.PAID)
    assert (fee.amount, fee.status) == (Decimal("0.10"), LedgerStatus.PAID)

    # Bonus: paid once, however often it is asked and carried out.
    platform = platform_for(campaign)
    for _ in range(2):
        platform.bonus_pay(assignment=first, amount=Decimal("0.50"), reason="Great", key="b1")
    run_operations()
    run_operations()
    assert list(toy.bonuses.values()) == [Decimal("0.50")]
    bonus = LedgerEntry.objects.get(assignment=first, kind=LedgerKind.BONUS)
    assert (bonus.amount, bonus.status) == (Decimal("0.50"), LedgerStatus.PAID)
    bonus_fee = LedgerEntry.objects.get(assignment=first, kind=LedgerKind.BONUS_FEE)
    assert bonus_fee.amount == Decimal("0.05")

    # Block: on Toy Crowd too, so the worker gets no new place there or here.
    _, op = worker_block(campaign=campaign, actor=requester, worker=second.worker, reason="Spam")
    run_operations()
    op.refresh_from_db()
    assert op.state == OperationState.DONE
    assert toy.blocked == {"TW-BORIS"}

    # Message: sent by Toy Crowd to the workers named.
    platform.workers_message(
        campaign=campaign,
        actor=requester,
        message=WorkerMessage(
            workers=[first.worker], subject="Thanks", body="Round two opens tomorrow.", key="m1"
        ),
    )
    run_operations()
    assert toy.messages == [
        {"workers": ["TW-ANNA"], "subject": "Thanks", "body": "Round two opens tomorrow."}
    ]

    # Every call went through an operation, done once.
    kinds = ProviderOperation.objects.filter(provider="toy").values_list("kind", "state")
    assert sorted(kinds) == sorted(
        [
            (OperationKind.CREATE_HIT, OperationState.DONE),
            (OperationKind.APPROVE, OperationState.DONE),
            (OperationKind.REJECT, OperationState.DONE),
            (OperationKind.BONUS, OperationState.DONE),
            (OperationKind.BLOCK, OperationState.DONE),
            (OperationKind.NOTIFY, OperationState.DONE),
        ]
    )


def test_more_places_are_asked_of_toy_crowd(toy, requester):
    campaign, stage = toy_campaign(requester, items=1)
    campaign_start(campaign=campaign, to_state=CampaignState.PILOT)
    run_operations()
    hit = HIT.objects.get(stage=stage)
    hit_add_assignments(hit=hit, count=3, reason="escalation", key="more:1")
    hit.refresh_from_db()
    assert hit.max_assignments == 2  # not before Toy Crowd added them
    run_operations()
    hit.refresh_from_db()
    assert hit.max_assignments == 5
    assert toy.hits[hit.provider_hit_id]["max"] == 5


def test_a_refusal_by_toy_crowd_fails_the_operation_with_its_reason(toy, requester, settings):
    campaign, _ = toy_campaign(requester, items=1)
    campaign_start(campaign=campaign, to_state=CampaignState.PILOT)
    settings.TOY_API_KEY = "wrong-key-000"
    (op,) = run_operations()
    assert op.state == OperationState.FAILED
    assert "invalid API key" in op.last_error


def test_a_campaigns_own_credentials_are_used(toy, requester):
    campaign, _ = toy_campaign(requester, items=1)
    campaign_credentials_set(campaign=campaign, actor=requester, values={"api_key": "own-key-123"})
    assert cast(ToyProvider, provider_for("toy", campaign_id=campaign.pk)).api_key == "own-key-123"
    assert cast(ToyProvider, provider_for("toy")).api_key == API_KEY  # the environment's


def test_the_webhook_queues_a_sync_of_toy_crowd(toy, client):
    refused = client.post("/work/toy/hooks/", {}, headers={"X-Toy-Secret": "guess"})
    assert refused.status_code == 403
    accepted = client.post("/work/toy/hooks/", {}, headers={"X-Toy-Secret": WEBHOOK_SECRET})
    assert accepted.status_code == 202
    message = OutboxMessage.objects.get()
    assert (message.task, message.args) == ("campaigns.platform_sync", ["toy", None])


def test_the_models_accept_toy_crowd_only_while_it_is_registered(toy, requester):
    campaign, _ = toy_campaign(requester, items=0)
    campaign.full_clean()
    platform_unregister("toy")
    try:
        with pytest.raises(ValidationError):
            campaign.full_clean()
    finally:
        platform_register(ToyPlatform())
