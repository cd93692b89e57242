"""The requester's model endpoints page: add, edit (the key kept unless replaced), test,
delete; the key never shown."""

from __future__ import annotations

import pytest

from campaigns.assist.endpoints import endpoint_key
from campaigns.models import ModelEndpoint
from tests.campaigns.assist.fake_openai import FakeOpenAI

pytestmark = pytest.mark.django_db

KEY = "sk-page-0123456789abcdef"
FORM = {
    "name": "lab vLLM",
    "kind": "openai",
    "base_url": "",
    "model": "fake-model-7b",
    "api_key": KEY,
    "prompt_template": "",
    "timeout_seconds": "2",
    "concurrency": "2",
    "price_in_per_1k": "0.0005",
    "price_out_per_1k": "0.0015",
    "currency": "USD",
}


def test_add_test_edit_and_delete_an_endpoint(alice_client):
    page = alice_client.get("/model-endpoints/")
    assert page.status_code == 200
    assert b"No endpoints yet" in page.content
    assert b'name="api_key"' in page.content
    with FakeOpenAI(api_key=KEY) as fake:
        added = alice_client.post(
            "/model-endpoints/", {**FORM, "base_url": fake.base_url}, follow=True
        )
        assert added.status_code == 200
        assert KEY.encode() not in added.content
        assert "…cdef".encode() in added.content
        endpoint = ModelEndpoint.objects.get()
        tested = alice_client.post(f"/model-endpoints/{endpoint.pk}/test/", follow=True)
        assert b"answered in" in tested.content
        assert b"fake-model-7b fp_fake_0001" in tested.content
        fake.fail("429", retry_after="2")
        limited = alice_client.post(f"/model-endpoints/{endpoint.pk}/test/", follow=True)
        assert b"gave no answer (HTTP 429" in limited.content

    edit = alice_client.get(f"/model-endpoints/{endpoint.pk}/")
    assert edit.status_code == 200
    assert KEY.encode() not in edit.content
    saved = alice_client.post(
        f"/model-endpoints/{endpoint.pk}/",
        {**FORM, "base_url": "http://127.0.0.1:8000/v1", "api_key": "", "concurrency": "3"},
    )
    assert saved.status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.concurrency == 3
    assert endpoint_key(endpoint=endpoint) == KEY

    bad = alice_client.post("/model-endpoints/", {**FORM, "name": "other", "base_url": ""})
    assert bad.status_code == 400
    assert b"Required for an OpenAI-compatible endpoint" in bad.content
    assert KEY.encode() not in bad.content  # a secret typed in is never sent back

    asked = alice_client.post(f"/model-endpoints/{endpoint.pk}/delete/")
    assert b"deleted for good" in asked.content
    alice_client.post(f"/model-endpoints/{endpoint.pk}/delete/", {"confirmed": "yes"})
    assert not ModelEndpoint.objects.exists()


def test_a_baseline_needs_no_url_and_others_cannot_see_it(alice_client, bob_client):
    form = {**FORM, "kind": "baseline_bm25", "model": "", "api_key": ""}
    assert alice_client.post("/model-endpoints/", form).status_code == 302
    endpoint = ModelEndpoint.objects.get()
    tested = alice_client.post(f"/model-endpoints/{endpoint.pk}/test/", follow=True)
    assert b"Paris is the capital of France." in tested.content
    assert b"lab vLLM" not in bob_client.get("/model-endpoints/").content
    assert bob_client.get(f"/model-endpoints/{endpoint.pk}/").status_code == 404
    assert bob_client.post(f"/model-endpoints/{endpoint.pk}/test/").status_code == 404
