"""Fixtures for the API tests: two requesters' campaigns, a collaborator, staff."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from campaigns.models import Campaign, Item, Stage
from tests.factories import CampaignFactory, ItemFactory, StageFactory, UserFactory


@pytest.fixture
def client_for(db) -> Callable[[User], APIClient]:
    """Make an API client that authenticates as a user with a DRF token."""

    def make(user: User) -> APIClient:
        client = APIClient()
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
        return client

    return make


@pytest.fixture
def campaign(requester) -> Campaign:
    return CampaignFactory.create(owner=requester, slug="alpha", name="Alpha")


@pytest.fixture
def stage(campaign) -> Stage:
    return StageFactory.create(campaign=campaign, name="Write questions", position=0)


@pytest.fixture
def item(stage) -> Item:
    return ItemFactory.create(stage=stage, external_id="a-1")


@pytest.fixture
def other_campaign(other_requester) -> Campaign:
    return CampaignFactory.create(owner=other_requester, slug="bravo", name="Bravo")


@pytest.fixture
def other_stage(other_campaign) -> Stage:
    return StageFactory.create(campaign=other_campaign, name="Bob's stage", position=0)


@pytest.fixture
def other_item(other_stage) -> Item:
    return ItemFactory.create(stage=other_stage, external_id="b-1")


@pytest.fixture
def collaborator(campaign) -> User:
    user = UserFactory.create(username="carol")
    campaign.collaborators.add(user)
    return user


@pytest.fixture
def collaborator_client(collaborator, client_for) -> APIClient:
    return client_for(collaborator)


@pytest.fixture
def staff_client(client_for) -> APIClient:
    return client_for(UserFactory.create(username="sam", is_staff=True))
