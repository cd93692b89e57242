"""Prolific operations on the fake, each executed again (a redelivered task) and after
injected faults: pause / resume / stop, bulk approval, auto-approval after sync,
messages, qualification groups, unblock."""

from __future__ import annotations

import pytest

from campaigns.design.services import campaign_transition
from campaigns.models import (
    Assignment,
    AssignmentStatus,
    CampaignState,
    LedgerEntry,
    OperationKind,
    OperationState,
    ProviderOperation,
    QualificationGrant,
    QualificationType,
    Worker,
    WorkerBlock,
)
from campaigns.platforms.prolific import provider as prolific_provider
from campaigns.platforms.prolific.studies import (
    campaign_provider_pause,
    campaign_provider_resume,
    campaign_provider_stop,
    prolific_studies_sync,
)
from campaigns.platforms.review import (
    IdentityUnconfirmedError,
    paid_assignment_approve,
    paid_assignment_reject,
    paid_assignments_approve,
)
from campaigns.platforms.workers import (
    paid_qualification_grant,
    paid_qualification_revoke,
    paid_worker_block,
    paid_worker_unblock,
    paid_workers_notify,
)
from qaportal.errors import DomainError
from tests.campaigns.platforms.conftest import execute, make_campaign, run_operations
from tests.campaigns.platforms.test_prolific_flow import publish, work

pytestmark = pytest.mark.django_db

TRANSITIONS = r"/api/v1/studies/.*/transition/"


def _actions(fake) -> list[str]:
    return [c.body["action"] for c in fake.calls("POST", TRANSITIONS) if c.status == 200]


def _run(ops) -> None:
    for op in ops:
        for _ in range(2):  # the second run is a redelivered task: changes nothing
            done = execute(op.pk)
            assert done.state == OperationState.DONE, done.last_error


# --- Pause, resume, stop ----------------------------------------------------------------


def test_pause_resume_stop_follow_the_campaign(prolific_stage, fake):
    campaign, stage = prolific_stage
    study_id, _ = publish(stage, fake)

    paused = campaign_provider_pause(campaign=campaign)
    assert [op.idempotency_key for op in paused] == [f"pause:study:{study_id}:0"]
    assert campaign_provider_pause(campaign=campaign) == paused  # asked twice: once
    _run(paused)
    assert fake.state.studies[study_id]["status"] == "PAUSED"

    resumed = campaign_provider_resume(campaign=campaign)
    assert [op.idempotency_key for op in resumed] == [f"resume:study:{study_id}:1"]
    _run(resumed)
    assert fake.state.studies[study_id]["status"] == "ACTIVE"

    # Paused again: a new operation, not the first pause found by its key.
    again = campaign_provider_pause(campaign=campaign)
    assert [op.idempotency_key for op in again] == [f"pause:study:{study_id}:2"]
    _run(again)

    stopped = campaign_provider_stop(campaign=campaign)
    _run(stopped)
    assert fake.state.studies[study_id]["status"] == "COMPLETED"  # STOP, as the reference says
    # A stop is final: resuming afterwards asks for nothing new.
    assert campaign_provider_resume(campaign=campaign) == stopped
    assert _actions(fake) == ["PUBLISH", "PAUSE", "START", "PAUSE", "STOP"]
    assert ProviderOperation.objects.filter(kind=OperationKind.PUBLISH_STUDY).count() == 1


def test_pause_answer_lost_then_retry_finds_the_study_paused(prolific_stage, fake):
    campaign, stage = prolific_stage
    study_id, _ = publish(stage, fake)
    fake.inject("POST", TRANSITIONS, "drop_after")
    [op] = campaign_provider_pause(campaign=campaign)
    # The client repeats the (idempotent) transition; Prolific refuses to pause a paused
    # study, and the provider finds it paused: done.
    op = execute(op.pk)
    assert op.state == OperationState.DONE, op.last_error
    assert fake.state.studies[study_id]["status"] == "PAUSED"
    assert [c.status for c in fake.calls("POST", TRANSITIONS)][1:] == [200, 400]
    assert _actions(fake) == ["PUBLISH", "PAUSE"]


def test_pause_of_a_finished_study_is_skipped(prolific_stage, fake):
    campaign, stage = prolific_stage
    study_id, _ = publish(stage, fake)
    fake.state.studies[study_id]["status"] = "COMPLETED"
    [op] = campaign_provider_pause(campaign=campaign)
    op = execute(op.pk)
    assert op.state == OperationState.DONE
    assert (op.result or {})["skipped"] is True
    assert _actions(fake) == ["PUBLISH"]


