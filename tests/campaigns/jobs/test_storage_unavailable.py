"""The object store unavailable (boto3's errors, as the S3 client raises them when the
store refuses connections or answers 5xx): a job waits for it and finishes on the same
attempt, or goes back to the queue past ``JOB_STORAGE_RETRY_SECONDS`` and finishes on
the next; a finished upload whose input cannot be deleted stays done; requests that
need the store answer 503 with ``Retry-After`` and record nothing; a store that refuses
for good (a missing key) still fails the job. The real outage, with moto's server
killed, is tests/reliability/test_object_store_outage.py."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from campaigns import jobs as job_service
from campaigns.models import Item, Job, JobStatus
from qaportal.errors import storage_unavailable
from tests.factories import CampaignFactory, StageFactory

pytestmark = pytest.mark.django_db

DOWN = EndpointConnectionError(endpoint_url="http://store:9000/bucket")


def _client(user: Any) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


@pytest.fixture
def stage(requester):
    return StageFactory.create(campaign=CampaignFactory.create(owner=requester, slug="store"))


@pytest.fixture(autouse=True)
def quick(settings, monkeypatch):
    settings.ITEM_UPLOAD_INLINE_MAX_BYTES = 1000
    monkeypatch.setattr(job_service.time, "sleep", lambda seconds: None)


def _csv(rows: int) -> bytes:
    return (
        "id,topic,complexity_type\n" + "".join(f"q{n},movies,count\n" for n in range(rows))
    ).encode()


def _failing(real: Any, failures: int) -> Any:
    """``real``, raising the store's connection error the first ``failures`` calls."""
    calls = {"n": 0}

    def call(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] <= failures:
            raise DOWN
        return real(*args, **kwargs)

    return call


def _upload_job(stage, requester, monkeypatch) -> Job:
    monkeypatch.setattr(job_service, "_dispatch", lambda job_id: None)
    return job_service.job_upload_start(
        stage=stage, content=_csv(300), filename="items.csv", actor=requester
    )


def test_what_counts_as_unavailable():
    assert storage_unavailable(DOWN)
    slow = ClientError({"Error": {"Code": "SlowDown"}, "ResponseMetadata": {}}, "PutObject")
    assert storage_unavailable(slow)
    five = ClientError({"Error": {}, "ResponseMetadata": {"HTTPStatusCode": 503}}, "GetObject")
    assert storage_unavailable(five)
    missing = ClientError({"Error": {"Code": "404"}, "ResponseMetadata": {}}, "HeadObject")
    assert not storage_unavailable(missing)
    assert not storage_unavailable(OSError("disk full"))


def test_an_upload_job_waits_for_the_store_on_the_same_attempt(stage, requester, monkeypatch):
    job = _upload_job(stage, requester, monkeypatch)
    storage = job_service.default_storage
    monkeypatch.setattr(storage, "open", _failing(storage.open, 3))
    assert job_service.job_run(job_id=job.id) == "done"
    job.refresh_from_db()
    assert job.attempt == 1
    assert Item.objects.filter(stage=stage).count() == 300


def test_a_stored_upload_stays_done_when_its_input_cannot_be_deleted(stage, requester, monkeypatch):
    job = _upload_job(stage, requester, monkeypatch)
    monkeypatch.setattr(job_service.default_storage, "delete", _failing(lambda name: None, 99))
    assert job_service.job_run(job_id=job.id) == "done"
    job.refresh_from_db()
    assert job.status == JobStatus.DONE
    assert job.error == ""
    assert Item.objects.filter(stage=stage).count() == 300


def test_past_the_wait_the_job_goes_back_to_the_queue_and_finishes_next_time(
    stage, requester, monkeypatch, settings
):
    job = _upload_job(stage, requester, monkeypatch)
    settings.JOB_STORAGE_RETRY_SECONDS = 0
    storage = job_service.default_storage
    monkeypatch.setattr(storage, "open", _failing(storage.open, 1))
    assert job_service.job_run(job_id=job.id) == "queued"
    assert not Item.objects.filter(stage=stage).exists()
    settings.JOB_REDISPATCH_SECONDS = 0
    sent: list[Any] = []
    monkeypatch.setattr(job_service, "_dispatch", sent.append)
    assert job_service.jobs_reconcile() == 1
    assert job_service.job_run(job_id=sent[0]) == "done"
    job.refresh_from_db()
    assert job.attempt == 2
    assert Item.objects.filter(stage=stage).count() == 300


def test_an_export_waits_for_the_store_to_save_its_file(requester, monkeypatch):
    campaign = CampaignFactory.create(owner=requester, slug="store-export")
    StageFactory.create(campaign=campaign, position=0)
    monkeypatch.setattr(job_service, "_dispatch", lambda job_id: None)
    job = job_service.job_export_start(
        campaign=campaign, export_format="csv", actor=requester, download_name="x.csv"
    )
    storage = job_service.default_storage
    monkeypatch.setattr(storage, "save", _failing(storage.save, 2))
    assert job_service.job_run(job_id=job.id) == "done"
    job.refresh_from_db()
    assert job.attempt == 1
    assert job.row_count is not None
    with storage.open(job.file_name, "rb") as handle:
        assert handle.read().count(b"\n") == job.row_count + 1


def test_a_file_the_store_refuses_for_good_still_fails_the_job(stage, requester, monkeypatch):
    job = _upload_job(stage, requester, monkeypatch)
    job_service.default_storage.delete(job.input_name)  # gone: FileNotFoundError
    assert job_service.job_run(job_id=job.id) == "failed"


def test_requests_that_need_the_store_answer_503_and_record_nothing(stage, requester, monkeypatch):
    client = _client(requester)
    storage = job_service.default_storage
    monkeypatch.setattr(storage, "save", _failing(storage.save, 99))
    response = client.post(
        f"/api/v1/stages/{stage.pk}/items/upload/", _csv(300), content_type="text/csv"
    )
    assert response.status_code == 503, response.content
    assert response["Retry-After"] == "10"
    assert response.json()["code"] == "storage_unavailable"
    assert not Job.objects.exists()
    monkeypatch.undo()
    monkeypatch.setattr(job_service, "_dispatch", lambda job_id: None)
    job = job_service.job_export_start(
        campaign=stage.campaign, export_format="csv", actor=requester, download_name="x.csv"
    )
    assert job_service.job_run(job_id=job.id) == "done"
    monkeypatch.setattr(storage, "open", _failing(storage.open, 99))
    download = client.get(f"/api/v1/jobs/{job.id}/download/")
    assert download.status_code == 503
    assert download["Retry-After"] == "10"
    page = APIClient()
    page.force_login(requester)
    assert page.get(f"/jobs/{job.id}/download/").status_code == 503


def test_a_job_sent_back_too_often_fails_with_a_message(stage, requester, monkeypatch, settings):
    job = _upload_job(stage, requester, monkeypatch)
    settings.JOB_STORAGE_RETRY_SECONDS = 0
    storage = job_service.default_storage
    monkeypatch.setattr(storage, "open", _failing(storage.open, 99))
    for _ in range(settings.JOB_MAX_ATTEMPTS):
        assert job_service.job_run(job_id=job.id) == "queued"
    assert job_service.job_run(job_id=job.id) == "failed"
    job.refresh_from_db()
    assert "stopped 3 times" in job.error
    assert not Item.objects.filter(stage=stage).exists()
