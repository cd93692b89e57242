"""Submission: stored exactly once, invalid answers kept for the form, review decisions."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from campaigns.models import Assignment, AssignmentStatus, Worker
from campaigns.work.allocation import assignment_accept
from campaigns.work.decisions import assignment_approve, assignment_reject
from campaigns.work.lifecycle import AssignmentClosedError, assignment_return
from campaigns.work.publishing import stage_publish
from campaigns.work.submission import assignment_submit, telemetry_sanitise
from qaportal.errors import DomainError


@pytest.fixture
def accepted(make_stage, invited):
    stage = make_stage(items=2, items_per_hit=2)
    stage_publish(stage=stage)
    return assignment_accept(stage=stage, worker=invited(stage.campaign))


GOOD = {"items/0/text": "first answer", "items/1/text": "second answer"}


def _submit(assignment, form=GOOD, telemetry=None):
    return assignment_submit(
        assignment_id=assignment.pk, worker=assignment.worker, form=form, telemetry=telemetry
    )


@pytest.mark.django_db
def test_submit_stores_answer_time_and_telemetry(accepted):
    Assignment.objects.filter(pk=accepted.pk).update(
        accepted_at=timezone.now() - timedelta(seconds=95)
    )
    claimed = {
        "keystrokes": 120,
        "pastes": [{"field": "items/0/text", "length": 40, "text": "secret"}],
        "focus_losses": 2,
        "first_input_ms": 1500,
        "page_ms": 5,  # the browser's claim; work time is the server's
        "evil": "x" * 10_000,
    }

    result = _submit(accepted, telemetry=claimed)

    assert result.stored
    assert not result.replay
    stored = Assignment.objects.get(pk=accepted.pk)
    assert stored.status == AssignmentStatus.SUBMITTED
    assert stored.answers is not None
    assert stored.answers["items"][1]["text"] == "second answer"
    assert stored.work_seconds is not None
    assert 95 <= stored.work_seconds <= 100
    assert stored.telemetry == {
        "keystrokes": 120,
        "focus_losses": 2,
        "first_input_ms": 1500,
        "page_ms": 5,
        "pastes": [{"field": "items/0/text", "length": 40}],
        "paste_count": 1,
    }
    assert Worker.objects.get(pk=accepted.worker_id).submitted_count == 1


def test_telemetry_is_bounded():
    raw = {
        "keystrokes": 10**12,
        "focus_losses": -5,
        "visibility_changes": "many",
        "pastes": [{"field": "f" * 500, "length": 3}] * 1000 + ["junk"],
    }
    clean = telemetry_sanitise(raw)
    assert clean["keystrokes"] == 1_000_000
    assert clean["focus_losses"] == 0
    assert "visibility_changes" not in clean
    assert len(clean["pastes"]) == 100
    assert len(clean["pastes"][0]["field"]) == 100
    assert telemetry_sanitise("not a dict") == {}


@pytest.mark.django_db
def test_invalid_answer_stores_nothing_and_keeps_the_text(accepted):
    result = _submit(accepted, form={"items/0/text": "ok answer", "items/1/text": "no"})

    assert not result.stored
    assert result.errors == {"items/1/text": "Write at least 3 characters."}
    assert [e["text"] for e in result.answer["items"]] == ["ok answer", "no"]
    stored = Assignment.objects.get(pk=accepted.pk)
    assert stored.status == AssignmentStatus.ACCEPTED
    assert stored.answers is None
    assert stored.submitted_at is None


@pytest.mark.django_db
def test_second_submit_gets_the_stored_result(accepted):
    first = _submit(accepted)
    second = _submit(accepted, form={"items/0/text": "changed", "items/1/text": "changed"})

    assert second.stored
    assert second.replay
    assert second.answer == first.answer
    stored = Assignment.objects.get(pk=accepted.pk)
    assert stored.answers is not None
    assert stored.answers["items"][0]["text"] == "first answer"
    assert Worker.objects.get(pk=accepted.worker_id).submitted_count == 1


@pytest.mark.django_db
def test_other_worker_cannot_submit(accepted, invited):
    stranger = invited(accepted.hit.stage.campaign)
    with pytest.raises(Assignment.DoesNotExist):
        assignment_submit(assignment_id=accepted.pk, worker=stranger, form=GOOD, telemetry=None)


@pytest.mark.django_db
def test_submit_after_deadline_expires_the_assignment(accepted):
    Assignment.objects.filter(pk=accepted.pk).update(deadline=timezone.now() - timedelta(seconds=1))
    with pytest.raises(AssignmentClosedError, match="time for this task ran out"):
        _submit(accepted)
    assert Assignment.objects.get(pk=accepted.pk).status == AssignmentStatus.EXPIRED


@pytest.mark.django_db
def test_returned_assignment_cannot_be_submitted(accepted):
    assignment_return(assignment_id=accepted.pk, worker=accepted.worker)
    assignment_return(assignment_id=accepted.pk, worker=accepted.worker)  # idempotent
    with pytest.raises(AssignmentClosedError, match="returned"):
        _submit(accepted)


@pytest.mark.django_db
def test_submitted_assignment_cannot_be_returned(accepted):
    _submit(accepted)
    with pytest.raises(AssignmentClosedError):
        assignment_return(assignment_id=accepted.pk, worker=accepted.worker)


@pytest.mark.django_db(transaction=True)
def test_concurrent_submissions_store_one(accepted):
    n = 8
    barrier = threading.Barrier(n)
    results: list = [None] * n

    def run(i: int) -> None:
        try:
            barrier.wait()
            results[i] = _submit(
                accepted, form={"items/0/text": f"answer {i}", "items/1/text": "fine"}
            )
        except Exception as exc:
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)

    assert all(r is not None and not isinstance(r, Exception) for r in results), results
    fresh = [r for r in results if not r.replay]
    assert len(fresh) == 1
    stored = Assignment.objects.get(pk=accepted.pk)
    assert all(r.answer == stored.answers for r in results)
    assert Worker.objects.get(pk=accepted.worker_id).submitted_count == 1


@pytest.mark.django_db
def test_approve_records_decision_and_counts(accepted, requester):
    _submit(accepted)
    approved = assignment_approve(
        assignment=accepted, decided_by=requester, source="requester", reason="good"
    )
    again = assignment_approve(assignment=accepted, decided_by=requester, source="requester")

    assert approved.status == again.status == AssignmentStatus.APPROVED
    assert approved.decided_by == requester
    assert approved.decision_source == "requester"
    assert approved.decision_reason == "good"
    assert approved.decided_at is not None
    assert Worker.objects.get(pk=accepted.worker_id).approved_count == 1
    with pytest.raises(DomainError):
        assignment_reject(assignment=accepted, decided_by=requester, source="requester", reason="x")


@pytest.mark.django_db
def test_reject_needs_a_reason_and_records_feedback(accepted, requester):
    _submit(accepted)
    with pytest.raises(DomainError, match="reason"):
        assignment_reject(assignment=accepted, decided_by=requester, source="requester", reason=" ")
    rejected = assignment_reject(
        assignment=accepted,
        decided_by=requester,
        source="requester",
        reason="copied text",
        feedback="Please write in your own words.",
    )
    assert rejected.status == AssignmentStatus.REJECTED
    assert rejected.feedback == "Please write in your own words."
    assert Worker.objects.get(pk=accepted.worker_id).rejected_count == 1


@pytest.mark.django_db
def test_cannot_decide_an_unsubmitted_assignment(accepted, requester):
    with pytest.raises(DomainError, match="submitted"):
        assignment_approve(assignment=accepted, decided_by=requester, source="requester")


@pytest.mark.django_db
def test_auto_approve_rule(make_stage, invited):
    stage = make_stage(items=1, review_rules=[{"rule": "auto_approve"}])
    stage_publish(stage=stage)
    assignment = assignment_accept(stage=stage, worker=invited(stage.campaign))

    result = _submit(assignment, form={"items/0/text": "auto"})

    assert result.assignment.status == AssignmentStatus.APPROVED
    stored = Assignment.objects.get(pk=assignment.pk)
    assert stored.decision_source == "rule:auto_approve"
    assert stored.decided_by is None