def test_transitions_of_a_local_campaign_ask_for_nothing(requester, fake):
    campaign, _ = make_campaign(requester, provider="local", slug="local-pause")
    campaign_transition(campaign=campaign, to_state=CampaignState.PAUSED)
    assert campaign_provider_pause(campaign=campaign) == []
    assert campaign_provider_stop(campaign=campaign) == []


# --- Bulk approval ----------------------------------------------------------------------


def _submitted(client, fake, study_id, stage, n: int) -> list[Assignment]:
    sessions = []
    for _ in range(n):
        client.cookies.clear()
        session, _ = work(client, fake, study_id, stage)
        sessions.append(session["id"])
    prolific_studies_sync()
    return list(Assignment.objects.filter(provider_assignment_id__in=sessions).order_by("pk"))


def test_bulk_approve_is_one_operation_with_the_single_ledger(prolific_stage, fake, client):
    _, stage = prolific_stage
    study_id, _ = publish(stage, fake)
    first, second = _submitted(client, fake, study_id, stage, 2)

    op = paid_assignments_approve(
        assignments=[second, first], decided_by=None, source="requester", reason="good"
    )
    assert op is not None
    assert op.idempotency_key.startswith("approve:bulk:2:")
    # The same set in any order is the same operation; approving one alone finds it.
    assert (
        paid_assignments_approve(assignments=[first, second], source="requester", reason="") == op
    )
    assert paid_assignment_approve(assignment=first, source="requester") == op
    # The first answer is lost: approving is idempotent, so the client repeats the call.
    fake.inject("POST", r"/api/v1/submissions/bulk-approve/", "drop_after")
    _run([op])

    bulk = fake.calls("POST", r"/api/v1/submissions/bulk-approve/")
    assert [c.body for c in bulk] == [
        {
            "submission_ids": sorted(
                [str(first.provider_assignment_id), str(second.provider_assignment_id)]
            )
        }
    ] * 2
    for a in (first, second):
        a.refresh_from_db()
        assert a.status == AssignmentStatus.APPROVED
        assert a.decision_source == "requester"
        assert fake.submission(a.provider_assignment_id)["status"] == "APPROVED"
    ledger = {e.key: (e.kind, str(e.amount), e.status) for e in LedgerEntry.objects.all()}
    assert ledger == {
        f"reward:assignment:{first.pk}": ("reward", "1.00", "paid"),
        f"platform_fee:assignment:{first.pk}": ("platform_fee", "0.33", "paid"),
        f"reward:assignment:{second.pk}": ("reward", "1.00", "paid"),
        f"platform_fee:assignment:{second.pk}": ("platform_fee", "0.33", "paid"),
    }
    assert paid_assignments_approve(assignments=[first, second], source="requester") == op
    assert ProviderOperation.objects.filter(kind=OperationKind.APPROVE).count() == 1


def test_bulk_approval_is_confirmed_asynchronously_before_anything_is_paid(
    prolific_stage, fake, client, monkeypatch
):
    """Prolific answers "the request has been made": the assignments are approved and the
    ledger paid only once every submission reads APPROVED; chunks of at most 1,000 ids
    (1 here), each sent once whatever the retries."""
    monkeypatch.setattr(prolific_provider, "BULK_APPROVE_MAX", 1)
    _, stage = prolific_stage
    study_id, _ = publish(stage, fake)
    subs = _submitted(client, fake, study_id, stage, 2)
    fake.async_lag = 50  # Prolific is slow today
    op = paid_assignments_approve(assignments=subs, source="requester", reason="good")
    assert op is not None
    assert op.payload["study_ids"] == [study_id]
    op = execute(op.pk)
    assert op.state == OperationState.PENDING  # waiting, not failed, not done
    assert "still approving 2 of 2" in op.last_error
    bulk = fake.calls("POST", r"/api/v1/submissions/bulk-approve/")
    assert [len(c.body["submission_ids"]) for c in bulk] == [1, 1]
    for a in subs:
        a.refresh_from_db()
        assert a.status == AssignmentStatus.SUBMITTED
    assert set(LedgerEntry.objects.values_list("status", flat=True)) == {"committed"}
    fake.settle()  # Prolific has done it
    op = execute(op.pk)
    assert op.state == OperationState.DONE, op.last_error
    assert len(fake.calls("POST", r"/api/v1/submissions/bulk-approve/")) == 2  # not again
    for a in subs:
        a.refresh_from_db()
        assert a.status == AssignmentStatus.APPROVED
    assert set(LedgerEntry.objects.values_list("status", flat=True)) == {"paid"}


