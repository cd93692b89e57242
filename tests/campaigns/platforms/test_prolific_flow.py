"""End to end on the fake Prolific: publish, work through the entry URL, sync, approve,
bonus, ledger; crash during a bonus payment; a forged participant id; webhooks."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from decimal import Decimal
from urllib.parse import parse_qs, urlparse

import pytest

from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    HITStatus,
    LedgerEntry,
    OperationState,
    ProviderOperation,
)
from campaigns.platforms.operations import operations_reconcile
from campaigns.platforms.prolific.client import ProlificClient
from campaigns.platforms.prolific.studies import prolific_studies_sync
from campaigns.platforms.publishing import stage_provider_publish
from campaigns.platforms.review import (
    BudgetExceededError,
    IdentityUnconfirmedError,
    paid_assignment_approve,
    paid_assignment_reject,
    paid_bonus_pay,
)
from campaigns.platforms.workers import paid_worker_block
from tests.campaigns.platforms.conftest import (
    FORM,
    WEBHOOK_SECRET,
    execute,
    make_campaign,
    run_operations,
)

pytestmark = pytest.mark.django_db


def publish(stage, fake):
    op = stage_provider_publish(stage=stage)
    assert op is not None
    run_operations()
    op.refresh_from_db()
    assert op.state == OperationState.DONE, op.last_error
    return (op.result or {})["study_id"], op.payload["codes"]


def work(client, fake, study_id, stage, *, pid=None, forged=False):
    """A participant opens the study URL, submits, and is sent back to Prolific."""
    if forged:
        session = {"id": "f" * 24, "participant": pid or "a" * 24}
    else:
        session = fake.start_submission(study_id, pid)
    response = client.get(
        "/work/prolific/",
        {
            "PROLIFIC_PID": session["participant"],
            "STUDY_ID": study_id,
            "SESSION_ID": session["id"],
            "qa_stage": stage.pk,
        },
    )
    assert response.status_code == 302, response.content[:500]
    page = client.get(response["Location"])
    assert page.status_code == 200
    done = client.post(response["Location"], FORM)
    assert done.status_code == 302
    location = urlparse(done["Location"])
    assert location.netloc == "app.prolific.com"
    code = parse_qs(location.query)["cc"][0]
    if not forged:
        fake.complete_submission(session["id"], code)
    return session, code


def test_publish_creates_and_publishes_one_study(prolific_stage, fake):
    _campaign, stage = prolific_stage
    study_id, _codes = publish(stage, fake)
    study = fake.state.studies[study_id]
    assert study["status"] == "ACTIVE"
    assert study["total_available_places"] == 2
    assert study["reward"] == 100
    assert study["external_study_url"].startswith(
        "https://qaportal.example.org/work/prolific/?PROLIFIC_PID={{%PROLIFIC_PID%}}"
        "&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
    )
    assert {c["code_type"] for c in study["completion_codes"]} == {
        "COMPLETED",
        "FAILED_ATTENTION_CHECK",
        "OTHER",
    }
    assert {
        "filter_id": "approval_rate",
        "selected_range": {"lower": "95", "upper": "100"},
    } in study["filters"]
    assert study["maximum_allowed_time"] >= 2 + 2 * 5 + 2 * 5**0.5  # Prolific's least
    assert set(HIT.objects.filter(stage=stage).values_list("status", flat=True)) == {
        HITStatus.PUBLISHED
    }
    assert set(HIT.objects.values_list("provider_group_id", flat=True)) == {study_id}
    # Asking again publishes nothing more.
    assert stage_provider_publish(stage=stage) is None
    assert ProviderOperation.objects.count() == 1
    assert len(fake.calls("POST", r"/api/v1/studies/$")) == 1


def test_full_flow_sync_approve_bonus_ledger(prolific_stage, fake, client):
    _campaign, stage = prolific_stage
    study_id, codes = publish(stage, fake)
    session, code = work(client, fake, study_id, stage)
    assert code == codes["completed"]
    assignment = Assignment.objects.get(provider_assignment_id=session["id"])
    assert assignment.status == AssignmentStatus.SUBMITTED
    assert assignment.worker.external_id == session["participant"]

    assert prolific_studies_sync() == 1
    assignment.refresh_from_db()
    assert assignment.review_details["identity"] == {"status": "confirmed"}
    assert assignment.review_details["prolific"]["status"] == "AWAITING REVIEW"

    paid_assignment_approve(assignment=assignment, source="requester")
    paid_bonus_pay(assignment=assignment, amount=Decimal("0.50"), reason="agreed", key="t:1")
    run_operations()
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.APPROVED
    assert fake.submission(session["id"])["status"] == "APPROVED"
    assert fake.submission(session["id"])["bonus_payments"] == [50]
    ledger = {e.key: (e.kind, e.amount, e.status, e.currency) for e in LedgerEntry.objects.all()}
    assert ledger == {
        f"reward:assignment:{assignment.pk}": ("reward", Decimal("1.00"), "paid", "GBP"),
        f"platform_fee:assignment:{assignment.pk}": (
            "platform_fee",
            Decimal("0.33"),
            "paid",
            "GBP",
        ),
        "bonus:t:1": ("bonus", Decimal("0.50"), "paid", "GBP"),
        "bonus_fee:t:1": ("bonus_fee", Decimal("0.17"), "paid", "GBP"),
    }
    # Asking again changes nothing and pays nothing more.
    paid_assignment_approve(assignment=assignment, source="requester")
    paid_bonus_pay(assignment=assignment, amount=Decimal("0.50"), reason="agreed", key="t:1")
    run_operations()
    assert len(fake.calls("POST", r"/api/v1/bulk-bonus-payments/")) == 1
    assert LedgerEntry.objects.count() == 4


def test_reject_with_category_and_message(prolific_stage, fake, client):
    _, stage = prolific_stage
    study_id, _ = publish(stage, fake)
    session, _ = work(client, fake, study_id, stage)
    prolific_studies_sync()
    assignment = Assignment.objects.get(provider_assignment_id=session["id"])
    with pytest.raises(Exception, match="100"):
        paid_assignment_reject(
            assignment=assignment, decided_by=None, source="requester", reason="short"
        )
    message = "Your answer does not follow the instructions: " + "x" * 80
    paid_assignment_reject(
        assignment=assignment,
        decided_by=None,
        source="requester",
        reason="low effort",
        feedback=message,
        rejection_category="LOW_EFFORT",
    )
    run_operations()
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.REJECTED
    call = fake.calls("POST", r"/api/v1/submissions/.*/transition/")[-1]
    assert call.body == {"action": "REJECT", "message": message, "rejection_category": "LOW_EFFORT"}


def test_forged_pid_is_flagged_and_never_paid(prolific_stage, fake, client):
    _, stage = prolific_stage
    study_id, _ = publish(stage, fake)
    session, _ = work(client, fake, study_id, stage, forged=True)
    assignment = Assignment.objects.get(provider_assignment_id=session["id"])
    assert assignment.status == AssignmentStatus.SUBMITTED
    prolific_studies_sync()
    assignment.refresh_from_db()
    assert assignment.review_details["identity"]["status"] == "unconfirmed"
    with pytest.raises(IdentityUnconfirmedError):
        paid_assignment_approve(assignment=assignment, source="requester")
    with pytest.raises(IdentityUnconfirmedError):
        paid_bonus_pay(assignment=assignment, amount=Decimal("1"), reason="x", key="forged")
    assert not LedgerEntry.objects.exists()
    assert not fake.calls("POST", r"/api/v1/(submissions/.*/transition|bulk-bonus)")


def test_stolen_session_of_another_participant_is_a_mismatch(prolific_stage, fake, client):
    _, stage = prolific_stage
    study_id, _ = publish(stage, fake)
    real = fake.start_submission(study_id)
    response = client.get(
        "/work/prolific/",
        {"PROLIFIC_PID": "b" * 24, "STUDY_ID": study_id, "SESSION_ID": real["id"]},
    )
    client.post(response["Location"], FORM)
    prolific_studies_sync()
    assignment = Assignment.objects.get(provider_assignment_id=real["id"])
    assert assignment.review_details["identity"]["status"] == "mismatch"
    with pytest.raises(IdentityUnconfirmedError):
        paid_assignment_approve(assignment=assignment, source="requester")


def test_bonus_crash_after_platform_paid_then_reconcile_pays_once(
    prolific_stage, fake, client, monkeypatch
):
    _, stage = prolific_stage
    study_id, _ = publish(stage, fake)
    session, _ = work(client, fake, study_id, stage)
    prolific_studies_sync()
    assignment = Assignment.objects.get(provider_assignment_id=session["id"])
    op = paid_bonus_pay(assignment=assignment, amount=Decimal("2.00"), reason="r", key="crash")

    class Crash(BaseException):
        pass

    original = ProlificClient.bonus_pay

    def pay_then_crash(self, bulk_id):
        original(self, bulk_id)  # Prolific accepted and pays...
        raise Crash  # ...and the worker dies before recording it

    monkeypatch.setattr(ProlificClient, "bonus_pay", pay_then_crash)
    with pytest.raises(Crash):
        execute(op.pk)
    monkeypatch.setattr(ProlificClient, "bonus_pay", original)
    op.refresh_from_db()
    assert op.state == OperationState.RUNNING
    assert (op.result or {})["pay_requested"] is True
    assert "paid" not in (op.result or {})
    assert LedgerEntry.objects.get(key="bonus:crash").status == "committed"

    # Not stale yet: a plain re-run does not touch a running operation.
    assert execute(op.pk).state == OperationState.RUNNING
    ProviderOperation.objects.filter(pk=op.pk).update(
        updated_at=op.updated_at - __import__("datetime").timedelta(hours=1)
    )
    assert operations_reconcile() == {"retry": 0, "recover": 1}
    op = execute(op.pk, recover=True)
    assert op.state == OperationState.DONE
    assert (op.result or {})["confirmed_by"] == "submission.bonus_payments"
    assert len(fake.calls("POST", r"/api/v1/bulk-bonus-payments/")) == 1
    assert fake.submission(session["id"])["bonus_payments"] == [200]
    assert LedgerEntry.objects.get(key="bonus:crash").status == "paid"


def test_bonus_throttled_to_the_end_of_retries_clears_pay_requested(
    prolific_stage, fake, client, settings
):
    settings.PROLIFIC_MAX_RETRIES = 1
    _, stage = prolific_stage
    study_id, _ = publish(stage, fake)
    session, _ = work(client, fake, study_id, stage)
    prolific_studies_sync()
    assignment = Assignment.objects.get(provider_assignment_id=session["id"])
    op = paid_bonus_pay(assignment=assignment, amount=Decimal("1.00"), reason="r", key="busy")
    fake.inject("POST", r"/api/v1/bulk-bonus-payments/", "429", times=2, retry_after="0")
    op = execute(op.pk)
    assert op.state == OperationState.PENDING
    assert op.result is not None
    assert op.result["pay_requested"] is False  # a 429 was surely not processed
    assert fake.submission(session["id"])["bonus_payments"] == []
    op = execute(op.pk)  # so the next attempt pays
    assert op.state == OperationState.DONE, op.last_error
    assert fake.submission(session["id"])["bonus_payments"] == [100]
    assert [c.status for c in fake.calls("POST", r"/api/v1/bulk-bonus-payments/")] == [
        429,
        429,
        202,
    ]


def test_a_bonus_is_confirmed_by_its_own_payment_not_an_earlier_equal_one(
    prolific_stage, fake, client
):
    _, stage = prolific_stage
    study_id, _ = publish(stage, fake)
    session, _ = work(client, fake, study_id, stage)
    prolific_studies_sync()
    assignment = Assignment.objects.get(provider_assignment_id=session["id"])
    first = paid_bonus_pay(assignment=assignment, amount=Decimal("0.50"), reason="r", key="b1")
    assert execute(first.pk).state == OperationState.DONE
    fake.async_lag = 50  # the second bonus of the same amount takes its time
    second = paid_bonus_pay(assignment=assignment, amount=Decimal("0.50"), reason="r", key="b2")
    second = execute(second.pk)
    assert second.state == OperationState.PENDING  # the earlier £0.50 is not this one
    assert second.result is not None
    assert second.result["accepted"] == second.result["bulk_bonus_id"]
    assert LedgerEntry.objects.get(key="bonus:b2").status == "committed"
    fake.settle()
    second = execute(second.pk)
    assert second.state == OperationState.DONE
    assert LedgerEntry.objects.get(key="bonus:b2").status == "paid"
    assert fake.submission(session["id"])["bonus_payments"] == [50, 50]
    assert len(fake.calls("POST", r"/api/v1/bulk-bonus-payments/")) == 2


def test_bonus_pay_dropped_connection_is_never_repeated_blindly(prolific_stage, fake, client):
    _, stage = prolific_stage
    study_id, _ = publish(stage, fake)
    session, _ = work(client, fake, study_id, stage)
    prolific_studies_sync()
    assignment = Assignment.objects.get(provider_assignment_id=session["id"])
    op = paid_bonus_pay(assignment=assignment, amount=Decimal("1.00"), reason="r", key="drop")
    fake.inject("POST", r"/api/v1/bulk-bonus-payments/", "drop_after")
    op = execute(op.pk)
    assert op.state == OperationState.PENDING  # transient: the answer was lost
    op = execute(op.pk)  # the retry finds the payment
    assert op.state == OperationState.DONE
    assert len(fake.calls("POST", r"/api/v1/bulk-bonus-payments/")) == 1
    assert fake.submission(session["id"])["bonus_payments"] == [100]


def test_publish_retries_429_honouring_retry_after(prolific_stage, fake):
    _, stage = prolific_stage
    fake.inject("POST", r"/api/v1/studies/$", "429", retry_after="1")
    started = time.monotonic()
    _study_id, _ = publish(stage, fake)
    assert time.monotonic() - started >= 1.0
    statuses = [c.status for c in fake.calls("POST", r"/api/v1/studies/$")]
    assert statuses == [429, 201]
    assert len(fake.state.studies) == 1


def test_publish_5xx_on_create_does_not_make_a_second_study(prolific_stage, fake):
    _, stage = prolific_stage
    fake.inject("POST", r"/api/v1/studies/$", "drop_after")
    requested = stage_provider_publish(stage=stage)
    assert requested is not None
    op = execute(requested.pk)
    assert op.state == OperationState.PENDING
    op = execute(op.pk)
    assert op.state == OperationState.DONE, op.last_error
    assert len(fake.state.studies) == 1
    assert fake.state.studies[(op.result or {})["study_id"]]["status"] == "ACTIVE"


def test_budget_cap_refuses_publish_and_bonus(requester, fake, client):
    campaign, stage = make_campaign(
        requester, provider="prolific", slug="tight", budget=Decimal("2.00")
    )
    with pytest.raises(BudgetExceededError):
        stage_provider_publish(stage=stage)  # 2 places x (1.00 + 0.33) > 2.00
    campaign.budget_cap = Decimal("3.00")
    campaign.save(update_fields=["budget_cap"])
    study_id, _ = publish(stage, fake)
    session, _ = work(client, fake, study_id, stage)
    prolific_studies_sync()
    assignment = Assignment.objects.get(provider_assignment_id=session["id"])
    with pytest.raises(BudgetExceededError):
        paid_bonus_pay(assignment=assignment, amount=Decimal("1.00"), reason="r", key="big")


def test_block_adds_to_block_list_group_used_by_next_study(requester, fake, prolific_stage):
    from campaigns.models import Worker

    worker = Worker.objects.create(provider="prolific", external_id="c" * 24)
    _, op = paid_worker_block(requester=requester, worker=worker, reason="spam")
    run_operations()
    op.refresh_from_db()
    assert op.state == OperationState.DONE, op.last_error
    group = fake.state.groups[(op.result or {})["group_id"]]
    assert group["participant_ids"] == ["c" * 24]
    _, stage = prolific_stage
    study_id, _ = publish(stage, fake)
    filters = fake.state.studies[study_id]["filters"]
    assert {"filter_id": "participant_group_blocklist", "selected_values": [group["id"]]} in filters


def _signed(body: bytes, secret: str = WEBHOOK_SECRET, timestamp: str | None = None):
    timestamp = timestamp or str(int(time.time()))
    digest = hmac.new(secret.encode(), timestamp.encode() + body, hashlib.sha256).digest()
    return {
        "HTTP_X_PROLIFIC_REQUEST_SIGNATURE": base64.b64encode(digest).decode(),
        "HTTP_X_PROLIFIC_REQUEST_TIMESTAMP": timestamp,
    }


def test_webhook_valid_signature_enqueues_sync(fake, client, django_capture_on_commit_callbacks):
    body = json.dumps(
        {"event_type": "study.status.change", "resource_id": "abc123", "status": "ACTIVE"}
    ).encode()
    with django_capture_on_commit_callbacks() as callbacks:
        response = client.post(
            "/work/prolific/hooks/", body, content_type="application/json", **_signed(body)
        )
    assert response.status_code == 200
    assert response.json() == {"accepted": True, "study_id": "abc123"}
    assert len(callbacks) == 1


def test_submission_event_syncs_its_study_only(
    prolific_stage, fake, client, django_capture_on_commit_callbacks
):
    _campaign, stage = prolific_stage
    study_id, _ = publish(stage, fake)
    session, _ = work(client, fake, study_id, stage)
    body = json.dumps(
        {
            "event_type": "submission.status.change",
            "resource_id": session["id"],
            "status": "AWAITING REVIEW",
        }
    ).encode()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/work/prolific/hooks/", body, content_type="application/json", **_signed(body)
        )
    assert response.json() == {"accepted": True, "study_id": study_id}
    # The event drove the sync: the session is confirmed without waiting for polling.
    assignment = Assignment.objects.get(provider_assignment_id=session["id"])
    assert assignment.review_details["identity"]["status"] == "confirmed"
    # A session Prolific has and qaportal has not stored yet: its study, and only it.
    unstored = fake.start_submission(study_id)
    fake.state.studies["f" * 24] = {**fake.state.studies[study_id], "id": "f" * 24}
    before = len(fake.state.calls)
    hook = json.dumps(
        {"event_type": "submission.status.change", "resource_id": unstored["id"]}
    ).encode()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/work/prolific/hooks/", hook, content_type="application/json", **_signed(hook)
        )
    assert response.json() == {"accepted": True, "study_id": None, "submission_id": unstored["id"]}
    read = [(c.path, c.query.get("study")) for c in fake.state.calls[before:]]
    assert read[0] == (f"/api/v1/submissions/{unstored['id']}/", None)
    assert {q[0] for p, q in read[1:] if q} == {study_id}  # no other study was read
    # A submission Prolific does not know: nothing synced (logged).
    unknown = json.dumps(
        {"event_type": "submission.status.change", "resource_id": "0" * 24}
    ).encode()
    before = len(fake.state.calls)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/work/prolific/hooks/", unknown, content_type="application/json", **_signed(unknown)
        )
    assert [c.path for c in fake.state.calls[before:]] == [f"/api/v1/submissions/{'0' * 24}/"]


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"secret": "wrong"},
        {"timestamp": "1000"},
    ],
)
def test_webhook_invalid_signature_or_stale_is_refused(fake, client, headers):
    body = b'{"event_type": "submission.status.change"}'
    signed = _signed(
        body, secret=headers.get("secret", WEBHOOK_SECRET), timestamp=headers.get("timestamp")
    )
    if not headers:
        signed["HTTP_X_PROLIFIC_REQUEST_SIGNATURE"] = "bm9wZQ=="
    response = client.post("/work/prolific/hooks/", body, content_type="application/json", **signed)
    assert response.status_code == 403


@pytest.mark.parametrize("timestamp", ["NaN", "nan", "inf", "-Infinity", "1e400"])
def test_webhook_non_finite_timestamps_are_refused(fake, client, timestamp):
    body = b'{"event_type": "study.status.change", "resource_id": "abc123"}'
    response = client.post(
        "/work/prolific/hooks/",
        body,
        content_type="application/json",
        **_signed(body, timestamp=timestamp),
    )
    assert response.status_code == 403
    assert "timestamp" in response.json()["detail"]


def test_webhook_deep_body_is_checked_after_the_signature(fake, client):
    body = b"[" * 100_000
    unsigned = client.post(
        "/work/prolific/hooks/", body, content_type="application/json", **_signed(b"other")
    )
    assert unsigned.status_code == 403  # the signature is checked on the raw bytes first
    signed = client.post(
        "/work/prolific/hooks/", body, content_type="application/json", **_signed(body)
    )
    assert signed.status_code == 400
    assert "invalid JSON" in signed.json()["detail"]


def test_entry_rejects_incomplete_links_and_unknown_studies(fake, client, prolific_stage):
    assert client.get("/work/prolific/", {"PROLIFIC_PID": "x"}).status_code == 400
    response = client.get(
        "/work/prolific/", {"PROLIFIC_PID": "a" * 24, "STUDY_ID": "nope", "SESSION_ID": "s1"}
    )
    assert response.status_code == 404


def test_no_work_left_sends_the_screened_out_code(prolific_stage, fake, client):
    _, stage = prolific_stage
    study_id, codes = publish(stage, fake)
    work(client, fake, study_id, stage)
    client.logout()
    client.cookies.clear()
    work(client, fake, study_id, stage)
    client.cookies.clear()
    third = fake.start_submission(study_id)
    response = client.get(
        "/work/prolific/",
        {"PROLIFIC_PID": third["participant"], "STUDY_ID": study_id, "SESSION_ID": third["id"]},
    )
    assert response.status_code == 200
    assert codes["screened_out"].encode() in response.content
