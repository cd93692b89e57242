"""factory_boy factories for the domain model."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import factory
from django.contrib.auth.models import User
from django.utils import timezone

from campaigns.models import (
    HIT,
    Assignment,
    Campaign,
    Item,
    ItemSource,
    LedgerEntry,
    ProviderOperation,
    Stage,
    Worker,
)


class UserFactory(factory.django.DjangoModelFactory[User]):
    class Meta:
        model = User
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"requester{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.org")
    password = factory.django.Password("correct horse battery")


class CampaignFactory(factory.django.DjangoModelFactory[Campaign]):
    class Meta:
        model = Campaign

    name = factory.Sequence(lambda n: f"Campaign {n}")
    slug = factory.Sequence(lambda n: f"campaign-{n}")
    owner = factory.SubFactory(UserFactory)


class StageFactory(factory.django.DjangoModelFactory[Stage]):
    class Meta:
        model = Stage

    campaign = factory.SubFactory(CampaignFactory)
    name = factory.Sequence(lambda n: f"Stage {n}")
    position = factory.Sequence(lambda n: n)
    task_type = "question_writing"
    reward = Decimal("1.25")


class ItemFactory(factory.django.DjangoModelFactory[Item]):
    class Meta:
        model = Item

    stage = factory.SubFactory(StageFactory)
    external_id = factory.Sequence(lambda n: f"item-{n}")
    data = factory.LazyFunction(lambda: {"topic": "movies", "complexity_type": "count"})
    source = ItemSource.UPLOADED


class WorkerFactory(factory.django.DjangoModelFactory[Worker]):
    class Meta:
        model = Worker

    provider = "local"
    external_id = factory.Sequence(lambda n: f"A{n:012d}")


class HITFactory(factory.django.DjangoModelFactory[HIT]):
    class Meta:
        model = HIT

    stage = factory.SubFactory(StageFactory)
    provider = "local"
    reward = Decimal("1.25")


class AssignmentFactory(factory.django.DjangoModelFactory[Assignment]):
    class Meta:
        model = Assignment

    hit = factory.SubFactory(HITFactory)
    worker = factory.SubFactory(WorkerFactory)
    provider = "local"
    accepted_at = factory.LazyFunction(timezone.now)


class LedgerEntryFactory(factory.django.DjangoModelFactory[LedgerEntry]):
    class Meta:
        model = LedgerEntry

    campaign = factory.SubFactory(CampaignFactory)
    kind = "reward"
    amount = Decimal("1.00")
    key = factory.Sequence(lambda n: f"test:{n}")

    @classmethod
    def _create(cls, model_class: Any, *args: Any, **kwargs: Any) -> LedgerEntry:
        # Made here, not by ``payments.ledger`` (the ledger's one writer, which keeps the
        # ledger's running totals): recount the totals, as after any such load.
        from campaigns.payments.totals import ledger_totals_rebuild

        entry = super()._create(model_class, *args, **kwargs)
        ledger_totals_rebuild()
        return entry


class ProviderOperationFactory(factory.django.DjangoModelFactory[ProviderOperation]):
    class Meta:
        model = ProviderOperation

    provider = "mturk"
    kind = "create_hit"
    idempotency_key = factory.Sequence(lambda n: f"op-{n}")
