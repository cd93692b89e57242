"""``/healthz`` against the real PostgreSQL and Redis, and with each of them unreachable."""

from __future__ import annotations

import json
import time
import uuid
from datetime import timedelta

import pytest
from django.conf import settings
from django.core.cache import cache
from django.core.cache.backends.redis import RedisCache
from django.test import Client, override_settings
from django.utils import timezone
from django.utils.module_loading import import_string

from qaportal.heartbeat import BEAT_SEEN_KEY, WORKER_SEEN_KEY, beat_seen_now, worker_seen_now
from tests.infra.conftest import clean_env, run_python

# Nothing listens on port 1: connections are refused at once.
UNREACHABLE_REDIS = "redis://127.0.0.1:1/0"
UNREACHABLE_POSTGRES = "postgres://postgres@127.0.0.1:1/qaportal"


@pytest.fixture
def real_redis_configured() -> None:
    """The suite runs against Redis, as production does; fail loudly if it does not."""
    backend_path = settings.CACHES["default"]["BACKEND"]
    assert isinstance(backend_path, str)
    backend = import_string(backend_path)
    assert issubclass(backend, RedisCache)
    assert settings.CELERY_BROKER_URL.startswith("redis://")


@pytest.mark.django_db
@pytest.mark.usefixtures("real_redis_configured")
def test_healthz_is_ok_with_database_broker_and_cache_up(client: Client) -> None:
    worker_seen_now()
    beat_seen_now()
    with override_settings(CELERY_TASK_ALWAYS_EAGER=False):
        response = client.get("/healthz")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "ok"
    assert body["checks"] == {
        "database": "ok",
        "broker": "ok",
        "cache": "ok",
        "worker": "ok",
        "beat": "ok",
    }
    assert set(body["backlog"]) == {
        "outbox",
        "outbox_oldest_seconds",
        "operations_pending",
        "queues",
    }
    assert "no-cache" in response["Cache-Control"]


@pytest.mark.django_db
def test_healthz_reports_eager_when_tasks_run_in_process(client: Client) -> None:
    with override_settings(CELERY_TASK_ALWAYS_EAGER=True):
        response = client.get("/healthz")

    assert response.status_code == 200, response.content
    assert response.json()["checks"]["broker"] == "eager"


@pytest.mark.django_db
def test_healthz_is_503_when_the_broker_is_unreachable(client: Client) -> None:
    started = time.monotonic()
    with override_settings(CELERY_TASK_ALWAYS_EAGER=False, CELERY_BROKER_URL=UNREACHABLE_REDIS):
        response = client.get("/healthz")

    assert response.status_code == 503, response.content
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["checks"]["broker"].startswith("down")
    assert body["checks"]["database"] == "ok"
    assert body["checks"]["cache"] == "ok"
    # A probe must answer well within a load balancer's timeout.
    assert time.monotonic() - started < 5


@pytest.mark.django_db
def test_healthz_is_503_when_the_cache_is_unreachable(client: Client) -> None:
    unreachable_cache = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": UNREACHABLE_REDIS,
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }
    with override_settings(CACHES=unreachable_cache):
        response = client.get("/healthz")

    assert response.status_code == 503, response.content
    assert response.json()["checks"]["cache"].startswith("down")
    assert response.json()["checks"]["database"] == "ok"


# Runs in a separate process so that the test run's own database connection
# is never pointed elsewhere.
_HEALTHZ_IN_SUBPROCESS = """
import json
import django
django.setup()
from django.test import Client
response = Client().get("/healthz")
print(json.dumps({"status_code": response.status_code, "body": response.json()}))
"""


def test_healthz_is_503_when_the_database_is_unreachable(tmp_path) -> None:
    env = clean_env(
        DJANGO_SETTINGS_MODULE="qaportal.settings",
        DEBUG="0",
        SECRET_KEY="tests-only-secret-key",
        ALLOWED_HOSTS="testserver",
        QAPORTAL_VAR_DIR=str(tmp_path),
        DATABASE_URL=UNREACHABLE_POSTGRES,
        DATABASE_CONNECT_TIMEOUT="2",
        REDIS_URL=settings.REDIS_URL,
        CELERY_BROKER_URL=settings.CELERY_BROKER_URL,
        CELERY_TASK_ALWAYS_EAGER="0",
    )
    result = run_python(_HEALTHZ_IN_SUBPROCESS, env=env)

    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["status_code"] == 503
    assert outcome["body"]["status"] == "unavailable"
    assert outcome["body"]["checks"]["database"].startswith("down")
    assert outcome["body"]["checks"]["broker"] == "ok"
    assert outcome["body"]["checks"]["cache"] == "ok"


_PROBES_IN_SUBPROCESS = """
import json
import django
django.setup()
from django.test import Client
answers = {path: Client().get(path) for path in ("/livez", "/readyz")}
print(json.dumps({path: [r.status_code, r.json()] for path, r in answers.items()}))
"""


