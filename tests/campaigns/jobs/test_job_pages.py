"""The pages: "Export" starts a job and shows its progress page (a progress bar that
job.js moves), the status as JSON, the file with its rows and checksum; a large item
file uploaded from the page becomes a job too; the job is its creator's."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from campaigns.models import Item, Job
from tests.factories import AssignmentFactory, CampaignFactory, HITFactory, StageFactory
from tests.frontend.conftest import alice_client, bob_client

__all__ = ["alice_client", "bob_client"]

pytestmark = pytest.mark.django_db


@pytest.fixture
def stage(requester):
    campaign = CampaignFactory.create(owner=requester, slug="paged")
    stage = StageFactory.create(campaign=campaign, position=0)
    for _ in range(4):
        AssignmentFactory.create(
            hit=HITFactory.create(stage=stage),
            status="submitted",
            submitted_at=timezone.now() + timedelta(seconds=5),
        )
    return stage


def test_export_button_runs_a_job_with_a_progress_page(
    stage, alice_client, bob_client, django_capture_on_commit_callbacks
):
    campaign = stage.campaign
    detail = alice_client.get(reverse("frontend:campaign-detail", args=[campaign.slug]))
    start_url = reverse("frontend:campaign-export-job", args=[campaign.slug, "collection-metadata"])
    assert f'action="{start_url}"' in detail.content.decode()

    with django_capture_on_commit_callbacks(execute=True):
        started = alice_client.post(start_url)
    assert started.status_code == 302
    job = Job.objects.get()
    assert started["Location"] == reverse("frontend:job-detail", args=[job.id])

    page = alice_client.get(started["Location"])
    html = page.content.decode()
    assert page["Cache-Control"] == "private, no-store"
    assert '<progress id="job-progress"' in html
    assert "frontend/job.js" in html
    assert f'data-job-url="{reverse("frontend:job-status", args=[job.id])}"' in html

    status = alice_client.get(reverse("frontend:job-status", args=[job.id])).json()
    assert status["status"] == "done"
    assert status["row_count"] == 4
    download = alice_client.get(status["download_url"])
    body = b"".join(download.streaming_content)
    assert hashlib.sha256(body).hexdigest() == download["X-Checksum-SHA256"]
    assert download["X-Row-Count"] == "4"

    for name in ("job-detail", "job-status", "job-download"):
        assert bob_client.get(reverse(f"frontend:{name}", args=[job.id])).status_code == 404


def test_a_large_file_uploaded_from_the_page_is_a_job(
    stage, alice_client, settings, django_capture_on_commit_callbacks
):
    settings.ITEM_UPLOAD_INLINE_MAX_BYTES = 100
    rows = "".join(f"q{n},movies,count\n" for n in range(50))
    upload = SimpleUploadedFile("items.csv", f"id,topic,complexity_type\n{rows}".encode())
    url = reverse("frontend:stage-upload", args=[stage.campaign.slug, stage.pk])
    with django_capture_on_commit_callbacks(execute=True):
        response = alice_client.post(url, {"file": upload})
    job = Job.objects.get()
    assert response["Location"] == reverse("frontend:job-detail", args=[job.id])
    page = alice_client.get(response["Location"]).content.decode()
    assert "Stored 50 items." in page
    assert Item.objects.filter(stage=stage).count() == 50
