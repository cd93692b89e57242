"""/api/v1/model-endpoints/: a requester's endpoints, the key write-only and encrypted."""

from __future__ import annotations

import logging

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from campaigns.assist.calls import model_call_request
from campaigns.assist.endpoints import endpoint_key
from campaigns.models import ModelEndpoint
from tests.campaigns.assist.fake_openai import FakeOpenAI
from tests.factories import CampaignFactory, ItemFactory, StageFactory

pytestmark = pytest.mark.django_db

KEY = "sk-secret-0123456789abcdef"
URL = "/api/v1/model-endpoints/"


def _client(user) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def test_create_list_update_delete_never_show_the_key(token_client, requester, caplog):
    caplog.set_level(logging.DEBUG)
    created = token_client.post(
        URL,
        {
            "name": "local vLLM",
            "kind": "openai",
            "base_url": "http://127.0.0.1:8000/v1",
            "model": "qwen2.5-7b-instruct",
            "api_key": KEY,
            "prompt_templates": {"default": "Q: {question}\nPassage: {context}"},
            "timeout_seconds": "8",
            "concurrency": 2,
            "price_in_per_1k": "0.0005",
            "price_out_per_1k": "0.0015",
            "currency": "eur",
        },
        format="json",
    )
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["key_set"] is True
    assert body["key_hint"] == "…cdef"
    assert body["currency"] == "EUR"
    assert body["price_in_per_1k"] == "0.000500"
    assert "api_key" not in body
    assert "key_ciphertext" not in body
    endpoint = ModelEndpoint.objects.get()
    assert KEY not in endpoint.key_ciphertext
    assert endpoint_key(endpoint=endpoint) == KEY
    listed = token_client.get(URL).json()
    assert listed["count"] == 1
    assert listed["results"][0]["name"] == "local vLLM"
    detail = f"{URL}{endpoint.pk}/"
    patched = token_client.patch(detail, {"concurrency": 5, "api_key": ""}, format="json")
    assert patched.status_code == 200
    assert patched.json()["concurrency"] == 5
    assert patched.json()["key_set"] is False
    assert token_client.delete(detail).status_code == 204
    assert not ModelEndpoint.objects.exists()
    assert KEY not in caplog.text


def test_bad_input_names_the_fields(token_client):
    answer = token_client.post(
        URL,
        {
            "name": "x",
            "kind": "openai",
            "timeout_seconds": "0",
            "price_in_per_1k": 0.5,
            "concurrency": 0,
            "prompt_templates": {"default": "no placeholder"},
            "extra": 1,
        },
        format="json",
    )
    assert answer.status_code == 400
    errors = answer.json()["errors"]
    assert {
        "timeout_seconds",
        "price_in_per_1k",
        "concurrency",
        "prompt_templates",
        "extra",
    } <= set(errors)
    incomplete = token_client.post(URL, {"name": "y", "kind": "openai"}, format="json")
    assert incomplete.status_code == 400
    assert set(incomplete.json()["errors"]) == {"base_url", "model"}
    token_client.post(URL, {"name": "b", "kind": "baseline_bm25"}, format="json")
    again = token_client.post(URL, {"name": "b", "kind": "baseline_bm25"}, format="json")
    assert again.status_code == 400
    assert "name" in again.json()["errors"]


def test_others_endpoints_are_invisible(token_client, other_requester):
    theirs = _client(other_requester).post(
        URL, {"name": "t", "kind": "baseline_bm25"}, format="json"
    )
    endpoint_id = theirs.json()["id"]
    assert token_client.get(URL).json()["count"] == 0
    for method in ("get", "patch", "delete"):
        assert getattr(token_client, method)(f"{URL}{endpoint_id}/").status_code == 404
    assert token_client.post(f"{URL}{endpoint_id}/test/").status_code == 404
    assert APIClient().get(URL).status_code in (401, 403)


def test_an_endpoint_that_answered_cannot_be_deleted(token_client, requester):
    endpoint_id = token_client.post(
        URL, {"name": "b", "kind": "baseline_bm25"}, format="json"
    ).json()["id"]
    item = ItemFactory.create(stage=StageFactory(campaign=CampaignFactory(owner=requester)))
    model_call_request(
        endpoint_id=endpoint_id, purpose="adversarial", item_id=item.pk, question="q"
    )
    answer = token_client.delete(f"{URL}{endpoint_id}/")
    assert answer.status_code == 400
    assert ModelEndpoint.objects.filter(pk=endpoint_id).exists()


def test_the_test_action_asks_the_endpoint_within_its_timeout(token_client):
    with FakeOpenAI(api_key=KEY) as fake:
        endpoint_id = token_client.post(
            URL,
            {
                "name": "f",
                "kind": "openai",
                "base_url": fake.base_url,
                "model": "m",
                "api_key": KEY,
            },
            format="json",
        ).json()["id"]
        answer = token_client.post(f"{URL}{endpoint_id}/test/").json()
        assert answer["ok"] is True
        assert answer["answer"] == "Paris"
        assert answer["model_id"] == "fake-model-7b"
        assert answer["model_version"] == "fp_fake_0001"
        fake.fail("500", times=1)
        failed = token_client.post(f"{URL}{endpoint_id}/test/").json()
        assert failed["ok"] is False
        assert "HTTP 500" in failed["error"]
    baseline_id = token_client.post(
        URL, {"name": "b", "kind": "baseline_bm25"}, format="json"
    ).json()["id"]
    answer = token_client.post(f"{URL}{baseline_id}/test/").json()
    assert answer["ok"] is True
    assert answer["answer"] == "Paris is the capital of France."
