"""Secrets and full worker ids never reach the logs.

A whole paid flow runs on the fake Prolific with the campaign's own stored API token:
publish, a participant works through the study URL, sync, approve, bonus, a forged
participant, a failed login. Every log record of every logger at DEBUG is captured
(Django, Celery, requests/urllib3, qaportal), and none contains the API token, the
secret key, a password or a participant's full id.
"""

from __future__ import annotations

import logging
from decimal import Decimal

import pytest
from django.conf import settings as django_settings
from django.test import Client

from campaigns.models import Assignment
from campaigns.platforms.credentials import campaign_credentials_set
from campaigns.platforms.prolific.studies import prolific_studies_sync
from campaigns.platforms.review import paid_assignment_approve, paid_bonus_pay
from tests.campaigns.platforms.conftest import WEBHOOK_SECRET, make_campaign, run_operations
from tests.campaigns.platforms.fake_prolific import FakeProlific
from tests.campaigns.platforms.test_prolific_flow import publish, work

pytestmark = pytest.mark.django_db

TOKEN = "prolific-token-SHOULD-NEVER-BE-LOGGED-7f3c9a"


@pytest.fixture
def fake(settings):
    with FakeProlific(token=TOKEN) as server:
        settings.PROLIFIC_API_TOKEN = ""  # only the campaign's stored token can work
        settings.PROLIFIC_API_URL = server.url
        settings.PROLIFIC_WORKSPACE_ID = "workspace-1"
        settings.PROLIFIC_BACKOFF_BASE = 0.01
        settings.PROLIFIC_TIMEOUT = 5
        settings.PROLIFIC_WEBHOOK_SECRET = WEBHOOK_SECRET
        settings.SITE_URL = "https://qaportal.example.org"
        settings.ROOT_URLCONF = "tests.campaigns.platforms.urls"
        yield server


def test_a_paid_flow_logs_no_secret_and_no_full_worker_id(requester, fake, client, caplog):
    caplog.set_level(logging.DEBUG)
    campaign, stage = make_campaign(requester, provider="prolific", slug="logged")
    campaign_credentials_set(
        campaign=campaign,
        actor=requester,
        values={"api_token": TOKEN},
    )
    study_id, _codes = publish(stage, fake)
    session, _code = work(client, fake, study_id, stage)
    work(Client(), fake, study_id, stage, pid="b" * 24, forged=True)
    assert prolific_studies_sync() >= 1
    assignment = Assignment.objects.get(provider_assignment_id=session["id"])
    paid_assignment_approve(assignment=assignment, source="requester")
    paid_bonus_pay(assignment=assignment, amount=Decimal("0.50"), reason="agreed", key="log:1")
    run_operations()
    Client().post("/accounts/login/", {"username": "alice", "password": "wrong-password-x1"})

    text = "\n".join(
        f"{r.name} {r.getMessage()} {r.args!r} {getattr(r, 'exc_text', '') or ''}"
        for r in caplog.records
    )
    assert len(caplog.records) > 5, "the flow should have logged something"
    for secret in (TOKEN, django_settings.SECRET_KEY, "wrong-password-x1", WEBHOOK_SECRET):
        assert secret not in text
    for worker_id in (session["participant"], "b" * 24):
        assert worker_id not in text
