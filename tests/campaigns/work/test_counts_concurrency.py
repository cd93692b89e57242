"""The assignment counters under concurrent writers (PostgreSQL, one connection per
thread): workers accepting, submitting, returning and abandoning work, the expiry, a
requester deciding one at a time, in rounds and flipping decisions, compactions and
readers, all at once. No writer is retried (``deadlock_retried`` is set to one try), so
a deadlock fails the test; afterwards the counters equal a full count. And a compaction
never waits: while a rebuild holds the counters it does nothing, and a read made while a
compaction is open gets the same sums.
"""

from __future__ import annotations

import functools
import random
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.utils import timezone

from campaigns.models import (
    Assignment,
    AssignmentStatus,
    Stage,
    StageAssignmentCountDelta,
    StageAssignmentJournal,
)
from campaigns.work import counts
from campaigns.work.allocation import assignment_accept
from campaigns.work.decisions import (
    assignment_decide,
    assignment_decision_flip,
    assignments_approve,
)
from campaigns.work.lifecycle import assignment_return, assignments_expire
from campaigns.work.publishing import stage_publish
from campaigns.work.selectors.counts import (
    stage_assignment_counts,
    stage_assignment_counts_full,
    stage_work_versions,
)
from campaigns.work.submission import assignment_submit
from qaportal import deadlock
from qaportal.errors import DomainError
from tests.factories import UserFactory

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks across connections"),
]

WAIT = 60  # seconds: a thread still running this long is a failure
FORM = {f"items/{i}/text": "fine answer" for i in range(10)}


class _Thread(threading.Thread):
    """Runs ``fn`` on its own connection; keeps its exception."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        super().__init__(daemon=True)
        self.fn = fn
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.fn()
        except BaseException as exc:  # handed to the test by outcome()
            self.error = exc
        finally:
            connection.close()

    def outcome(self) -> None:
        self.join(WAIT)
        assert not self.is_alive(), "thread still running"
        if self.error is not None:
            raise self.error


def _all(threads: list[_Thread]) -> None:
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.outcome()


@pytest.fixture
def no_retries(monkeypatch):
    """A deadlock's victim raises instead of running again."""
    monkeypatch.setattr(deadlock, "TRIES", 1)


def test_concurrent_writers_compactions_and_readers_keep_the_counts_exact(
    make_stage, invited, no_retries
):
    stage = make_stage(items=200, assignments_per_hit=1)
    stage_publish(stage=stage)
    people = [invited(stage.campaign) for _ in range(5)]
    requester = UserFactory.create()
    done = threading.Event()
    seen: dict[str, int] = {}

    def work(worker: Any, seed: int) -> None:
        pick = random.Random(seed)
        for _ in range(30):
            try:
                assignment = assignment_accept(stage=stage, worker=worker)
                roll = pick.random()
                if roll < 0.6:
                    assignment_submit(
                        assignment_id=assignment.pk, worker=worker, form=FORM, telemetry=None
                    )
                elif roll < 0.8:
                    assignment_return(assignment_id=assignment.pk, worker=worker)
                else:  # abandoned: left to the expiry
                    Assignment.objects.filter(pk=assignment.pk).update(
                        deadline=timezone.now() - timedelta(seconds=1)
                    )
            except DomainError:
                pass  # no work left, or closed meanwhile: not this test's concern

    def expire() -> None:
        while not done.is_set():
            seen["expired"] = seen.get("expired", 0) + assignments_expire()
            time.sleep(0.01)

    def decide() -> None:
        pick = random.Random(7)
        while not done.is_set():
            submitted = list(
                Assignment.objects.filter(
                    hit__stage=stage, status=AssignmentStatus.SUBMITTED
                ).values_list("pk", flat=True)[:6]
            )
            try:
                if len(submitted) >= 3:
                    one, *round_ = submitted
                    assignment_decide(
                        assignment=Assignment.objects.get(pk=one),
                        approve=False,
                        source="requester",
                        reason="no",
                    )
                    assignments_approve(assignment_ids=round_, source="requester")
                decided = list(
                    Assignment.objects.filter(
                        hit__stage=stage, status=AssignmentStatus.APPROVED
                    ).values_list("pk", flat=True)[:20]
                )
                if decided:
                    assignment_decision_flip(
                        assignment=Assignment.objects.get(pk=pick.choice(decided)),
                        approve=False,
                        decided_by=requester,
                        reason="on second thought",
                    )
            except DomainError:
                pass
            time.sleep(0.005)

    def compact() -> None:
        while not done.is_set():
            folded = counts.stage_assignment_counts_compact()
            seen["folded"] = seen.get("folded", 0) + (folded or 0)
            time.sleep(0.005)

    def read() -> None:
        # Assignments are never deleted here: the total a read sees only grows.
        last = 0
        while not done.is_set():
            total = sum(stage_assignment_counts(stage_ids=[stage.pk]).get(stage.pk, {}).values())
            assert total >= last, (total, last)
            last = total
            time.sleep(0.002)

    workers = [_Thread(functools.partial(work, w, n)) for n, w in enumerate(people)]
    others = [_Thread(f) for f in (expire, decide, compact, read)]
    for thread in others:
        thread.start()
    try:
        _all(workers)
    finally:
        done.set()
        for thread in others:
            thread.outcome()
    assignments_expire()

    full = stage_assignment_counts_full(stage_ids=[stage.pk])
    assert stage_assignment_counts(stage_ids=[stage.pk]) == full
    statuses = full[stage.pk]
    # Every kind of write took part.
    for status in ("submitted", "approved", "rejected", "returned", "expired"):
        assert statuses.get(status, 0) > 0, statuses
    assert seen["folded"] > 0
    versions = stage_work_versions(stage_ids=[stage.pk])
    counts.stage_assignment_counts_compact()
    assert not StageAssignmentCountDelta.objects.filter(stage=stage).exists()
    assert stage_assignment_counts(stage_ids=[stage.pk]) == full
    assert stage_work_versions(stage_ids=[stage.pk]) == versions


