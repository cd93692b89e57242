"""Every export format started the way requesters start it: over the API (a job, then
its file downloaded) and with the campaign page's Export button (a job, then the file
from its page), on PostgreSQL's raw SQL path and on the portable path the embedded
SQLite default takes. The Hugging Face folder loads with ``datasets``; the Croissant
file is JSON-LD naming the rows it describes; the Mintaka file holds the example."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from typing import cast

import pytest
from django.http import FileResponse
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from campaigns.exports import FORMATS, common, hf_rows, mintaka
from campaigns.models import Job, JobStatus
from tests.campaigns.exports.test_exports import linked

__all__ = ["linked"]

pytestmark = pytest.mark.django_db


class NotPostgres:
    vendor = "sqlite"


@pytest.fixture(params=["postgresql", "portable"])
def path(request, monkeypatch):
    if request.param == "portable":
        for module in (mintaka, hf_rows):
            monkeypatch.setattr(module, "connection", NotPostgres())
        monkeypatch.setattr(common, "IN_BATCH", 2)
    return request.param


def _body(response: object) -> bytes:
    content = cast(FileResponse, response).streaming_content
    assert isinstance(content, Iterator)
    return b"".join(content)


def _api_job(campaign, user, name: str, capture) -> tuple[dict, bytes]:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    # The API's options as a user sends them: ratios as text, a seed.
    url = f"/api/v1/campaigns/{campaign.slug}/exports/{name}/jobs/?ratios=0.5,0.25,0.25&seed=3"
    with capture(execute=True):
        started = client.post(url)
    assert started.status_code == 202, started.content
    job = client.get(started["Location"]).json()
    assert job["status"] == "done", job
    download = client.get(job["download_url"])
    assert download.status_code == 200
    return job, _body(download)


def _page_job(campaign, user, name: str, capture) -> tuple[dict, bytes]:
    client = Client()
    client.force_login(user)
    detail = client.get(reverse("frontend:campaign-detail", args=[campaign.slug])).content
    start_url = reverse("frontend:campaign-export-job", args=[campaign.slug, name])
    assert f'action="{start_url}"'.encode() in detail  # the button is on the page
    with capture(execute=True):
        started = client.post(start_url)
    assert started.status_code == 302, started.content
    job = Job.objects.filter(campaign=campaign, export_format=name).latest("created_at")
    assert started["Location"] == reverse("frontend:job-detail", args=[job.id])
    status = client.get(reverse("frontend:job-status", args=[job.id])).json()
    assert status["status"] == "done", status
    download = client.get(status["download_url"])
    assert download.status_code == 200
    return status, _body(download)


@pytest.mark.parametrize("via", ["api", "page"])
@pytest.mark.parametrize("name", list(FORMATS))
def test_every_format_finishes_as_a_job_and_downloads(
    linked, requester, name, via, path, django_capture_on_commit_callbacks, tmp_path
):
    campaign, _writing, _written, example_id = linked
    campaign.recipe = "mintaka"  # the hf folder in Mintaka's shape
    campaign.save(update_fields=["recipe"])

    run = _api_job if via == "api" else _page_job
    job, body = run(campaign, requester, name, django_capture_on_commit_callbacks)

    assert Job.objects.get(pk=job["id"]).status == JobStatus.DONE
    # This campaign has no graph queries: its GraphQuestions file is empty.
    assert bool(body) is (name != "graphquestions")
    if name == "mintaka":
        (example,) = json.loads(body)
        assert example["id"] == example_id
    elif name == "hf":
        import datasets

        with zipfile.ZipFile(io.BytesIO(body)) as archive:
            archive.extractall(tmp_path / "unzipped")
        folder = tmp_path / "unzipped" / campaign.slug  # the zip holds the folder
        card = folder / "README.md"
        loaded = datasets.load_dataset(str(folder), cache_dir=str(tmp_path / "cache"))
        assert sum(len(split) for split in loaded.values()) == 1
        assert loaded[next(iter(loaded))][0]["id"] == example_id
        assert "(1 accepted examples: the rows of this dataset)" in card.read_text()
    elif name == "croissant":
        document = json.loads(body)
        assert document["conformsTo"] == "http://mlcommons.org/croissant/1.1"
        assert "(1 accepted examples)" in document["rai:dataCollection"]
    elif name in ("jsonl", "graphquestions"):
        for line in body.decode().splitlines():
            json.loads(line)
