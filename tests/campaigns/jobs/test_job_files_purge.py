"""Job files are kept JOB_FILES_RETENTION_DAYS after the job finished, then deleted:
finished exports' files and rejected uploads' inputs; the job rows stay, and a purged
export's download says the file is gone."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from campaigns.jobs import job_files_purge
from campaigns.models import Job, JobKind, JobStatus
from campaigns.tasks import purge_job_files_task
from tests.factories import CampaignFactory, StageFactory

pytestmark = pytest.mark.django_db


def _job(requester, *, kind: str, status: str, days_ago: float, tag: str) -> Job:
    campaign = CampaignFactory.create(owner=requester, slug=f"purge-{tag}")
    name = default_storage.save(f"jobs/{tag}/file", ContentFile(b"a,b\n1,2\n"))
    return Job.objects.create(
        kind=kind,
        campaign=campaign,
        stage=StageFactory.create(campaign=campaign) if kind == JobKind.UPLOAD else None,
        created_by=requester,
        status=status,
        file_name=name if kind == JobKind.EXPORT else "",
        input_name=name if kind == JobKind.UPLOAD else "",
        download_name="x.csv",
        checksum="00" * 32,
        byte_count=8,
        row_count=1,
        finished_at=timezone.now() - timedelta(days=days_ago),
    )


def test_old_exports_and_rejected_inputs_are_deleted_recent_ones_kept(requester, settings):
    settings.JOB_FILES_RETENTION_DAYS = 7
    old_export = _job(requester, kind=JobKind.EXPORT, status=JobStatus.DONE, days_ago=8, tag="e8")
    new_export = _job(requester, kind=JobKind.EXPORT, status=JobStatus.DONE, days_ago=6, tag="e6")
    old_input = _job(requester, kind=JobKind.UPLOAD, status=JobStatus.FAILED, days_ago=8, tag="u8")
    new_input = _job(requester, kind=JobKind.UPLOAD, status=JobStatus.FAILED, days_ago=1, tag="u1")
    old_names = [old_export.file_name, old_input.input_name]

    assert purge_job_files_task() == 2

    assert not any(default_storage.exists(name) for name in old_names)
    assert default_storage.exists(new_export.file_name)
    assert default_storage.exists(new_input.input_name)
    old_export.refresh_from_db()
    old_input.refresh_from_db()
    assert (old_export.file_name, old_input.input_name) == ("", "")
    assert old_export.checksum == "00" * 32  # the record stays
    assert job_files_purge() == 0  # nothing left to do: idempotent


def test_zero_keeps_every_file(requester, settings):
    settings.JOB_FILES_RETENTION_DAYS = 0
    job = _job(requester, kind=JobKind.EXPORT, status=JobStatus.DONE, days_ago=400, tag="keep")

    assert job_files_purge() == 0
    assert default_storage.exists(job.file_name)


def test_a_purged_export_download_says_the_file_is_gone(requester, settings):
    settings.JOB_FILES_RETENTION_DAYS = 7
    job = _job(requester, kind=JobKind.EXPORT, status=JobStatus.DONE, days_ago=30, tag="gone")
    job_files_purge()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=requester).key}")

    response = client.get(f"/api/v1/jobs/{job.pk}/download/")

    assert response.status_code == 404
    assert "deleted 7 days after" in response.json()["detail"]
