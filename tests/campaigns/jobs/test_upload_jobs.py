"""Large item uploads as background jobs: 202 and a job, the items stored all or
nothing by the worker, a bad file's errors on the job with nothing stored."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from campaigns.models import CampaignState, Item, Job
from tests.factories import CampaignFactory, StageFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def client(requester) -> APIClient:
    client = APIClient()
    client.credentials(
        HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=requester)[0].key}"
    )
    return client


@pytest.fixture
def stage(requester):
    return StageFactory.create(campaign=CampaignFactory.create(owner=requester, slug="up"))


def _csv(rows: int, bad_row: int | None = None) -> bytes:
    lines = ["id,topic,complexity_type"]
    for n in range(rows):
        lines.append(f"q{n},,count" if n == bad_row else f"q{n},movies,count")
    return ("\n".join(lines) + "\n").encode()


def _post(client, stage, content, capture):
    with capture(execute=True):
        return client.post(
            f"/api/v1/stages/{stage.pk}/items/upload/", content, content_type="text/csv"
        )


def test_a_large_upload_is_a_job_that_stores_every_row(
    client, stage, settings, django_capture_on_commit_callbacks
):
    settings.ITEM_UPLOAD_INLINE_MAX_BYTES = 1000
    response = _post(client, stage, _csv(3000), django_capture_on_commit_callbacks)
    assert response.status_code == 202, response.content
    job = client.get(response["Location"]).json()
    assert job["kind"] == "upload"
    assert job["status"] == "done", job
    assert job["row_count"] == 3000 == job["result"]["created"]
    assert Item.objects.filter(stage=stage).count() == 3000
    assert Item.objects.filter(stage=stage, upload_batch=job["result"]["batch"]).count() == 3000
    assert job["download_url"] is None


def test_a_bad_large_upload_stores_nothing_and_says_why(
    client, stage, settings, django_capture_on_commit_callbacks
):
    settings.ITEM_UPLOAD_INLINE_MAX_BYTES = 1000
    response = _post(client, stage, _csv(3000, bad_row=2500), django_capture_on_commit_callbacks)
    job = client.get(response["Location"]).json()
    assert job["status"] == "failed"
    assert "Nothing from" in job["error"]
    assert job["errors"][0]["row"] == 2502
    assert not Item.objects.filter(stage=stage).exists()


def test_an_id_the_stage_holds_fails_the_job_naming_its_row(
    client, stage, settings, django_capture_on_commit_callbacks
):
    settings.ITEM_UPLOAD_INLINE_MAX_BYTES = 1000
    Item.objects.create(stage=stage, external_id="q2900", data={"topic": "t"})
    response = _post(client, stage, _csv(3000), django_capture_on_commit_callbacks)
    job = client.get(response["Location"]).json()
    assert job["status"] == "failed"
    assert [(e["row"], e["field"]) for e in job["errors"]] == [(2902, "id")]
    assert "'q2900'" in job["errors"][0]["message"]
    assert Item.objects.filter(stage=stage).count() == 1


def test_small_uploads_stay_in_the_request(client, stage, django_capture_on_commit_callbacks):
    response = _post(client, stage, _csv(3), django_capture_on_commit_callbacks)
    assert response.status_code == 201
    assert response.json()["created"] == 3
    assert not Job.objects.exists()


def test_a_closed_campaign_refuses_before_the_file_is_kept(
    client, stage, settings, django_capture_on_commit_callbacks
):
    settings.ITEM_UPLOAD_INLINE_MAX_BYTES = 1000
    type(stage.campaign).objects.filter(pk=stage.campaign_id).update(state=CampaignState.COMPLETED)
    response = _post(client, stage, _csv(3000), django_capture_on_commit_callbacks)
    assert response.status_code == 400
    assert "completed" in response.json()["detail"]
    assert not Job.objects.exists()
