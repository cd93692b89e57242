"""Parallel test workers (pytest-xdist, ``make pytest``) never share state: each has its
own test database, its own cache keys on the shared Redis database and its own Celery
queue (tests/settings.py, tests/cache.py)."""

from __future__ import annotations

import os

import pytest
import redis
from django.conf import settings
from django.core.cache import cache
from django.db import connection

from qaportal.celery import app


def test_each_worker_has_its_own_database_cache_prefix_and_queue(db) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    prefix = settings.CACHES["default"]["KEY_PREFIX"]
    if worker:
        assert connection.settings_dict["NAME"].endswith(f"_{worker}")
        assert prefix == f"qaportal-test-{worker}"
        assert app.conf.task_default_queue == f"qaportal-test-{worker}"
    else:
        assert prefix == "qaportal-test-main"
        assert app.conf.task_default_queue == "qaportal-test-main"


@pytest.mark.usefixtures("db")
def test_cache_clear_leaves_the_other_workers_keys_alone() -> None:
    client = redis.Redis.from_url(settings.REDIS_URL)
    other = "qaportal-test-elsewhere:1:held"
    client.set(other, b"x", ex=60)
    cache.set("mine", "value", 60)
    try:
        assert cache.get("mine") == "value"

        cache.clear()

        assert cache.get("mine") is None
        assert client.get(other) == b"x"
    finally:
        client.delete(other)
        client.close()
