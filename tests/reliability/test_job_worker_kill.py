"""A real Celery worker SIGKILLed in the middle of an export job: its heartbeat stops,
the reconcile sends the job again, a second worker restarts it and finishes it once:
one file, every row, the checksum of what is stored."""

from __future__ import annotations

import hashlib
import time
import uuid
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.cache import cache
from django.utils import timezone

from campaigns import jobs as job_service
from campaigns.models import HIT, Assignment, Job, JobStatus, Worker
from tests.factories import CampaignFactory, StageFactory, UserFactory
from tests.reliability import faults
from tests.reliability.test_worker_kill import _database_url, own_queue

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ROWS = 60_000
STALE_SECONDS = 3


def _campaign_with_assignments(rows: int):
    owner = UserFactory.create(username=f"kill-{uuid.uuid4().hex[:6]}")
    campaign = CampaignFactory.create(owner=owner, slug=f"kill-{uuid.uuid4().hex[:8]}")
    stage = StageFactory.create(campaign=campaign, position=0)
    workers = Worker.objects.bulk_create(
        Worker(
            provider="local",
            external_id=f"w{n}-{campaign.slug}",
            pseudonym=f"p{n:03d}-{campaign.slug}",
        )
        for n in range(200)
    )
    hits = HIT.objects.bulk_create(
        HIT(stage=stage, provider="local", reward=Decimal("0.50"))
        for _ in range(rows // len(workers))
    )
    now = timezone.now()
    Assignment.objects.bulk_create(
        (
            Assignment(
                hit=hit,
                worker=worker,
                provider="local",
                status="submitted",
                answers={"question": f"Question {hit.pk}-{worker.pk}?"},
                accepted_at=now,
                submitted_at=now + timedelta(seconds=30),
            )
            for hit in hits
            for worker in workers
        ),
        batch_size=5000,
    )
    return owner, campaign


def test_an_export_job_survives_a_killed_worker(tmp_path: Path, settings):
    media = tmp_path / "media"
    settings.MEDIA_ROOT = str(media)
    scratch = tmp_path / "tmp"  # the workers' temporary folder
    scratch.mkdir()
    settings.JOB_STALE_SECONDS = STALE_SECONDS
    owner, campaign = _campaign_with_assignments(ROWS)
    env = faults.worker_env(
        database_url=_database_url(),
        broker_url=django_settings.CELERY_BROKER_URL,
        mturk_url="http://127.0.0.1:9",
        stale_minutes=1,
        secret_key=django_settings.SECRET_KEY,
        REDIS_URL=django_settings.CELERY_BROKER_URL,  # the cache: heartbeats seen here
        # with this test worker's keys (tests/settings.py prefixes them per xdist worker)
        CACHE_KEY_PREFIX=str(django_settings.CACHES["default"].get("KEY_PREFIX", "")),
        MEDIA_ROOT=str(media),
        JOB_STALE_SECONDS=str(STALE_SECONDS),
        TMPDIR=str(scratch),
    )
    with own_queue() as queue:
        first = faults.Worker(env=env, queue=queue, log_path=tmp_path / "w1.log", concurrency=1)
        first.wait_ready()
        job = job_service.job_export_start(
            campaign=campaign, export_format="mturk-csv", actor=owner, download_name="k.csv"
        )
        # Kill it once it has written some rows, not all.
        deadline = time.monotonic() + 60
        live: dict = {}
        while time.monotonic() < deadline:
            live = cache.get(job_service._live_key(job.id)) or {}
            if live.get("rows", 0) > 0:
                break
            time.sleep(0.02)
        first.kill()
        assert 0 < live.get("rows", 0) < ROWS, live
        job.refresh_from_db()
        assert job.status == JobStatus.RUNNING
        assert job.attempt == 1

        second = faults.Worker(env=env, queue=queue, log_path=tmp_path / "w2.log", concurrency=1)
        second.wait_ready()
        try:
            # Beat's reconcile, called here: nothing to do while the heartbeat is fresh.
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                job.refresh_from_db()
                if job.status != JobStatus.RUNNING or job.attempt > 1:
                    break
                job_service.jobs_reconcile()
                time.sleep(0.5)
            while time.monotonic() < deadline and not Job.objects.get(pk=job.pk).finished:
                time.sleep(0.5)
        finally:
            second.stop()
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, (job.status, job.error)
    assert job.attempt == 2
    assert job.row_count == ROWS
    stored = [p for p in media.rglob("*") if p.is_file()]
    assert len(stored) == 1
    body = stored[0].read_bytes()
    assert hashlib.sha256(body).hexdigest() == job.checksum
    assert body.count(b"\n") == ROWS + 1  # the header, then one line per assignment
    # The killed attempt's part-written file is gone too (the second attempt removed it).
    assert [p.name for p in scratch.iterdir() if "upload" in p.name or "qaportal" in p.name] == []
