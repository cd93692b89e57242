"""The workforce page of a paid campaign: which platform account it uses, and the owner's
form for credentials of its own (write-only)."""

from __future__ import annotations

from typing import cast

import pytest
from django.contrib.auth.models import User
from django.test import Client

from campaigns.design.services import campaign_create
from campaigns.models import ProviderCredential
from campaigns.platforms.credentials import campaign_credentials_for
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

TOKEN = "lab-prolific-token-0123456789-XYZ"


@pytest.fixture
def prolific_campaign(requester):
    campaign = campaign_create(owner=requester, name="Lab study", slug="lab-study")
    campaign.provider = "prolific"
    campaign.save(update_fields=["provider"])
    return campaign


def test_owner_saves_replaces_and_removes_credentials(alice_client, prolific_campaign):
    page = alice_client.get("/campaigns/lab-study/workforce/")
    assert page.status_code == 200
    assert b"configured for\n        this qaportal" in page.content
    assert b'name="api_token"' in page.content

    saved = alice_client.post(
        "/campaigns/lab-study/workforce/credentials/", {"api_token": TOKEN}, follow=True
    )
    assert saved.status_code == 200
    assert TOKEN.encode() not in saved.content
    assert "…-XYZ".encode() in saved.content
    assert campaign_credentials_for(campaign_id=prolific_campaign.pk, provider="prolific") == {
        "api_token": TOKEN
    }

    bad = alice_client.post("/campaigns/lab-study/workforce/credentials/", {"api_token": "x y"})
    assert bad.status_code == 400
    assert b"does not look like a Prolific API token" in bad.content
    assert b'value="x y"' not in bad.content  # a secret typed in is never sent back
    assert ProviderCredential.objects.count() == 1

    url = "/campaigns/lab-study/workforce/credentials/remove/"
    asked = alice_client.post(url)
    assert b"deleted for good" in asked.content
    assert ProviderCredential.objects.count() == 1
    removed = alice_client.post(url, {"confirmed": "yes"}, follow=True)
    assert removed.status_code == 200
    assert not ProviderCredential.objects.exists()


def test_collaborators_see_the_account_but_cannot_change_it(prolific_campaign, bob_client):
    collaborator = cast(User, UserFactory(username="carol"))
    prolific_campaign.collaborators.add(collaborator)
    client = Client()
    client.force_login(collaborator)
    page = client.get("/campaigns/lab-study/workforce/")
    assert page.status_code == 200
    assert b"Only the campaign's owner" in page.content
    assert b'name="api_token"' not in page.content
    post = client.post("/campaigns/lab-study/workforce/credentials/", {"api_token": TOKEN})
    assert post.status_code == 403
    assert (
        bob_client.post(
            "/campaigns/lab-study/workforce/credentials/", {"api_token": TOKEN}
        ).status_code
        == 404
    )
    assert not ProviderCredential.objects.exists()