def test_waiting_for_prolific_spends_no_attempts_and_ends_keeping_the_money_committed(
    prolific_stage, fake, client, settings
):
    settings.PROVIDER_OPERATION_MAX_ATTEMPTS = 2
    _, stage = prolific_stage
    study_id, _ = publish(stage, fake)
    subs = _submitted(client, fake, study_id, stage, 2)
    fake.async_lag = 1000
    op = paid_assignments_approve(assignments=subs, source="requester")
    assert op is not None
    for _ in range(5):  # more checks than attempts: waiting is not failing
        op = execute(op.pk)
        assert op.state == OperationState.PENDING
    assert op.attempts == 0
    settings.PROVIDER_OPERATION_MAX_WAIT_SECONDS = 0  # but not for ever
    op = execute(op.pk)
    assert op.state == OperationState.FAILED
    assert "Gave up after waiting" in op.last_error
    # The approvals were asked for: their fate is Prolific's, so the money stays committed.
    assert set(LedgerEntry.objects.values_list("status", flat=True)) == {"committed"}


def test_bulk_approval_of_a_submission_rejected_on_prolific_fails_for_a_person(
    prolific_stage, fake, client
):
    _, stage = prolific_stage
    study_id, _ = publish(stage, fake)
    first, second = _submitted(client, fake, study_id, stage, 2)
    fake.async_lag = 50
    op = paid_assignments_approve(assignments=[first, second], source="requester")
    assert op is not None
    assert execute(op.pk).state == OperationState.PENDING
    fake.state.submissions[second.provider_assignment_id]["status"] = "REJECTED"  # by hand
    op = execute(op.pk)
    assert op.state == OperationState.FAILED
    assert "ended otherwise on Prolific (REJECTED)" in op.last_error
    assert "paid" not in set(LedgerEntry.objects.values_list("status", flat=True))


def test_bulk_approve_refuses_an_unconfirmed_identity_and_asks_nothing(
    prolific_stage, fake, client
):
    _, stage = prolific_stage
    study_id, _ = publish(stage, fake)
    [good] = _submitted(client, fake, study_id, stage, 1)
    client.cookies.clear()
    forged_session, _ = work(client, fake, study_id, stage, forged=True)
    prolific_studies_sync()
    forged = Assignment.objects.get(provider_assignment_id=forged_session["id"])
    with pytest.raises(IdentityUnconfirmedError):
        paid_assignments_approve(assignments=[good, forged], source="requester")
    assert not ProviderOperation.objects.filter(kind=OperationKind.APPROVE).exists()
    assert not LedgerEntry.objects.exists()


def test_reject_after_bulk_approval_is_refused(prolific_stage, fake, client):
    _, stage = prolific_stage
    study_id, _ = publish(stage, fake)
    [a] = _submitted(client, fake, study_id, stage, 1)
    paid_assignments_approve(assignments=[a], source="requester")
    with pytest.raises(DomainError, match="approval"):
        paid_assignment_reject(
            assignment=a, decided_by=None, source="requester", reason="late", feedback="x" * 120
        )


# --- Auto-approval after sync -----------------------------------------------------------


def test_sync_auto_approves_confirmed_submissions_only(requester, fake, client):
    _, stage = make_campaign(requester, provider="prolific", slug="auto", items=3)
    stage.review_rules = [{"rule": "auto_approve"}]
    stage.save(update_fields=["review_rules"])
    study_id, _ = publish(stage, fake)
    session, _ = work(client, fake, study_id, stage)
    client.cookies.clear()
    forged, _ = work(client, fake, study_id, stage, forged=True)
    client.cookies.clear()
    real = fake.start_submission(study_id)  # someone else's session, used with another PID
    response = client.get(
        "/work/prolific/",
        {"PROLIFIC_PID": "b" * 24, "STUDY_ID": study_id, "SESSION_ID": real["id"]},
    )
    client.post(response["Location"], {"questions/0/question": "Q?", "questions/0/answer": "A"})
    fake.complete_submission(real["id"], "X")

    prolific_studies_sync()
    [op] = ProviderOperation.objects.filter(kind=OperationKind.APPROVE)
    assert op.payload["source"] == "rule:auto_approve"
    assert op.payload["submission_ids"] == [session["id"]]
    run_operations()
    by_session = {a.provider_assignment_id: a for a in Assignment.objects.all()}
    assert by_session[session["id"]].status == AssignmentStatus.APPROVED
    assert by_session[forged["id"]].status == AssignmentStatus.SUBMITTED
    assert by_session[real["id"]].status == AssignmentStatus.SUBMITTED
    assert by_session[real["id"]].review_details["identity"]["status"] == "mismatch"
    assert set(
        LedgerEntry.objects.values_list("assignment__provider_assignment_id", flat=True)
    ) == {session["id"]}
    # Syncing again asks for nothing more.
    prolific_studies_sync()
    assert ProviderOperation.objects.filter(kind=OperationKind.APPROVE).count() == 1


