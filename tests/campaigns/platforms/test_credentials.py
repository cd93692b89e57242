"""A campaign's own platform credentials: encrypted at rest, owner-only, write-only,
and used by the provider operations and the sync of that campaign alone."""

from __future__ import annotations

import logging

import pytest
from cryptography.fernet import Fernet
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from campaigns.models import ProviderCredential
from campaigns.platforms.credentials import (
    CredentialsUnreadable,
    campaign_credentials_for,
    campaign_credentials_set,
    credentials_decrypt,
    credentials_encrypt,
)
from campaigns.platforms.prolific.studies import prolific_studies_sync
from campaigns.platforms.publishing import stage_provider_publish
from qaportal.errors import DomainError
from tests.campaigns.platforms.conftest import make_campaign
from tests.campaigns.platforms.test_prolific_flow import publish, work
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

OWN_TOKEN = "campaign-own-token-0123456789abcdef"


def _client(user) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


# --- Encryption ---------------------------------------------------------------------------


def test_round_trip_and_no_clear_text_at_rest(settings):
    settings.CREDENTIALS_KEYS = Fernet.generate_key().decode()
    token = credentials_encrypt({"api_token": OWN_TOKEN})
    assert OWN_TOKEN not in token
    assert credentials_decrypt(token) == {"api_token": OWN_TOKEN}


def test_rotation_keeps_old_ciphertexts_readable_and_a_lost_key_says_so(settings):
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.CREDENTIALS_KEYS = old
    token = credentials_encrypt({"api_token": OWN_TOKEN})
    settings.CREDENTIALS_KEYS = f"{new},{old}"
    assert credentials_decrypt(token) == {"api_token": OWN_TOKEN}
    # New ciphertexts are under the new key only.
    assert credentials_decrypt(credentials_encrypt({"a": "b"})) == {"a": "b"}
    settings.CREDENTIALS_KEYS = new
    with pytest.raises(CredentialsUnreadable, match="cannot be decrypted"):
        credentials_decrypt(token)


def test_default_key_is_derived_from_the_secret_key(settings):
    settings.CREDENTIALS_KEYS = ""
    token = credentials_encrypt({"api_token": OWN_TOKEN})
    assert credentials_decrypt(token) == {"api_token": OWN_TOKEN}
    settings.SECRET_KEY = "another-secret-key-entirely"
    with pytest.raises(CredentialsUnreadable):
        credentials_decrypt(token)


# --- Validation and permissions -----------------------------------------------------------


def test_values_are_validated_per_provider_without_echoing_them(requester, fake):
    campaign, _ = make_campaign(requester, provider="prolific", slug="creds-validate")
    with pytest.raises(DomainError) as info:
        campaign_credentials_set(
            campaign=campaign,
            actor=requester,
            values={"api_token": "short", "workspace_id": "not-hex", "region": "x"},
        )
    errors = info.value.errors
    assert set(errors) == {"api_token", "workspace_id", "region"}
    assert "short" not in str(errors)
    assert not ProviderCredential.objects.exists()

    mturk, _ = make_campaign(requester, provider="mturk", slug="creds-mturk")
    with pytest.raises(DomainError) as info:
        campaign_credentials_set(campaign=mturk, actor=requester, values={})
    assert set(info.value.errors) == {"access_key_id", "secret_access_key"}

    local, _ = make_campaign(requester, provider="local", slug="creds-local")
    with pytest.raises(DomainError, match="takes no credentials"):
        campaign_credentials_set(campaign=local, actor=requester, values={"api_token": "x"})


def test_api_is_owner_only_and_never_returns_a_value(requester, fake):
    campaign, _ = make_campaign(requester, provider="prolific", slug="creds-api")
    collaborator, stranger = UserFactory(username="carol"), UserFactory(username="dave")
    campaign.collaborators.add(collaborator)
    url = "/api/v1/campaigns/creds-api/credentials/"
    body = {"api_token": OWN_TOKEN, "workspace_id": "a" * 24}

    assert APIClient().put(url, body, format="json").status_code == 401
    assert _client(stranger).put(url, body, format="json").status_code == 404
    assert _client(collaborator).put(url, body, format="json").status_code == 403
    assert not ProviderCredential.objects.exists()

    owner = _client(requester)
    before = owner.get(url).json()
    assert before["configured"] is False
    assert before["source"] == "environment"
    response = owner.put(url, body, format="json")
    assert response.status_code == 200, response.content
    out = response.json()
    assert out["configured"] is True
    assert out["source"] == "campaign"
    assert out["hints"] == {"api_token": "…cdef", "workspace_id": "…aaaa"}
    assert out["updated_by"] == "alice"
    assert OWN_TOKEN not in response.content.decode()
    seen = _client(collaborator).get(url)
    assert seen.status_code == 200
    assert OWN_TOKEN not in seen.content.decode()
    row = ProviderCredential.objects.get()
    assert OWN_TOKEN not in row.ciphertext
    assert OWN_TOKEN not in repr(row) + str(row)

    bad = owner.put(url, {"api_token": ""}, format="json")
    assert bad.status_code == 400
    assert "api_token" in bad.json()["errors"]
    assert _client(collaborator).delete(url).status_code == 403
    assert owner.delete(url).status_code == 204
    assert not ProviderCredential.objects.exists()


# --- Used for that campaign only ----------------------------------------------------------


@pytest.fixture
def own_account(fake, settings):
    """The fake Prolific accepts only the campaign's token; the environment's is wrong."""
    fake.token = OWN_TOKEN
    settings.PROLIFIC_API_TOKEN = "environment-token-of-another-account"
    return fake


def test_operations_and_sync_act_with_the_campaigns_own_token(
    requester, own_account, client, caplog
):
    caplog.set_level(logging.DEBUG)
    campaign, stage = make_campaign(requester, provider="prolific", slug="creds-own")
    campaign_credentials_set(campaign=campaign, actor=requester, values={"api_token": OWN_TOKEN})
    study_id, _ = publish(stage, own_account)  # fails unless the campaign's token is sent
    assert study_id in own_account.state.studies
    work(client, own_account, study_id, stage)
    assert prolific_studies_sync() >= 1
    assert all(c.status != 401 for c in own_account.calls())
    assert OWN_TOKEN not in caplog.text


def test_without_own_credentials_the_environment_account_is_used(requester, own_account):
    other, stage = make_campaign(requester, provider="prolific", slug="creds-env")
    # The environment's token is not the account's: Prolific answers 401 (to the filters
    # catalogue the countries need), publishing is refused with its reason and nothing
    # is created.
    with pytest.raises(DomainError, match="401"):
        stage_provider_publish(stage=stage)
    assert any(c.status == 401 for c in own_account.calls())
    assert not own_account.state.studies
    assert campaign_credentials_for(campaign_id=other.pk, provider="prolific") is None


def test_unreadable_credentials_fail_the_operation_with_a_reason(requester, own_account, settings):
    campaign, stage = make_campaign(requester, provider="prolific", slug="creds-lost")
    settings.CREDENTIALS_KEYS = Fernet.generate_key().decode()
    campaign_credentials_set(campaign=campaign, actor=requester, values={"api_token": OWN_TOKEN})
    settings.CREDENTIALS_KEYS = Fernet.generate_key().decode()  # the key was lost
    with pytest.raises(DomainError, match="cannot be decrypted"):
        stage_provider_publish(stage=stage)
    assert not own_account.calls()
