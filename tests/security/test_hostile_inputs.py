"""Bad input a hostile tester sent, each answered 4xx with a clear message (JSON under
/api/, never a 500 page): deep JSON, NUL and lone surrogates, integers out of range,
non-finite export ratios, over-long free text, loose bonus amounts and the bonus
ceiling, a retried bonus without an Idempotency-Key; and a real 500 comes back as JSON."""

from __future__ import annotations

from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from campaigns.models import LedgerEntry
from tests.campaigns.api.test_workers_api import team
from tests.factories import CampaignFactory, StageFactory

__all__ = ["team"]

pytestmark = pytest.mark.django_db


@pytest.fixture
def client(token_client) -> APIClient:
    token_client.raise_request_exception = False
    return token_client


@pytest.fixture
def stage(requester):
    return StageFactory.create(campaign=CampaignFactory.create(owner=requester, slug="hostile"))


def _json_400(response, *words: str) -> dict:
    assert response.status_code == 400, response.content[:300]
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    text = str(body)
    for word in words:
        assert word in text, (word, text)
    return body


@pytest.mark.parametrize("depth", [5_000, 50_000])
def test_deeply_nested_json_is_400(client, depth):
    body = "[" * depth + "]" * depth
    _json_400(client.post("/api/v1/campaigns/", body, content_type="application/json"), "nested")
    obj = '{"a":' * depth + "1" + "}" * depth
    _json_400(client.post("/api/v1/campaigns/", obj, content_type="application/json"), "nested")


def test_brackets_inside_strings_do_not_count_as_nesting(client):
    body = '{"name": "' + "[" * 150 + '", "provider": "local"}'
    response = client.post("/api/v1/campaigns/", body, content_type="application/json")
    assert response.status_code == 201, response.content


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ('{"config": {"instructions": "a\\u0000b"}}', ["config/instructions", "NUL"]),
        ('{"config": {"instructions": "a\\ud800b"}}', ["config/instructions", "surrogate"]),
        ('{"config": {"x\\u0000": 1}}', ["config", "NUL"]),
    ],
)
def test_unstorable_text_in_a_stage_config_is_400(client, stage, raw, words):
    response = client.patch(f"/api/v1/stages/{stage.pk}/", raw, content_type="application/json")
    _json_400(response, *words)


def test_integer_out_of_range_is_400(client, stage):
    response = client.post(
        "/api/v1/campaigns/hostile/invites/", {"max_uses": 1_000_000_000_000}, format="json"
    )
    _json_400(response, "max_uses")


def test_non_finite_ratios_are_400(client, stage):
    for ratios in ("0.7,0.1,nan", "0.7,0.1,inf", "0.7,0.1,-Infinity"):
        response = client.get(f"/api/v1/campaigns/hostile/exports/mintaka/?ratios={ratios}")
        _json_400(response, "ratios")


def test_campaign_description_has_a_length_limit(client):
    response = client.post(
        "/api/v1/campaigns/",
        {"name": "Long", "provider": "local", "description": "d" * 10_001},
        format="json",
    )
    _json_400(response, "description", "10000")


