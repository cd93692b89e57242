from __future__ import annotations

import pytest
from django.test import Client

from campaigns.design.services import campaign_create, stage_add


@pytest.fixture
def alice_client(requester) -> Client:
    client = Client()
    client.force_login(requester)
    return client


@pytest.fixture
def bob_client(other_requester) -> Client:
    client = Client()
    client.force_login(other_requester)
    return client


@pytest.fixture
def campaign(requester):
    """Alice's draft campaign, made through the service as the pages make it."""
    return campaign_create(owner=requester, name="Alice's Mintaka", slug="alice-mintaka")


@pytest.fixture
def stage(campaign):
    return stage_add(
        campaign=campaign,
        name="Write questions",
        task_type="question_writing",
        config={"questions_per_hit": 5},
    )
