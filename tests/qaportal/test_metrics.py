"""``/metrics``: django-prometheus' request metrics and qaportal's own, counted in the
database; a token or a network rule in front of them."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.cache import cache
from django.test import Client
from django.utils import timezone

from campaigns.models import Job, JobKind, JobStatus, OperationKind, ProviderOperation
from qaportal.metrics import CACHE_KEY
from qaportal.models import OutboxMessage
from tests.factories import CampaignFactory, LedgerEntryFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh() -> None:
    cache.delete(CACHE_KEY)


def _sample(text: str, name: str, **labels: str) -> float:
    """The value of sample ``name`` with exactly ``labels`` (in any order)."""
    for line in text.splitlines():
        match = re.fullmatch(rf"{re.escape(name)}(?:\{{(.*)\}})? (\S+)", line)
        if match and dict(re.findall(r'(\w+)="([^"]*)"', match[1] or "")) == labels:
            return float(match[2])
    raise AssertionError(f"no {name} {labels} in:\n{text[-3000:]}")


def test_qaportals_own_metrics_count_what_the_database_holds(client: Client, requester) -> None:
    campaign = CampaignFactory.create(owner=requester)
    LedgerEntryFactory.create(
        campaign=campaign, kind="bonus", status="paid", amount=Decimal("2.50")
    )
    LedgerEntryFactory.create(
        campaign=campaign, kind="bonus", status="paid", amount=Decimal("1.25")
    )
    OutboxMessage.objects.create(task="qaportal.ping", args=[])
    ProviderOperation.objects.create(
        provider="local",
        kind=OperationKind.APPROVE,
        idempotency_key="m1",
        state="failed",
        last_error="refused",
    )
    now = timezone.now()
    Job.objects.create(
        kind=JobKind.EXPORT,
        campaign=campaign,
        status=JobStatus.DONE,
        started_at=now - timedelta(seconds=12),
        finished_at=now,
    )

    response = client.get("/metrics", REMOTE_ADDR="127.0.0.1")

    assert response.status_code == 200
    text = response.content.decode()
    assert (
        _sample(text, "qaportal_ledger_amount", kind="bonus", status="paid", currency="USD") == 3.75
    )
    assert _sample(text, "qaportal_outbox_backlog") == 1
    assert (
        _sample(
            text, "qaportal_platform_operations", provider="local", kind="approve", state="failed"
        )
        == 1
    )
    assert _sample(text, "qaportal_job_duration_seconds_count", kind="export", status="done") == 1
    assert _sample(text, "qaportal_job_duration_seconds_sum", kind="export", status="done") == 12
    assert _sample(text, "qaportal_submissions_total") == 0
    assert _sample(text, "qaportal_decisions_total", decision="approved") == 0
    # django-prometheus' own, from the middleware.
    assert "django_http_requests_before_middlewares_total" in text


def test_a_token_is_required_when_one_is_set(client: Client, settings) -> None:
    settings.METRICS_TOKEN = "scrape-me"

    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 404
    wrong = client.get("/metrics", HTTP_AUTHORIZATION="Bearer nope")
    assert wrong.status_code == 404
    right = client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-me", REMOTE_ADDR="10.1.2.3")
    assert right.status_code == 200
    assert b"qaportal_outbox_backlog" in right.content


def test_without_a_token_only_the_metrics_networks_may_scrape(client: Client, settings) -> None:
    settings.METRICS_TOKEN = ""
    settings.METRICS_NETWORKS = ["10.0.0.0/8"]

    assert client.get("/metrics", REMOTE_ADDR="10.20.30.40").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="192.0.2.1").status_code == 404
    # A forwarded address is never believed here: the proxy's own is what counts.
    forwarded = client.get("/metrics", REMOTE_ADDR="192.0.2.1", HTTP_X_FORWARDED_FOR="10.0.0.1")
    assert forwarded.status_code == 404