def test_an_unexpected_error_under_api_is_json(client, monkeypatch):
    from campaigns.api import campaigns as campaigns_api

    def boom(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(campaigns_api.CampaignListCreateApi, "get", boom)
    response = client.get("/api/v1/campaigns/")
    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert "boom" not in response.content.decode()
    assert response.json()["code"] == "error"


@pytest.mark.parametrize(
    "amount", ["1_000", "1e2", "\uff11\uff12", "+5", " 1 . 0", "0x10", "5.", 5.5]
)
def test_bonus_amount_must_be_plain_decimal(team, token_client, amount):
    good = team[2]
    response = token_client.post(
        f"/api/v1/assignments/{good.pk}/bonus/", {"amount": amount, "reason": "x"}, format="json"
    )
    _json_400(response, "amount", "plain decimal")
    assert not LedgerEntry.objects.filter(kind="bonus").exists()


def test_bonus_ceiling_per_campaign(team, token_client, django_capture_on_commit_callbacks):
    campaign, _, good, _, _ = team
    url = f"/api/v1/assignments/{good.pk}/bonus/"
    over_default = token_client.post(url, {"amount": "100.01", "reason": "x"}, format="json")
    _json_400(over_default, "ceiling of 100.00")
    patched = token_client.patch(
        f"/api/v1/campaigns/{campaign.slug}/", {"bonus_max": "2.00"}, format="json"
    )
    assert patched.status_code == 200, patched.content
    assert patched.json()["bonus_max"] == "2.00"
    _json_400(token_client.post(url, {"amount": "2.01", "reason": "x"}, format="json"), "2.00")
    with django_capture_on_commit_callbacks(execute=True):
        paid = token_client.post(url, {"amount": "2.00", "reason": "x"}, format="json")
    assert paid.status_code == 201
    assert LedgerEntry.objects.get(kind="bonus").amount == Decimal("2.00")


def test_a_retried_bonus_without_a_key_pays_once(
    team, token_client, django_capture_on_commit_callbacks
):
    good = team[2]
    url = f"/api/v1/assignments/{good.pk}/bonus/"
    body = {"amount": "0.75", "reason": "Thorough"}
    with django_capture_on_commit_callbacks(execute=True):
        first = token_client.post(url, body, format="json")
        again = token_client.post(url, body, format="json")
    assert first.status_code == again.status_code == 201
    assert first.json()["operation"] == again.json()["operation"]
    assert LedgerEntry.objects.filter(kind="bonus").count() == 1
    # A different bonus (another reason) is another payment.
    with django_capture_on_commit_callbacks(execute=True):
        other = token_client.post(url, {**body, "reason": "Extra round"}, format="json")
    assert other.json()["operation"] != first.json()["operation"]
    assert LedgerEntry.objects.filter(kind="bonus").count() == 2


def test_a_retry_just_past_a_window_still_pays_once(
    team, token_client, monkeypatch, settings, django_capture_on_commit_callbacks
):
    from campaigns.payments import bonus_keys

    settings.BONUS_NATURAL_KEY_SECONDS = 600
    good = team[2]
    url = f"/api/v1/assignments/{good.pk}/bonus/"
    body = {"amount": "0.30", "reason": "Careful"}
    monkeypatch.setattr(bonus_keys.time, "time", lambda: 600 * 1000 + 599)
    with django_capture_on_commit_callbacks(execute=True):
        first = token_client.post(url, body, format="json")
    monkeypatch.setattr(bonus_keys.time, "time", lambda: 600 * 1001 + 1)
    with django_capture_on_commit_callbacks(execute=True):
        again = token_client.post(url, body, format="json")
    assert first.json()["operation"] == again.json()["operation"]
    assert LedgerEntry.objects.filter(kind="bonus").count() == 1


def test_a_stage_may_name_only_its_owners_qualification_types(
    client, stage, requester, other_requester
):
    from campaigns.models import QualificationType

    mine = QualificationType.objects.create(owner=requester, name="Mine", kind="quiz")
    theirs = QualificationType.objects.create(owner=other_requester, name="Bob's", kind="quiz")
    url = f"/api/v1/stages/{stage.pk}/"
    for bad, words in (
        (theirs.pk, [str(theirs.pk)]),
        (999_999, ["999999"]),
        ("1", ["integer"]),
    ):
        response = client.patch(
            url, {"qualification_requirements": [{"qualification_type_id": bad}]}, format="json"
        )
        _json_400(response, "qualification", *words)
    stage.refresh_from_db()
    assert stage.qualification_requirements == []
    ok = client.patch(
        url, {"qualification_requirements": [{"qualification_type_id": mine.pk}]}, format="json"
    )
    assert ok.status_code == 200, ok.content
    added = client.post(
        "/api/v1/campaigns/hostile/stages/",
        {
            "name": "Second",
            "task_type": stage.task_type,
            "qualification_requirements": [{"qualification_type_id": theirs.pk}],
        },
        format="json",
    )
    _json_400(added, str(theirs.pk))


def test_upload_errors_quote_only_a_short_prefix_of_the_bad_value(client, stage):
    huge = "Q" * 100_000
    upload = f"id,topic,complexity_type\n{'i' * 300},{huge},nonsense\n".encode()
    response = client.post(
        f"/api/v1/stages/{stage.pk}/items/upload/", upload, content_type="text/csv"
    )
    body = _json_400(response)
    assert len(response.content) < 5_000
    for error in body["errors"]:
        assert len(error["message"]) <= 300
        assert "Q" * 41 not in error["message"]
