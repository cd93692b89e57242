"""Queues by class of work (qaportal/queues.py), with real workers: a platform
operation asked while the heavy worker is busy with exports runs at once on the
payments worker, instead of waiting behind them."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from campaigns import jobs as job_service
from campaigns.models import HIT, Job, JobStatus, OperationKind, OperationState
from campaigns.platforms.operations import operation_request
from campaigns.work.publishing import stage_publish
from tests.factories import ItemFactory, StageFactory
from tests.reliability import faults
from tests.reliability.test_job_worker_kill import _campaign_with_assignments
from tests.reliability.test_worker_kill import _database_url, own_queue

pytestmark = [pytest.mark.slow(seconds=25), pytest.mark.django_db(transaction=True)]

EXPORT_ROWS = 10_000


def test_a_platform_operation_does_not_wait_behind_exports(tmp_path: Path, settings) -> None:
    settings.MEDIA_ROOT = str(tmp_path / "media")
    owner, campaign = _campaign_with_assignments(EXPORT_ROWS)
    stage = StageFactory.create(campaign=campaign, position=1)
    ItemFactory.create_batch(2, stage=stage)
    stage_publish(stage=stage)
    with own_queue() as queue:
        settings.QUEUE_PAYMENTS, settings.QUEUE_HEAVY = f"{queue}-payments", f"{queue}-heavy"
        env = faults.worker_env(
            database_url=_database_url(),
            broker_url=django_settings.CELERY_BROKER_URL,
            mturk_url="http://127.0.0.1:9",
            stale_minutes=1,
            secret_key=django_settings.SECRET_KEY,
            REDIS_URL=django_settings.CELERY_BROKER_URL,
            CACHE_KEY_PREFIX=str(django_settings.CACHES["default"].get("KEY_PREFIX", "")),
            MEDIA_ROOT=settings.MEDIA_ROOT,
            CELERY_TASK_DEFAULT_QUEUE=queue,
            QUEUE_PAYMENTS=settings.QUEUE_PAYMENTS,
            QUEUE_HEAVY=settings.QUEUE_HEAVY,
        )
        heavy = faults.Worker(
            env=env, queue=settings.QUEUE_HEAVY, log_path=tmp_path / "heavy.log", concurrency=1
        )
        payments = faults.Worker(
            env=env, queue=settings.QUEUE_PAYMENTS, log_path=tmp_path / "pay.log", concurrency=1
        )
        try:
            heavy.wait_ready()
            payments.wait_ready()
            exports = [
                job_service.job_export_start(
                    campaign=campaign, export_format="mturk-csv", actor=owner, download_name="e.csv"
                )
                for _ in range(2)
            ]
            while not Job.objects.filter(pk=exports[0].pk, status=JobStatus.RUNNING).exists():
                time.sleep(0.05)
            operation, _ = operation_request(
                provider="local",
                kind=OperationKind.CREATE_HIT,
                key=f"publish:stage:{stage.pk}:{uuid.uuid4().hex[:6]}",
                payload={
                    "stage_id": stage.pk,
                    "hit_ids": list(HIT.objects.filter(stage=stage).values_list("pk", flat=True)),
                },
                campaign=campaign,
            )
            asked = time.monotonic()
            while time.monotonic() - asked < 60:
                operation.refresh_from_db()
                if operation.state == OperationState.DONE:
                    break
                time.sleep(0.05)
            waited = time.monotonic() - asked
            unfinished = Job.objects.filter(pk__in=[j.pk for j in exports]).exclude(
                status__in=[JobStatus.DONE, JobStatus.FAILED]
            )
            assert operation.state == OperationState.DONE, operation.last_error
            # The exports were still on the heavy worker when the payment was done.
            assert unfinished.exists(), f"the exports finished first ({waited:.1f} s)"
            assert waited < 10, waited
            deadline = time.monotonic() + 120
            while unfinished.exists() and time.monotonic() < deadline:
                time.sleep(0.3)
            assert not unfinished.exists()
            assert "campaigns.job_run[" in (tmp_path / "heavy.log").read_text()
            assert "campaigns.job_run[" not in (tmp_path / "pay.log").read_text()
            assert "qaportal.outbox_run[" in (tmp_path / "pay.log").read_text()
        finally:
            heavy.stop()
            payments.stop()
