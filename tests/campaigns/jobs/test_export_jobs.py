"""Exports as background jobs: started over the API (202), followed to done, the file
downloaded whole with its row count and SHA-256 named; a job is its creator's; a
broker that refuses leaves the job queued for the reconcile; a superseded attempt
writes nothing; a folder format is zipped; a streamed export too large is refused."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from typing import cast

import pytest
from django.http import StreamingHttpResponse
from django.test import Client
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from campaigns import exports as export_registry
from campaigns import jobs as job_service
from campaigns.exports import Stream
from campaigns.models import ExportAudit, Job, JobStatus
from campaigns.tasks import job_run_task
from tests.factories import AssignmentFactory, CampaignFactory, HITFactory, StageFactory

pytestmark = pytest.mark.django_db


def _client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


@pytest.fixture
def worked(requester):
    campaign = CampaignFactory.create(owner=requester, slug="jobbed")
    stage = StageFactory.create(campaign=campaign, position=0)
    for n in range(7):
        hit = HITFactory.create(stage=stage)
        AssignmentFactory.create(
            hit=hit,
            status="submitted",
            answers={"n": n},
            submitted_at=timezone.now() + timedelta(seconds=5),
        )
    return campaign


@pytest.fixture
def start(django_capture_on_commit_callbacks):
    """POST to start a job; the job is dispatched after commit (eager here: it runs)."""

    def post(client: APIClient, url: str):
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(url)
        assert response.status_code == 202, response.content
        return response

    return post


def _download(client: APIClient, job: dict) -> tuple[bytes, StreamingHttpResponse]:
    response = cast(StreamingHttpResponse, client.get(job["download_url"]))
    assert response.status_code == 200
    content = response.streaming_content
    assert isinstance(content, Iterator)
    return b"".join(content), response


def test_export_job_runs_and_names_rows_and_checksum(worked, requester, start):
    client = _client(requester)
    started = start(client, f"/api/v1/campaigns/{worked.slug}/exports/mturk-csv/jobs/")
    assert started["Location"].endswith(f"/api/v1/jobs/{started.json()['id']}/")

    job = client.get(started["Location"]).json()  # eager here: already done
    assert job["status"] == "done"
    assert job["progress"] == 1.0
    assert job["row_count"] == 7
    body, response = _download(client, job)
    rows = list(csv.DictReader(io.StringIO(body.decode())))
    assert len(rows) == 7 == int(response["X-Row-Count"])
    digest = hashlib.sha256(body).hexdigest()
    assert response["X-Checksum-SHA256"] == digest == job["checksum_sha256"]
    assert (
        response["Repr-Digest"] == f"sha-256=:{base64.b64encode(bytes.fromhex(digest)).decode()}:"
    )
    assert int(response["Content-Length"]) == len(body) == job["byte_count"]
    assert 'filename="jobbed-mturk-csv.csv"' in response["Content-Disposition"]


def test_the_written_file_is_moved_into_storage_leaving_no_temporary_file(
    worked, requester, start, settings, tmp_path, media_root
):
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path / "tmp")
    (tmp_path / "tmp").mkdir()
    client = _client(requester)
    started = start(client, f"/api/v1/campaigns/{worked.slug}/exports/collection-metadata/jobs/")

    job = client.get(started["Location"]).json()
    assert job["status"] == "done"
    assert job["row_count"] == 7
    assert list((tmp_path / "tmp").iterdir()) == []
    (stored,) = (media_root / "jobs" / job["id"]).rglob("*.csv")
    assert hashlib.sha256(stored.read_bytes()).hexdigest() == job["checksum_sha256"]


def test_job_is_its_creators(worked, requester, other_requester, start):
    worked.collaborators.add(other_requester)
    job = start(_client(requester), f"/api/v1/campaigns/{worked.slug}/exports/csv/jobs/").json()
    other = _client(other_requester)
    assert other.get(job["url"]).status_code == 404
    assert other.get(f"{job['url']}download/").status_code == 404
    # A stranger to the campaign cannot start one either.
    stranger_campaign = CampaignFactory.create(slug="hidden")
    assert (
        other.post(f"/api/v1/campaigns/{stranger_campaign.slug}/exports/csv/jobs/").status_code
        == 404
    )


def test_a_removed_collaborator_can_no_longer_download_her_export(
    worked, requester, other_requester, start
):
    """Access is checked against the campaign at download time, not when the job
    started: once removed, her own earlier export answers 404 on the API and the page."""
    worked.collaborators.add(other_requester)
    client = _client(other_requester)
    started = start(client, f"/api/v1/campaigns/{worked.slug}/exports/csv/jobs/")
    job = client.get(started["Location"]).json()  # eager here: already done
    page = Client()
    page.force_login(other_requester)
    page_url = f"/jobs/{job['id']}/download/"
    assert client.get(job["download_url"]).status_code == 200
    assert page.get(page_url).status_code == 200

    worked.collaborators.remove(other_requester)

    assert client.get(job["url"]).status_code == 404
    assert client.get(job["download_url"]).status_code == 404
    assert page.get(f"/jobs/{job['id']}/").status_code == 404
    assert page.get(page_url).status_code == 404
    # The owner still has her own.
    owner = _client(requester)
    mine = start(owner, f"/api/v1/campaigns/{worked.slug}/exports/csv/jobs/")
    assert owner.get(owner.get(mine["Location"]).json()["download_url"]).status_code == 200


def test_collaborator_cannot_start_a_job_with_real_worker_ids(worked, other_requester):
    worked.collaborators.add(other_requester)
    url = f"/api/v1/campaigns/{worked.slug}/exports/jsonl/jobs/"
    refused = _client(other_requester).post(f"{url}?reveal_worker_ids=true&confirm={worked.slug}")
    assert refused.status_code == 403
    assert "owner" in refused.json()["detail"]
    assert not Job.objects.exists()
    assert not ExportAudit.objects.exists()


def test_bad_options_are_400_before_any_job(worked, requester):
    url = f"/api/v1/campaigns/{worked.slug}/exports/mintaka/jobs/"
    bad = _client(requester).post(f"{url}?ratios=0.7,0.1,nan")
    assert bad.status_code == 400
    assert "ratios" in bad.json()
    assert not Job.objects.exists()


def test_mintaka_split_runs_as_a_job(worked, requester, start):
    client = _client(requester)
    url = f"/api/v1/campaigns/{worked.slug}/exports/mintaka/jobs/?split=train&ratios=0.5,0.25,0.25"
    job = client.get(start(client, url)["Location"]).json()
    assert job["status"] == "done", job
    body, _ = _download(client, job)
    assert body.startswith(b"[")


def test_broker_down_leaves_the_job_queued_for_the_reconcile(
    worked, requester, monkeypatch, settings
):
    def refuse(*args, **kwargs):
        raise ConnectionError("broker unreachable")

    monkeypatch.setattr(job_run_task, "delay", refuse)
    started = _client(requester).post(f"/api/v1/campaigns/{worked.slug}/exports/csv/jobs/")
    assert started.status_code == 202
    assert started.json()["status"] == "queued"
    job = Job.objects.get()
    monkeypatch.undo()
    settings.JOB_REDISPATCH_SECONDS = 0
    assert job_service.jobs_reconcile() == 1
    job.refresh_from_db()
    assert job.status == JobStatus.DONE
    assert job.attempt == 1
    assert job_service.jobs_reconcile() == 0


def test_a_superseded_attempt_writes_nothing(worked, requester, monkeypatch, media_root):
    monkeypatch.setattr(job_service, "_dispatch", lambda job_id: None)
    job = job_service.job_export_start(
        campaign=worked, export_format="csv", actor=requester, download_name="x.csv"
    )
    first = job_service._claim(job.id)
    assert first is not None
    assert first.attempt == 1
    # The first worker's heartbeat lapses; another worker takes the job over.
    job_service.cache.delete(job_service._live_key(job.id))
    second = job_service._claim(job.id)
    assert second is not None
    assert second.attempt == 2
    with pytest.raises(job_service.JobSupersededError):
        job_service._run_export(first)
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    assert not job.file_name
    job_service._run_export(second)
    job.refresh_from_db()
    assert job.status == JobStatus.DONE
    assert job.attempt == 2
    stored = [p for p in media_root.rglob("*") if p.is_file()]
    assert [p.name for p in stored] == ["x.csv"]


def test_a_job_that_keeps_dying_fails_with_a_message(worked, requester, monkeypatch, settings):
    monkeypatch.setattr(job_service, "_dispatch", lambda job_id: None)
    job = job_service.job_export_start(
        campaign=worked, export_format="csv", actor=requester, download_name="x.csv"
    )
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING, attempt=settings.JOB_MAX_ATTEMPTS
    )
    assert job_service.job_run(job_id=job.id) == "failed"
    job.refresh_from_db()
    assert "stopped 3 times" in job.error


def test_a_folder_format_is_zipped(worked, requester, monkeypatch, start):
    def folder(*, campaign, directory, tally, **_):
        (directory / "data").mkdir()
        (directory / "data" / "train.jsonl").write_text('{"a": 1}\n{"a": 2}\n')
        (directory / "README.md").write_text(f"# {campaign.slug}\n")
        tally.rows = 2

    base = export_registry.FORMATS["jsonl"]
    # A folder format has no stream: None, so that calling it would fail the test.
    folder_format = replace(base, name="folderish", extension="", stream=cast(Stream, None))
    object.__setattr__(folder_format, "folder", folder)
    monkeypatch.setitem(export_registry.FORMATS, "folderish", folder_format)
    client = _client(requester)
    url = f"/api/v1/campaigns/{worked.slug}/exports/folderish/jobs/"
    job = client.get(start(client, url)["Location"]).json()
    assert job["status"] == "done", job
    body, response = _download(client, job)
    assert response["Content-Type"] == "application/zip"
    assert response["X-Row-Count"] == "2"
    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        assert sorted(archive.namelist()) == ["README.md", "data/train.jsonl"]
        assert archive.read("README.md") == b"# jobbed\n"


def test_streaming_a_large_export_is_refused_with_the_job_url(worked, requester, settings):
    settings.EXPORT_STREAM_MAX_ROWS = 5
    client = _client(requester)
    for url in (
        f"/api/v1/campaigns/{worked.slug}/exports/jsonl/",
        f"/api/v1/campaigns/{worked.slug}/mturk-results/",
    ):
        response = client.get(url)
        assert response.status_code == 409, url
        assert response["Content-Type"].startswith("application/json")
        assert "/jobs/" in response.json()["detail"]
    settings.EXPORT_STREAM_MAX_ROWS = 7
    assert client.get(f"/api/v1/campaigns/{worked.slug}/exports/jsonl/").status_code == 200


def test_mturk_results_real_ids_are_the_owners_alone(worked, requester, other_requester):
    worked.collaborators.add(other_requester)
    url = f"/api/v1/campaigns/{worked.slug}/mturk-results/?reveal_worker_ids=true"
    assert _client(other_requester).get(url).status_code == 403
    assert not ExportAudit.objects.exists()
    assert _client(requester).get(url).status_code == 200
    assert ExportAudit.objects.get().user == requester
