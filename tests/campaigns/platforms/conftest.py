from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

import pytest
from django.core.cache import cache

from campaigns.design.services import campaign_create, campaign_transition, stage_add
from campaigns.models import CampaignState, Item, ItemSource, OperationState, ProviderOperation
from campaigns.platforms.operations import operation_execute
from campaigns.platforms.prolific.filters import catalogue_cache_key
from tests.campaigns.platforms.fake_mturk import FakeMTurk
from tests.campaigns.platforms.fake_prolific import FakeProlific

WEBHOOK_SECRET = "hook-secret-for-tests"


@pytest.fixture
def fake(settings) -> Iterator[FakeProlific]:
    with FakeProlific(token="test-token") as server:
        settings.PROLIFIC_API_TOKEN = "test-token"
        settings.PROLIFIC_API_URL = server.url
        settings.PROLIFIC_WORKSPACE_ID = "workspace-1"
        settings.PROLIFIC_BACKOFF_BASE = 0.01
        settings.PROLIFIC_TIMEOUT = 5
        settings.PROLIFIC_WEBHOOK_SECRET = WEBHOOK_SECRET
        settings.SITE_URL = "https://qaportal.example.org"
        settings.ROOT_URLCONF = "tests.campaigns.platforms.urls"
        # A new fake is a new Prolific: no filters catalogue cached from an earlier fake
        # that listened on the same (reused) port.
        cache.delete(catalogue_cache_key(server.url, "workspace-1"))
        yield server


@pytest.fixture
def mturk(settings) -> Iterator[FakeMTurk]:
    """A fake MTurk the real boto3 client talks to; botocore's own retries off (the
    provider's retries, with a tiny backoff, are what is exercised)."""
    with FakeMTurk() as server:
        settings.MTURK_ACCESS_KEY_ID = FakeMTurk.ACCESS_KEY
        settings.MTURK_SECRET_ACCESS_KEY = FakeMTurk.SECRET_KEY
        settings.MTURK_ENDPOINT_URL = server.url
        settings.MTURK_SANDBOX = True
        settings.MTURK_MAX_ATTEMPTS = 1
        settings.MTURK_RETRY_MODE = "standard"  # adaptive would pace the tests for real
        settings.MTURK_RETRIES = 8
        settings.MTURK_BACKOFF_BASE = 0.001
        settings.MTURK_TIMEOUT = 5
        settings.SITE_URL = "https://qaportal.example.org"
        yield server


def make_campaign(owner, *, provider: str, slug: str, items: int = 2, budget=None):
    campaign = campaign_create(owner=owner, name=f"Campaign {slug}", slug=slug)
    campaign.provider = provider
    campaign.currency = "GBP" if provider == "prolific" else "USD"
    campaign.budget_cap = budget
    campaign.save(update_fields=["provider", "currency", "budget_cap"])
    stage = stage_add(
        campaign=campaign,
        name="Write questions",
        task_type="question_writing",
        # £1.00 for 5 minutes: £12 an hour, above Prolific's minimum of £6.
        config={"questions_per_hit": 1, "estimated_minutes": 5},
    )
    stage.reward = Decimal("1.00")
    stage.qualification_requirements = [
        {"kind": "approval_rate", "min": 95},
        # Prolific's choice ids for countries; ISO codes on MTurk.
        {"kind": "locale", "countries": ["US", "CA"] if provider == "mturk" else ["1", "45"]},
    ]
    stage.save(update_fields=["reward", "qualification_requirements"])
    for n in range(items):
        Item.objects.create(
            stage=stage,
            external_id=f"cell-{n}",
            data={"topic": f"topic {n}", "complexity_type": "comparative"},
            source=ItemSource.UPLOADED,
        )
    campaign = campaign_transition(campaign=campaign, to_state=CampaignState.PILOT)
    return campaign, stage


@pytest.fixture
def prolific_stage(requester, fake):
    return make_campaign(requester, provider="prolific", slug="prolific-qa")


def run_operations(*, recover: bool = False) -> list[ProviderOperation]:
    """Execute every pending operation (what the Celery worker would do)."""
    done = []
    for pk in ProviderOperation.objects.filter(state=OperationState.PENDING).values_list(
        "pk", flat=True
    ):
        op = operation_execute(operation_id=pk, recover=recover)
        assert op is not None
        done.append(op)
    return done


FORM = {"questions/0/question": "Which river is longer?", "questions/0/answer": "The Nile"}


def execute(operation_id: int, *, recover: bool = False) -> ProviderOperation:
    """``operation_execute`` for tests: the operation (never None)."""
    op = operation_execute(operation_id=operation_id, recover=recover)
    assert op is not None
    return op