def test_sync_does_not_approve_before_prolific_has_the_submission(requester, fake, client):
    _, stage = make_campaign(requester, provider="prolific", slug="auto-early")
    stage.review_rules = [{"rule": "auto_approve"}]
    stage.save(update_fields=["review_rules"])
    study_id, _ = publish(stage, fake)
    session = fake.start_submission(study_id)
    response = client.get(
        "/work/prolific/",
        {"PROLIFIC_PID": session["participant"], "STUDY_ID": study_id, "SESSION_ID": session["id"]},
    )
    client.post(response["Location"], {"questions/0/question": "Q?", "questions/0/answer": "A"})
    prolific_studies_sync()  # confirmed, but still ACTIVE on Prolific (not completed there)
    assert not ProviderOperation.objects.filter(kind=OperationKind.APPROVE).exists()
    fake.complete_submission(session["id"], "X")
    prolific_studies_sync()
    assert ProviderOperation.objects.filter(kind=OperationKind.APPROVE).count() == 1


def test_without_the_rule_sync_approves_nothing(prolific_stage, fake, client):
    _, stage = prolific_stage
    study_id, _ = publish(stage, fake)
    _submitted(client, fake, study_id, stage, 1)
    assert not ProviderOperation.objects.filter(kind=OperationKind.APPROVE).exists()


# --- Messages ---------------------------------------------------------------------------


def _participant(n: str) -> Worker:
    return Worker.objects.create(provider="prolific", external_id=n * 24)


def test_notify_sends_once(prolific_stage, fake):
    campaign, stage = prolific_stage
    study_id, _ = publish(stage, fake)
    workers = [_participant("d"), _participant("e")]
    op = paid_workers_notify(
        campaign=campaign, study_id=study_id, workers=workers, subject="Thanks", body="Hi", key="k1"
    )
    again = paid_workers_notify(
        campaign=campaign, study_id=study_id, workers=workers, subject="Thanks", body="Hi", key="k1"
    )
    assert again == op
    _run([op])
    assert fake.state.messages == [
        {"ids": ["d" * 24, "e" * 24], "body": "Thanks\n\nHi", "study_id": study_id}
    ]
    op.refresh_from_db()
    assert (op.result or {})["sent"] == 2


def test_notify_throttled_is_retried_and_sent_once(prolific_stage, fake):
    campaign, stage = prolific_stage
    study_id, _ = publish(stage, fake)
    fake.inject("POST", r"/api/v1/messages/bulk/", "429", retry_after="0")
    op = paid_workers_notify(
        campaign=campaign,
        study_id=study_id,
        workers=[_participant("d")],
        subject="",
        body="Hi",
        key="k2",
    )
    _run([op])
    assert len(fake.state.messages) == 1


def test_notify_answer_lost_is_never_sent_twice(prolific_stage, fake):
    campaign, stage = prolific_stage
    study_id, _ = publish(stage, fake)
    fake.inject("POST", r"/api/v1/messages/bulk/", "drop_after")
    op = paid_workers_notify(
        campaign=campaign,
        study_id=study_id,
        workers=[_participant("d")],
        subject="",
        body="Hi",
        key="k3",
    )
    op = execute(op.pk)
    assert op.state == OperationState.PENDING
    op = execute(op.pk)
    assert op.state == OperationState.FAILED
    assert "not sending it twice" in op.last_error
    assert len(fake.state.messages) == 1


# --- Qualifications (participant groups) and unblock ------------------------------------


def _group(fake, name: str) -> dict:
    [group] = [g for g in fake.state.groups.values() if g["name"] == name]
    return group


