"""Database constraints hold on PostgreSQL, whatever the code above them does."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import IntegrityError, connection, transaction

from campaigns.models import AssignmentStatus, Worker, worker_pseudonym
from tests.factories import (
    AssignmentFactory,
    CampaignFactory,
    HITFactory,
    ItemFactory,
    LedgerEntryFactory,
    ProviderOperationFactory,
    StageFactory,
    WorkerFactory,
)

pytestmark = pytest.mark.django_db


def test_runs_on_postgresql():
    assert connection.vendor == "postgresql"


def _rejected(factory, **kwargs) -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        factory.create(**kwargs)


def test_duplicate_worker_provider_id_rejected():
    WorkerFactory.create(provider="mturk", external_id="A1B2C3")
    _rejected(WorkerFactory, provider="mturk", external_id="A1B2C3")
    # The same id on another platform is another person.
    WorkerFactory.create(provider="prolific", external_id="A1B2C3")


def test_duplicate_hit_provider_id_rejected():
    HITFactory.create(provider="mturk", provider_hit_id="3XYZ")
    _rejected(HITFactory, provider="mturk", provider_hit_id="3XYZ")
    # Unpublished HITs have no provider id yet, and there may be many of them.
    HITFactory.create(provider="mturk", provider_hit_id=None)
    HITFactory.create(provider="mturk", provider_hit_id=None)


def test_duplicate_assignment_provider_id_rejected():
    AssignmentFactory.create(provider="mturk", provider_assignment_id="ASG1")
    _rejected(AssignmentFactory, provider="mturk", provider_assignment_id="ASG1")


def test_duplicate_operation_key_rejected():
    ProviderOperationFactory.create(provider="mturk", idempotency_key="create_hit:1")
    _rejected(ProviderOperationFactory, provider="mturk", idempotency_key="create_hit:1")


def test_failed_operation_needs_a_reason():
    _rejected(ProviderOperationFactory, state="failed", last_error="")
    ProviderOperationFactory.create(state="failed", last_error="HIT expired before approval")


@pytest.mark.parametrize(
    ("factory", "field"),
    [
        (LedgerEntryFactory, "amount"),
        (StageFactory, "reward"),
        (HITFactory, "reward"),
        (CampaignFactory, "budget_cap"),
    ],
)
def test_negative_money_rejected(factory, field):
    _rejected(factory, **{field: Decimal("-0.01")})


def test_ledger_key_is_unique():
    LedgerEntryFactory.create(key="reward:assignment:1")
    _rejected(LedgerEntryFactory, key="reward:assignment:1")


def test_one_holding_assignment_per_worker_per_hit():
    first = AssignmentFactory.create()
    _rejected(AssignmentFactory, hit=first.hit, worker=first.worker)
    # After returning the HIT, the worker may take it again.
    first.status = AssignmentStatus.RETURNED
    first.save()
    AssignmentFactory.create(hit=first.hit, worker=first.worker)


def test_item_external_id_unique_per_stage():
    item = ItemFactory.create(external_id="q1")
    _rejected(ItemFactory, stage=item.stage, external_id="q1")
    ItemFactory.create(external_id="q1")  # another stage


def test_produced_item_needs_its_assignment():
    _rejected(ItemFactory, source="produced", source_assignment=None)


def test_stage_positions_and_names_unique():
    stage = StageFactory.create()
    _rejected(StageFactory, campaign=stage.campaign, position=stage.position)
    _rejected(StageFactory, campaign=stage.campaign, name=stage.name)


def test_submitted_assignment_needs_submit_time():
    _rejected(AssignmentFactory, status=AssignmentStatus.SUBMITTED, submitted_at=None)


def test_worker_pseudonym_is_stable_and_hides_the_id():
    worker = WorkerFactory.create(provider="mturk", external_id="A3SECRETWORKER")
    assert worker.pseudonym == worker_pseudonym(provider="mturk", external_id="A3SECRETWORKER")
    assert "A3SECRETWORKER" not in worker.pseudonym
    assert "A3SECRETWORKER" not in str(worker)
    assert Worker.objects.get(pk=worker.pk).pseudonym == worker.pseudonym
