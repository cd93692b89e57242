"""Review rules racing other decisions: the batch statement's row locks (PostgreSQL),
and the writer threads' transactions.

A stage's review writes each batch in one statement that locks the rows still
submitted in id order, then writes them and counts them for their workers
(``campaigns.work.decisions._MANY_SQL``). These tests hold locks across threads, each
with its own connection, and check that whoever decides first wins: no decision
overwritten, none made twice, no worker counted twice, no deadlock.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection, transaction

from campaigns.models import Assignment, AssignmentStatus, Stage, Worker
from campaigns.work import decisions
from campaigns.work.decisions import assignment_decide
from qaportal.errors import DomainError
from qaportal.models import OutboxMessage
from tests.factories import UserFactory
from tests.validation.db_helpers import hits, make_stage, submit, worker
from validation.services import stage_review

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks across connections"),
]

RULES = [
    {"rule": "consensus", "action": "reject"},
    {"rule": "work_time", "min_seconds": 20},
]
WAIT = 30  # seconds: a thread stuck this long is a failure, not a slow machine


def _stage() -> tuple[Any, list[Assignment]]:
    """4 HITs x 3 workers: per HIT two say 0 (approved by consensus), one says 1
    (rejected). Committed: the threads see them."""
    stage = make_stage(items=4, review_rules=RULES)
    people = [worker(f"race{n}") for n in range(3)]
    rows = [
        submit(hit, who, {"choice": 0 if n < 2 else 1})
        for hit in hits(stage)
        for n, who in enumerate(people)
    ]
    return stage, rows


class _Thread(threading.Thread):
    """Runs ``fn`` on its own connection; keeps its result or its exception."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        super().__init__(daemon=True)
        self.fn = fn
        self.result: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self.fn()
        except BaseException as exc:  # handed to the test, raised by outcome()
            self.error = exc
        finally:
            connection.close()

    def outcome(self) -> Any:
        self.join(WAIT)
        assert not self.is_alive(), "thread still running"
        if self.error is not None:
            raise self.error
        return self.result


def _lock_waiters(at_least: int) -> None:
    """Wait until ``at_least`` backends of this database wait for a row lock."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
            (waiting,) = cursor.fetchone()
        if waiting >= at_least:
            return
        time.sleep(0.02)
    raise AssertionError(f"fewer than {at_least} backend(s) waited for a lock")


def _counters_match_decisions(rows: list[Assignment]) -> None:
    """Every worker's approved/rejected counters equal their decided assignments."""
    stored = Assignment.objects.filter(pk__in=[r.pk for r in rows])
    approved = Counter(a.worker_id for a in stored if a.status == AssignmentStatus.APPROVED)
    rejected = Counter(a.worker_id for a in stored if a.status == AssignmentStatus.REJECTED)
    for w in Worker.objects.filter(pk__in={r.worker_id for r in rows}):
        assert (w.approved_count, w.rejected_count) == (approved[w.pk], rejected[w.pk]), w


def test_a_requester_holding_the_row_wins_over_the_rules():
    """The requester's transaction has decided (and locked) an assignment the rules
    would approve; the review's batch waits for it, finds it decided and leaves it."""
    stage, rows = _stage()
    requester = UserFactory.create(username="race-requester")
    mine = rows[0]  # the rules approve it
    decided, release = threading.Event(), threading.Event()

    def decide() -> None:
        with transaction.atomic():
            assignment_decide(
                assignment=mine,
                approve=False,
                decided_by=requester,
                source="requester",
                reason="seen it myself",
            )
            decided.set()
            assert release.wait(WAIT)

    requester_thread = _Thread(decide)
    requester_thread.start()
    assert decided.wait(WAIT)
    review = _Thread(lambda: stage_review(stage=stage, batch_size=5))
    review.start()
    _lock_waiters(1)
    release.set()
    requester_thread.outcome()
    summary = review.outcome()

    mine.refresh_from_db()
    assert (mine.status, mine.decision_source, mine.decided_by_id) == (
        AssignmentStatus.REJECTED,
        "requester",
        requester.pk,
    )
    assert mine.decision_reason == "seen it myself"
    assert "review" not in mine.review_details
    assert summary.reviewed == 11
    assert summary.decisions == {"approve": 7, "reject": 4}
    _counters_match_decisions(rows)