def test_grant_revoke_grant_again_moves_the_participant_each_time(requester, fake):
    qualification = QualificationType.objects.create(
        owner=requester, name="Good linkers", kind="manual"
    )
    worker = _participant("c")
    fake.inject("POST", r"/api/v1/participant-groups/$", "drop_after")

    grant, op = paid_qualification_grant(
        qualification_type=qualification, worker=worker, source="requester"
    )
    assert op.idempotency_key == f"grant:{qualification.pk}:{worker.pk}"
    assert execute(op.pk).state == OperationState.PENDING  # the group's creation answer lost
    _run([op])
    group = _group(fake, f"qaportal-qual-{qualification.pk}")
    assert len(fake.state.groups) == 1  # found again by name, not created twice
    assert group["participant_ids"] == ["c" * 24]
    qualification.refresh_from_db()
    assert qualification.provider_qualification_id == group["id"]
    assert paid_qualification_grant(
        qualification_type=qualification, worker=worker, source="requester"
    ) == (grant, op)

    revoked = paid_qualification_revoke(qualification_type=qualification, worker=worker)
    assert revoked is not None
    _, revoke = revoked
    assert revoke.idempotency_key == f"revoke:{qualification.pk}:{worker.pk}:1"
    _run([revoke])
    assert group["participant_ids"] == []
    assert QualificationGrant.objects.get(pk=grant.pk).revoked_at is not None

    _, regrant = paid_qualification_grant(
        qualification_type=qualification, worker=worker, source="requester"
    )
    assert regrant.idempotency_key == f"grant:{qualification.pk}:{worker.pk}:2"
    assert regrant.payload["group_id"] == group["id"]
    _run([regrant])
    assert group["participant_ids"] == ["c" * 24]
    assert len(fake.state.groups) == 1


def test_revoke_without_a_grant_asks_nothing(requester, fake):
    qualification = QualificationType.objects.create(
        owner=requester, name="None yet", kind="manual"
    )
    worker = _participant("c")
    assert paid_qualification_revoke(qualification_type=qualification, worker=worker) is None


def test_unblock_removes_from_the_block_list_once(requester, fake):
    worker = _participant("c")
    block, op = paid_worker_block(requester=requester, worker=worker, reason="spam")
    _run([op])
    group = _group(fake, f"qaportal-block-{requester.pk}")
    assert group["participant_ids"] == ["c" * 24]

    fake.inject("DELETE", r"/api/v1/participant-groups/", "503")
    lifted = paid_worker_unblock(requester=requester, worker=worker)
    assert lifted is not None
    lifted_block, unblock = lifted
    assert lifted_block.pk == block.pk
    assert unblock.idempotency_key == f"unblock:{requester.pk}:{worker.pk}:{block.pk}"
    _run([unblock])
    assert group["participant_ids"] == []
    assert WorkerBlock.objects.get(pk=block.pk).lifted_at is not None
    assert paid_worker_unblock(requester=requester, worker=worker) is None
    deletes = fake.calls("DELETE", r"/api/v1/participant-groups/")
    assert [c.status for c in deletes] == [503, 200]  # retried in the client; re-run: skipped

    # Blocked again later: a new block, a new platform call.
    block2, op2 = paid_worker_block(requester=requester, worker=worker, reason="again")
    assert block2.pk != block.pk
    _run([op2])
    assert group["participant_ids"] == ["c" * 24]


def test_campaign_state_changes_move_its_studies(prolific_stage, fake):
    """Going live publishes the study; pausing, resuming and completing the campaign
    (the requester's buttons and the API call ``campaign_start``) move it along."""
    from campaigns.platforms.publishing import campaign_start

    campaign, _stage = prolific_stage
    campaign = campaign_start(campaign=campaign, to_state="live")
    run_operations()
    [study_id] = list(fake.state.studies)
    assert fake.state.studies[study_id]["status"] == "ACTIVE"

    campaign = campaign_start(campaign=campaign, to_state="paused")
    run_operations()
    assert fake.state.studies[study_id]["status"] == "PAUSED"
    campaign = campaign_start(campaign=campaign, to_state="live")
    run_operations()
    assert fake.state.studies[study_id]["status"] == "ACTIVE"
    campaign_start(campaign=campaign, to_state="completed")
    run_operations()
    assert fake.state.studies[study_id]["status"] == "COMPLETED"  # STOP, as the reference says
    assert _actions(fake) == ["PUBLISH", "PAUSE", "START", "STOP"]