def _stage_with_deltas(make_stage, invited) -> Stage:
    stage = make_stage(items=4, assignments_per_hit=1)
    stage_publish(stage=stage)
    for _ in range(3):
        assignment_accept(stage=stage, worker=invited(stage.campaign))
    # The three accepts' journal rows (migration 0026) into one delta (accepted +3).
    assert counts.stage_assignment_journal_fold(stage_ids=[stage.pk]) == 3
    return stage


def test_a_compaction_waits_for_nothing_while_a_rebuild_holds_the_counters(make_stage, invited):
    stage = _stage_with_deltas(make_stage, invited)
    holding, release = threading.Event(), threading.Event()

    def rebuild_like() -> None:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [counts.COUNTERS_LOCK])
            holding.set()
            release.wait(WAIT)

    holder = _Thread(rebuild_like)
    holder.start()
    try:
        assert holding.wait(WAIT)
        started = time.monotonic()
        assert counts.stage_assignment_counts_compact() is None  # did nothing, at once
        assert time.monotonic() - started < 5
        assert stage_assignment_counts(stage_ids=[stage.pk]) == {stage.pk: {"accepted": 3}}
    finally:
        release.set()
        holder.outcome()
    assert counts.stage_assignment_counts_compact() == 1


def test_a_read_beside_an_open_compaction_gets_the_same_sums(make_stage, invited):
    stage = _stage_with_deltas(make_stage, invited)
    folded, release = threading.Event(), threading.Event()
    found: list[int | None] = []

    def compaction_left_open() -> None:
        with transaction.atomic():
            found.append(counts.stage_assignment_counts_compact(stage_ids=[stage.pk]))
            folded.set()
            release.wait(WAIT)

    compactor = _Thread(compaction_left_open)
    compactor.start()
    try:
        assert folded.wait(WAIT)
        # Its deletes and its counter rows are not committed: this read sees the deltas.
        assert stage_assignment_counts(stage_ids=[stage.pk]) == {stage.pk: {"accepted": 3}}
        # A writer is not held up by it either.
        assignment_accept(stage=stage, worker=invited(stage.campaign))
    finally:
        release.set()
        compactor.outcome()
    assert found == [1]
    assert stage_assignment_counts(stage_ids=[stage.pk]) == {stage.pk: {"accepted": 4}}
    # The accept made meanwhile: one journal row, left for the next fold.
    assert not StageAssignmentCountDelta.objects.filter(stage=stage).exists()
    assert StageAssignmentJournal.objects.filter(stage=stage).count() == 1
