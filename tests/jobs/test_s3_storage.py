"""Job files on S3 through django-storages, against moto's S3 server on this machine
(real HTTP, real S3 wire format): an export job's file lands in the bucket and
downloads whole with its checksum; a large upload's input goes through the bucket and
is removed once stored."""

from __future__ import annotations

import hashlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta

import boto3
import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from campaigns.models import Item, Job
from tests.factories import AssignmentFactory, CampaignFactory, HITFactory, StageFactory

pytestmark = pytest.mark.django_db

BUCKET = "qaportal-jobs"
KEYS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def s3_url() -> Iterator[str]:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise RuntimeError("moto's S3 server did not start") from None
            time.sleep(0.2)
    try:
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def s3(settings, s3_url):
    client = boto3.client("s3", endpoint_url=s3_url, region_name="us-east-1", **KEYS)
    client.create_bucket(Bucket=BUCKET)
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": BUCKET,
                "endpoint_url": s3_url,
                "region_name": "us-east-1",
                "access_key": KEYS["aws_access_key_id"],
                "secret_key": KEYS["aws_secret_access_key"],
                "file_overwrite": False,
                "default_acl": None,
            },
        },
    }
    yield client
    for obj in client.list_objects_v2(Bucket=BUCKET).get("Contents", []):
        client.delete_object(Bucket=BUCKET, Key=obj["Key"])
    client.delete_bucket(Bucket=BUCKET)


@pytest.fixture
def client(requester) -> APIClient:
    client = APIClient()
    client.credentials(
        HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=requester)[0].key}"
    )
    return client


def test_an_export_job_writes_to_s3_and_downloads_whole(
    s3, client, requester, django_capture_on_commit_callbacks
):
    campaign = CampaignFactory.create(owner=requester, slug="on-s3")
    stage = StageFactory.create(campaign=campaign)
    for _ in range(5):
        AssignmentFactory.create(
            hit=HITFactory.create(stage=stage),
            status="submitted",
            submitted_at=timezone.now() + timedelta(seconds=5),
        )
    with django_capture_on_commit_callbacks(execute=True):
        started = client.post(f"/api/v1/campaigns/{campaign.slug}/exports/mturk-csv/jobs/")
    job = client.get(started["Location"]).json()
    assert job["status"] == "done", job
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET)["Contents"]]
    assert keys == [f"jobs/{job['id']}/1/on-s3-mturk-csv.csv"]
    stored = s3.get_object(Bucket=BUCKET, Key=keys[0])["Body"].read()
    assert hashlib.sha256(stored).hexdigest() == job["checksum_sha256"]
    download = client.get(job["download_url"])
    body = b"".join(download.streaming_content)
    assert body == stored
    assert download["X-Row-Count"] == "5"


def test_a_large_upload_goes_through_the_bucket(
    s3, client, requester, settings, django_capture_on_commit_callbacks
):
    settings.ITEM_UPLOAD_INLINE_MAX_BYTES = 100
    stage = StageFactory.create(campaign=CampaignFactory.create(owner=requester, slug="up-s3"))
    rows = "".join(f"q{n},movies,count\n" for n in range(500))
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/api/v1/stages/{stage.pk}/items/upload/",
            f"id,topic,complexity_type\n{rows}".encode(),
            content_type="text/csv",
        )
    assert response.status_code == 202
    job = Job.objects.get()
    assert job.status == "done", job.error
    assert Item.objects.filter(stage=stage).count() == 500
    # The input was kept in the bucket while the job ran, and removed once stored.
    assert job.input_name.startswith(f"jobs/{job.id}/input")
    assert "Contents" not in s3.list_objects_v2(Bucket=BUCKET)
