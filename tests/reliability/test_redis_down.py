"""Redis entirely down, cache and broker on one server (the compose shape): every API
call and signed-in page still answers, logins work, and workers keep submitting; the
work that must follow each commit waits in the outbox (PostgreSQL) and runs once when
Redis is back.

Before, the cache raised: sessions (``cached_db``), the API throttle and the login limit
all read it, so every signed-in page and API call answered 500. Now the cache answers
as an empty cache while Redis cannot be reached (``qaportal.cache.DegradingRedisCache``)
and calls it again only every ``DOWN_SECONDS``.
"""

from __future__ import annotations

import logging
import re
import statistics
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from campaigns.models import Assignment, AssignmentStatus, Item
from campaigns.work.invites import invite_create, invite_token
from qaportal.celery import app
from qaportal.models import OutboxMessage
from qaportal.outbox import outbox_redispatch, outbox_waiting
from tests.factories import UserFactory
from tests.helpers import local_pipeline
from tests.reliability.test_broker_outage import PrivateRedis, celery_on

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct horse battery"
logger = logging.getLogger(__name__)


@pytest.fixture
def shared_redis(tmp_path: Path, settings) -> Iterator[PrivateRedis]:
    """One private redis-server as the cache and the broker, as in docker-compose."""
    server = PrivateRedis(tmp_path)
    server.start()
    # The project's cache (the test suite's scoped one), pointed at this server.
    settings.CACHES = {
        "default": {**settings.CACHES["default"], "LOCATION": server.url, "KEY_PREFIX": "down"}
    }
    try:
        with celery_on(server.url):
            yield server
    finally:
        server.stop()


class Timed:
    """Every answer while Redis is down, with how long it took."""

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self.statuses: list[int] = []

    def __call__(self, send, *args, **kwargs):
        start = time.perf_counter()
        response = send(*args, **kwargs)
        self.seconds.append(time.perf_counter() - start)
        self.statuses.append(response.status_code)
        return response


def _worker_submits(timed: Timed, token: str, stage_id: int, question: str) -> int:
    worker = Client()
    url = reverse("worker:invite", kwargs={"token": token})
    assert timed(worker.get, url).status_code == 200
    assert timed(worker.post, url).status_code == 302
    assert (
        timed(worker.get, reverse("worker:stage", kwargs={"stage_id": stage_id})).status_code == 200
    )
    accepted = timed(worker.post, reverse("worker:accept", kwargs={"stage_id": stage_id}))
    assert accepted.status_code == 302, accepted.content[:300]
    assignment_id = int(re.findall(r"/work/a/(\d+)/", accepted["Location"])[0])
    page = timed(worker.get, accepted["Location"])
    assert page.status_code == 200
    submitted = timed(
        worker.post,
        accepted["Location"],
        {"questions/0/question": question, "questions/0/answer": "The Nile", "telemetry": ""},
    )
    assert submitted.status_code == 302, submitted.content[:500]
    done = timed(worker.get, submitted["Location"])
    assert done.status_code == 200
    return assignment_id


def test_with_redis_down_pages_api_logins_and_submissions_answer(
    shared_redis, requester, token_client
):
    campaign, writing, linking = local_pipeline(
        requester, slug="redis-down", topics=("a", "b", "c")
    )
    requester.set_password(PASSWORD)
    requester.save()
    invite = invite_create(campaign=campaign, created_by=requester, expires_in=timedelta(days=1))
    token = invite_token(invite=invite)
    signed_in = Client()
    assert (
        signed_in.post("/accounts/login/", {"username": "alice", "password": PASSWORD}).status_code
        == 302
    )
    cache.set("up", 1)
    assert cache.get("up") == 1  # Redis up: the cache is used

    shared_redis.stop()
    timed = Timed()

    # Workers keep submitting.
    submitted = [
        _worker_submits(timed, token, writing.pk, f"Which river is longer, {n}?") for n in range(3)
    ]
    assert getattr(cache, "available", None) is False
    # Signed-in pages (the session from the database), the API, a fresh login.
    for path in (
        "/",
        f"/campaigns/{campaign.slug}/",
        f"/campaigns/{campaign.slug}/review/",
        f"/campaigns/{campaign.slug}/workforce/",
    ):
        assert timed(signed_in.get, path).status_code == 200, path
    for path in (
        "/api/v1/campaigns/",
        f"/api/v1/campaigns/{campaign.slug}/",
        f"/api/v1/campaigns/{campaign.slug}/progress/",
        f"/api/v1/campaigns/{campaign.slug}/costs/",
    ):
        assert timed(token_client.get, path).status_code == 200, path
    approved = timed(
        token_client.post, f"/api/v1/assignments/{submitted[0]}/approve/", {}, format="json"
    )
    assert approved.status_code == 200, approved.content
    fresh = Client()
    login = timed(fresh.post, "/accounts/login/", {"username": "alice", "password": PASSWORD})
    assert login.status_code == 302
    assert timed(fresh.get, "/").status_code == 200
    UserFactory(username="bob")
    assert (
        timed(Client().post, "/accounts/login/", {"username": "bob", "password": "x"}).status_code
        == 200
    )

    assert set(timed.statuses) <= {200, 302}
    logger.warning(
        "redis down: %d requests, none failed; median %.0f ms, max %.0f ms",
        len(timed.seconds),
        statistics.median(timed.seconds) * 1000,
        max(timed.seconds) * 1000,
    )
    assert max(timed.seconds) < 5  # one connect attempt at most, never a hang
    statuses = dict(Assignment.objects.filter(pk__in=submitted).values_list("pk", "status"))
    assert statuses[submitted[0]] == AssignmentStatus.APPROVED
    assert [statuses[pk] for pk in submitted[1:]] == [AssignmentStatus.SUBMITTED] * 2
    # The hand-off of the approved work waits in PostgreSQL's outbox for the broker.
    assert Item.objects.filter(stage=linking).count() == 0
    assert OutboxMessage.objects.filter(task="campaigns.handoff_run", done_at__isnull=True).exists()
    waiting = outbox_waiting()
    assert outbox_redispatch(now=timezone.now() + timedelta(minutes=1)) == 0

    # Redis is back: beat sends what waited; a worker (here, in-process) runs it once.
    shared_redis.start()
    assert outbox_redispatch(now=timezone.now() + timedelta(minutes=1)) == waiting
    app.conf.task_always_eager = True
    for later in (timedelta(hours=1), timedelta(hours=3)):
        outbox_redispatch(now=timezone.now() + later)
    assert outbox_waiting() == 0
    assert Item.objects.filter(stage=linking).count() == 1