def test_a_requester_waiting_on_a_batch_finds_it_decided(monkeypatch):
    """The batch has written (and locked) its rows when the requester decides one of
    them: the requester waits, then is told it is decided; the rule's decision stays."""
    stage, rows = _stage()
    requester = UserFactory.create(username="race-requester")
    theirs = rows[2]  # the rules reject it
    written, release = threading.Event(), threading.Event()
    write = decisions._many_sql_write

    def held(**kwargs: Any) -> list[int]:
        ids = write(**kwargs)
        written.set()
        assert release.wait(WAIT)
        return ids

    monkeypatch.setattr(decisions, "_many_sql_write", held)
    review = _Thread(lambda: stage_review(stage=stage, batch_size=12))
    review.start()
    assert written.wait(WAIT)
    requester_thread = _Thread(
        lambda: assignment_decide(
            assignment=theirs, approve=True, decided_by=requester, source="requester"
        )
    )
    requester_thread.start()
    _lock_waiters(1)
    release.set()
    summary = review.outcome()
    with pytest.raises(DomainError, match="Only a submitted assignment"):
        requester_thread.outcome()

    theirs.refresh_from_db()
    assert (theirs.status, theirs.decision_source, theirs.decided_by_id) == (
        AssignmentStatus.REJECTED,
        "rule:consensus",
        None,
    )
    assert summary.decisions == {"approve": 8, "reject": 4}
    _counters_match_decisions(rows)


def test_two_reviews_of_a_stage_decide_each_assignment_once():
    """Two reviews of the same stage, both queued behind a lock on the first row, then
    racing batch by batch: each assignment decided by one of them, each counted once,
    neither fails (a deadlock would fail one)."""
    stage, rows = _stage()
    locked, release = threading.Event(), threading.Event()

    def hold_first_row() -> None:
        with transaction.atomic():
            Assignment.objects.select_for_update().get(pk=rows[0].pk)
            locked.set()
            assert release.wait(WAIT)

    holder = _Thread(hold_first_row)
    holder.start()
    assert locked.wait(WAIT)
    reviews = [_Thread(lambda: stage_review(stage=stage, batch_size=4)) for _ in range(2)]
    for review in reviews:
        review.start()
    _lock_waiters(2)
    release.set()
    holder.outcome()
    first, second = (review.outcome() for review in reviews)

    assert first.decisions + second.decisions == Counter({"approve": 8, "reject": 4})
    statuses = Counter(
        Assignment.objects.filter(pk__in=[r.pk for r in rows]).values_list("status", flat=True)
    )
    assert statuses == {AssignmentStatus.APPROVED: 8, AssignmentStatus.REJECTED: 4}
    _counters_match_decisions(rows)


def test_approvals_written_by_the_writers_are_handed_on_once():
    """The writer threads announce each approval in their batch's transaction: one
    outbox message per approved assignment, dispatched after the commit."""
    stage, rows = _stage()
    following = Stage.objects.create(
        campaign=stage.campaign,
        name="Next",
        task_type=stage.task_type,
        assignments_per_hit=1,
        reward=stage.reward,
        position=1,
    )
    stage.next_stage = following
    stage.save(update_fields=["next_stage"])

    summary = stage_review(stage=stage, batch_size=3)

    assert summary.batches == 4
    approved = set(
        Assignment.objects.filter(
            pk__in=[r.pk for r in rows], status=AssignmentStatus.APPROVED
        ).values_list("pk", flat=True)
    )
    assert len(approved) == 8
    messages = OutboxMessage.objects.filter(task="campaigns.handoff_run")
    assert sorted(m.args[0] for m in messages) == sorted(approved)
    assert all(m.done_at is not None for m in messages)