def test_liveness_holds_and_readiness_fails_while_the_database_is_down(tmp_path) -> None:
    env = clean_env(
        DJANGO_SETTINGS_MODULE="qaportal.settings",
        DEBUG="0",
        SECRET_KEY="tests-only-secret-key",
        ALLOWED_HOSTS="testserver",
        QAPORTAL_VAR_DIR=str(tmp_path),
        DATABASE_URL=UNREACHABLE_POSTGRES,
        DATABASE_CONNECT_TIMEOUT="2",
        REDIS_URL=settings.REDIS_URL,
        CELERY_BROKER_URL=settings.CELERY_BROKER_URL,
        CELERY_TASK_ALWAYS_EAGER="0",
    )
    result = run_python(_PROBES_IN_SUBPROCESS, env=env)

    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["/livez"] == [200, {"status": "alive"}]
    status, body = outcome["/readyz"]
    assert status == 503
    assert body["checks"]["database"].startswith("down")
    assert body["checks"]["broker"] == "ok"


@pytest.mark.django_db
def test_the_test_database_connection_still_works() -> None:
    """The unreachable-database test must leave this process's connection alone."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)


@pytest.mark.django_db
@pytest.mark.usefixtures("real_redis_configured")
def test_healthz_reports_a_worker_not_seen_lately(client: Client, settings) -> None:
    settings.HEALTH_WORKER_MAX_AGE_SECONDS = 60
    cache.delete(WORKER_SEEN_KEY)
    with override_settings(CELERY_TASK_ALWAYS_EAGER=False):
        never = client.get("/healthz")
        assert never.status_code == 200  # the web still serves: degraded, not down
        assert never.json()["status"] == "degraded"
        assert never.json()["checks"]["worker"] == "down: no Celery worker has been seen"
        cache.set(WORKER_SEEN_KEY, time.time() - 300, timeout=None)
        stale = client.get("/healthz").json()
        assert stale["status"] == "degraded"
        assert stale["checks"]["worker"].startswith("down: no Celery worker seen for 30")
        worker_seen_now()
        assert client.get("/healthz").json()["checks"]["worker"] == "ok"


def test_a_task_run_by_a_worker_marks_it_seen() -> None:
    from celery import signals

    cache.delete(WORKER_SEEN_KEY)
    signals.task_postrun.send(sender=None, task_id="t", task=None, args=(), kwargs={})
    assert time.time() - cache.get(WORKER_SEEN_KEY) < 5


@pytest.mark.django_db
@pytest.mark.usefixtures("real_redis_configured")
def test_healthz_reports_beat_not_seen_lately(client: Client, settings) -> None:
    settings.HEALTH_BEAT_MAX_AGE_SECONDS = 60
    worker_seen_now()
    cache.delete(BEAT_SEEN_KEY)
    with override_settings(CELERY_TASK_ALWAYS_EAGER=False):
        never = client.get("/healthz")
        assert never.status_code == 200
        assert never.json()["status"] == "degraded"
        assert never.json()["checks"]["beat"] == "down: beat has not been seen"
        cache.set(BEAT_SEEN_KEY, time.time() - 90, timeout=None)
        assert client.get("/healthz").json()["checks"]["beat"].startswith("down: beat not seen")
        beat_seen_now()
        assert client.get("/healthz").json()["status"] == "ok"


def test_beat_writes_its_heartbeat_from_its_own_loop(tmp_path) -> None:
    from qaportal.celery import app
    from qaportal.heartbeat import HeartbeatScheduler

    cache.delete(BEAT_SEEN_KEY)
    scheduler = HeartbeatScheduler(app, schedule_filename=str(tmp_path / "schedule"), lazy=True)
    scheduler.setup_schedule()
    try:
        wait = scheduler.tick()
    finally:
        scheduler.close()
    assert time.time() - cache.get(BEAT_SEEN_KEY) < 5
    assert wait <= 15  # it wakes up often enough to keep the heartbeat fresh


@pytest.mark.django_db
@pytest.mark.usefixtures("real_redis_configured")
def test_healthz_reports_what_waits(client: Client, settings) -> None:
    import redis

    from campaigns.models import OperationKind, ProviderOperation
    from qaportal.models import OutboxMessage

    OutboxMessage.objects.create(task="qaportal.ping", args=[])
    OutboxMessage.objects.filter().update(created_at=timezone.now() - timedelta(minutes=5))
    OutboxMessage.objects.create(task="qaportal.ping", args=[], done_at=timezone.now())
    ProviderOperation.objects.create(
        provider="local", kind=OperationKind.APPROVE, idempotency_key="k1"
    )
    queue = f"healthz-{uuid.uuid4().hex[:8]}"
    settings.QUEUE_HEAVY = queue
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    broker.rpush(queue, b"one", b"two")
    try:
        with override_settings(CELERY_TASK_ALWAYS_EAGER=False):
            body = client.get("/healthz").json()
    finally:
        broker.delete(queue)
        broker.close()

    assert body["backlog"]["outbox"] == 1
    assert 299 < body["backlog"]["outbox_oldest_seconds"] < 400
    assert body["backlog"]["operations_pending"] == 1
    assert body["backlog"]["queues"][queue] == 2
