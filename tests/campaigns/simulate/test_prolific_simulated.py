"""Simulated participants enter a Prolific study through its URL parameters (real worker
pages, in-process server), are sent back to Prolific's completion URL; then sync
against the fake Prolific, approve, bonus, and the ledger."""

from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal
from io import StringIO
from urllib.parse import parse_qs, urlsplit

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    LedgerEntry,
    OperationState,
    ProviderOperation,
)
from campaigns.platforms.prolific.studies import prolific_studies_sync
from campaigns.platforms.publishing import stage_provider_publish
from campaigns.platforms.review import paid_assignments_approve, paid_bonus_pay
from campaigns.simulate import ProlificHooks, ProlificSession, SimulationError, simulate_crowd
from tests.campaigns.platforms.conftest import make_campaign, run_operations
from tests.campaigns.platforms.fake_prolific import FakeProlific

pytestmark = pytest.mark.django_db(transaction=True)


class FakeProlificHooks(ProlificHooks):
    """Plays Prolific's side: the fake learns each simulated session as it happens."""

    def __init__(self, fake: FakeProlific) -> None:
        self.fake = fake
        self.started_sessions: list[ProlificSession] = []

    def started(self, session: ProlificSession) -> None:
        self.started_sessions.append(session)
        self.fake.start_submission(
            session.study_id, session.participant_id, submission_id=session.session_id
        )

    def completed(self, session: ProlificSession, code: str) -> None:
        self.fake.complete_submission(session.session_id, code)

    def returned(self, session: ProlificSession) -> None:
        self.fake.return_submission(session.session_id)


@pytest.fixture
def fake(settings) -> Iterator[FakeProlific]:
    with FakeProlific(token="sim-token") as server:
        settings.PROLIFIC_API_TOKEN = "sim-token"
        settings.PROLIFIC_API_URL = server.url
        settings.PROLIFIC_WORKSPACE_ID = "workspace-1"
        settings.PROLIFIC_BACKOFF_BASE = 0.01
        settings.SITE_URL = "https://qaportal.example.org"
        yield server


def _published(requester, fake, *, slug: str, items: int):
    campaign, stage = make_campaign(requester, provider="prolific", slug=slug, items=items)
    op = stage_provider_publish(stage=stage)
    assert op is not None
    run_operations()  # already run on commit (eager Celery); whatever is left
    op.refresh_from_db()
    assert op.state == OperationState.DONE, op.last_error
    return campaign, stage, op


def test_simulated_participants_work_sync_approve_bonus(requester, fake):
    campaign, stage, publish = _published(requester, fake, slug="sim-prolific", items=3)
    study_id = publish.result["study_id"]
    codes = publish.payload["codes"]
    hooks = FakeProlificHooks(fake)

    result = simulate_crowd(
        campaign=campaign, workers=4, seed=7, shares={"good": 1.0}, prolific_hooks=hooks
    )

    assert result.ok, "\n".join(result.lines())
    assert result.server_errors() == 0
    tally = result.stages[stage.pk]
    assert tally.submitted == 3  # three places; the fourth participant found none left
    # Every entry carried Prolific's URL parameters: a 24-hex PID, the study, a session.
    assert len(hooks.started_sessions) == 4
    assert all(re.fullmatch(r"[0-9a-f]{24}", s.participant_id) for s in hooks.started_sessions)
    assert {s.study_id for s in hooks.started_sessions} == {study_id}
    # Each stored submission was sent to the completion URL with the COMPLETED code.
    assert len(result.completion_urls) == 3
    for url in result.completion_urls:
        parts = urlsplit(url)
        assert (parts.scheme, parts.netloc, parts.path) == (
            "https",
            "app.prolific.com",
            "/submissions/complete",
        )
        assert parse_qs(parts.query)["cc"] == [codes["completed"]]
    statuses = sorted(s["status"] for s in fake.state.submissions.values())
    assert statuses == ["AWAITING REVIEW"] * 3 + ["RETURNED"]

    # Sync confirms the three participants, then approve (one bulk call) and a bonus.
    prolific_studies_sync(study_id=study_id)
    submitted = list(
        Assignment.objects.filter(hit__stage=stage, status=AssignmentStatus.SUBMITTED).order_by(
            "pk"
        )
    )
    assert len(submitted) == 3
    assert {a.review_details["identity"]["status"] for a in submitted} == {"confirmed"}
    completed = {
        s.participant_id
        for s in hooks.started_sessions
        if fake.submission(s.session_id)["status"] == "AWAITING REVIEW"
    }
    assert {a.worker.external_id for a in submitted} == completed
    paid_assignments_approve(assignments=submitted, source="requester", reason="simulated")
    best = submitted[0]
    paid_bonus_pay(assignment=best, amount=Decimal("0.50"), reason="best answer", key="sim:1")
    run_operations()

    for a in submitted:
        a.refresh_from_db()
        assert a.status == AssignmentStatus.APPROVED
        assert fake.submission(a.provider_assignment_id)["status"] == "APPROVED"
    assert fake.submission(best.provider_assignment_id)["bonus_payments"] == [50]
    assert len(fake.calls("POST", r"/api/v1/submissions/bulk-approve/")) == 1
    assert len(fake.calls("POST", r"/api/v1/bulk-bonus-payments/")) == 1
    ledger = {e.key: (e.kind, e.amount, e.status, e.currency) for e in LedgerEntry.objects.all()}
    expected = {}
    for a in submitted:
        expected[f"reward:assignment:{a.pk}"] = ("reward", Decimal("1.00"), "paid", "GBP")
        expected[f"platform_fee:assignment:{a.pk}"] = (
            "platform_fee",
            Decimal("0.33"),
            "paid",
            "GBP",
        )
    expected["bonus:sim:1"] = ("bonus", Decimal("0.50"), "paid", "GBP")
    expected["bonus_fee:sim:1"] = ("bonus_fee", Decimal("0.17"), "paid", "GBP")
    assert ledger == expected
    assert not ProviderOperation.objects.exclude(state=OperationState.DONE).exists()


def test_without_hooks_prolific_knows_nothing_and_nothing_is_payable(requester, fake):
    campaign, stage, publish = _published(requester, fake, slug="sim-unknown", items=1)
    out = StringIO()
    call_command("simulate_crowd", campaign.slug, "--workers=1", "--profiles=good=1", stdout=out)
    assert "sent back to Prolific: 1 completion URL(s)" in out.getvalue()
    prolific_studies_sync(study_id=publish.result["study_id"])
    [assignment] = Assignment.objects.filter(hit__stage=stage)
    assert assignment.status == AssignmentStatus.SUBMITTED
    assert assignment.review_details["identity"]["status"] == "unconfirmed"


def test_prolific_entry_refusals(requester, fake, mintaka_campaign):
    campaign, _stage = make_campaign(requester, provider="prolific", slug="sim-unpub")
    with pytest.raises(SimulationError, match="no published Prolific study"):
        simulate_crowd(campaign=campaign, workers=1, seed=0)
    HIT.objects.filter(stage__campaign=campaign).update(provider_group_id="s" * 24)
    with pytest.raises(SimulationError, match="approve-all"):
        simulate_crowd(campaign=campaign, workers=1, seed=0, approve_all=True)
    local = mintaka_campaign(slug="sim-local-entry", stages=1)
    from campaigns.platforms.publishing import campaign_start

    campaign_start(campaign=local, to_state="live")
    with pytest.raises(CommandError, match="needs a Prolific campaign"):
        call_command("simulate_crowd", local.slug, "--entry=prolific", stdout=StringIO())
