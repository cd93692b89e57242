"""The assignment counters the database keeps (``StageAssignmentCount`` and, on
PostgreSQL, its pending ``StageAssignmentCountDelta`` rows: migrations 0016 and 0017)
equal a full count after every kind of write: accept, submit, return, expiry, one
decision, a batch (PostgreSQL's one statement and the portable way), a round of
approvals, a flip, a delete; folding the deltas (``stage_assignment_counts_compact``, by
beat or by a read) changes no number and no version; and
``stage_assignment_counts_rebuild`` / ``manage.py counters_rebuild`` repair them.
Concurrent writers: ``test_counts_concurrency.py``."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from campaigns.models import (
    Assignment,
    AssignmentStatus,
    Stage,
    StageAssignmentCount,
    StageAssignmentCountDelta,
    StageAssignmentJournal,
)
from campaigns.tasks import counters_compact_task
from campaigns.work.allocation import assignment_accept
from campaigns.work.counts import stage_assignment_counts_compact, stage_assignment_counts_rebuild
from campaigns.work.decisions import (
    assignment_decide,
    assignment_decision_flip,
    assignments_approve,
    decisions_write_many,
)
from campaigns.work.lifecycle import assignment_return, assignments_expire
from campaigns.work.publishing import stage_publish
from campaigns.work.selectors.counts import (
    stage_assignment_counts,
    stage_assignment_counts_full,
    stage_work_versions,
)
from campaigns.work.submission import assignment_submit
from tests.campaigns.work.test_decisions import _rows, _work
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


POSTGRESQL = connection.vendor == "postgresql"


def _pending(*stages: Stage) -> int:
    """The stages' counter deltas and worker writes' journal rows not yet folded (the
    journal is PostgreSQL's own: the portable fold leaves it to the readers, which add
    it)."""
    deltas = StageAssignmentCountDelta.objects.filter(stage__in=stages).count()
    if connection.vendor != "postgresql":
        return deltas
    return deltas + StageAssignmentJournal.objects.filter(stage__in=stages).count()


def _agree(*stages: Stage) -> dict[int, dict[str, int]]:
    """The counters equal a full count, before and after their deltas are folded, and
    the stages' versions are the same both ways."""
    ids = [s.pk for s in stages]
    kept = stage_assignment_counts(stage_ids=ids)
    # Plain ints (PostgreSQL sums bigints as numeric), as the pages and the API show them.
    assert all(type(n) is int for by_status in kept.values() for n in by_status.values())
    versions = stage_work_versions(stage_ids=ids)
    assert kept == stage_assignment_counts_full(stage_ids=ids)
    stage_assignment_counts_compact(stage_ids=ids)
    assert _pending(*stages) == 0
    assert stage_assignment_counts(stage_ids=ids) == kept
    assert stage_work_versions(stage_ids=ids) == versions
    return kept


def test_accept_submit_return_and_expiry_are_counted(make_stage, invited):
    stage = make_stage(items=4, assignments_per_hit=1)
    stage_publish(stage=stage)
    first, second, third = (invited(stage.campaign) for _ in range(3))
    a = assignment_accept(stage=stage, worker=first)
    b = assignment_accept(stage=stage, worker=second)
    c = assignment_accept(stage=stage, worker=third)
    assert _agree(stage) == {stage.pk: {"accepted": 3}}
    form = {f"items/{i}/text": "fine answer" for i in range(10)}
    assignment_submit(assignment_id=a.pk, worker=first, form=form, telemetry=None)
    assignment_return(assignment_id=b.pk, worker=second)
    Assignment.objects.filter(pk=c.pk).update(deadline=timezone.now() - timedelta(minutes=1))
    assignments_expire()
    assert _agree(stage) == {
        stage.pk: {"submitted": 1, "returned": 1, "expired": 1},
    }


def test_decisions_one_a_round_and_a_flip_are_counted():
    stage, _, rows = _work(3)  # 3 HITs x 2 workers, all submitted
    a, b, c, d, *_ = rows
    assignment_decide(assignment=a, approve=True, source="requester")
    assignment_decide(assignment=b, approve=False, source="requester", reason="no")
    assignments_approve(assignment_ids=[c.pk, d.pk], source="requester")
    assert _agree(stage) == {stage.pk: {"submitted": 2, "approved": 3, "rejected": 1}}
    before = stage_work_versions(stage_ids=[stage.pk])
    requester = UserFactory.create()
    flip = assignment_decision_flip
    flip(
        assignment=Assignment.objects.get(pk=b.pk), approve=True, decided_by=requester, reason="ok"
    )
    flip(
        assignment=Assignment.objects.get(pk=a.pk), approve=False, decided_by=requester, reason="x"
    )
    # The same numbers again (one flipped each way), yet the stage's version moved on.
    assert _agree(stage) == {stage.pk: {"submitted": 2, "approved": 3, "rejected": 1}}
    assert stage_work_versions(stage_ids=[stage.pk]) != before


@pytest.fixture(params=["database", "portable"])
def way(request, monkeypatch) -> str:
    if request.param == "portable" and connection.vendor == "postgresql":
        monkeypatch.setattr(connection, "vendor", "portable")
    return str(request.param)


def test_a_batch_is_counted(way):
    stage, _, rows = _work(3)
    a, b, c, d, e, _ = rows
    yes, no = AssignmentStatus.APPROVED, AssignmentStatus.REJECTED
    batch, parts, heads, width = _rows(
        [(a, yes), (b, no), (c, yes), (d, ""), (e, yes)], at=timezone.now().isoformat()
    )
    decisions_write_many(rows=batch, parts=parts, heads=heads, width=width, hands_on=True)
    assert _agree(stage) == {stage.pk: {"submitted": 2, "approved": 3, "rejected": 1}}


def test_deletes_are_counted_and_a_stage_goes_with_its_counters():
    stage, _, rows = _work(2)
    other, _, _ = _work(1)
    rows[0].delete()
    Assignment.objects.filter(pk=rows[1].pk).delete()
    assert _agree(stage, other) == {stage.pk: {"submitted": 2}, other.pk: {"submitted": 2}}
    rows[2].delete()  # pending (on PostgreSQL) when the stage goes
    stage.delete()
    assert not StageAssignmentCount.objects.filter(stage_id=stage.pk).exists()
    assert not StageAssignmentCountDelta.objects.filter(stage_id=stage.pk).exists()
    assert _agree(other) == {other.pk: {"submitted": 2}}


def test_rebuild_repairs_the_counters(capsys):
    stage, _, rows = _work(2)
    other, _, _ = _work(1)
    assignment_decide(assignment=rows[0], approve=True, source="requester")
    stage_assignment_counts_compact()
    StageAssignmentCount.objects.filter(stage=stage).update(n=99)
    StageAssignmentCount.objects.filter(stage=other).delete()
    # A stray delta is repaired too.
    StageAssignmentCountDelta.objects.create(stage=other, status="approved", n=5, changes=5)
    with pytest.raises(SystemExit):
        call_command("counters_rebuild", "--check")
    assert "2 differ" in capsys.readouterr().out
    assert stage_assignment_counts_rebuild(stage_ids=[stage.pk]) == 2
    assert stage_assignment_counts(stage_ids=[stage.pk]) == {
        stage.pk: {"approved": 1, "submitted": 3}
    }
    call_command("counters_rebuild")
    call_command("counters_rebuild", "--check")
    assert "0 differ" in capsys.readouterr().out
    _agree(stage, other)


@pytest.mark.skipif(not POSTGRESQL, reason="SQLite's triggers update the counter rows")
def test_writers_append_deltas_and_a_compaction_folds_them_once(make_stage, invited):
    stage = make_stage(items=3, assignments_per_hit=1)
    stage_publish(stage=stage)
    first, second = invited(stage.campaign), invited(stage.campaign)
    a = assignment_accept(stage=stage, worker=first)
    assignment_accept(stage=stage, worker=second)
    form = {f"items/{i}/text": "fine answer" for i in range(10)}
    assignment_submit(assignment_id=a.pk, worker=first, form=form, telemetry=None)
    # Two inserts (accepted) and one move (accepted -> submitted), one row each: one
    # journal row per write (migration 0026), no counter row written, no delta.
    assert not StageAssignmentCount.objects.filter(stage=stage).exists()
    assert not StageAssignmentCountDelta.objects.filter(stage=stage).exists()
    assert sorted(
        StageAssignmentJournal.objects.filter(stage=stage).values_list(
            "old_status", "new_status", "held"
        ),
        key=str,
    ) == [("accepted", "submitted", 0), (None, "accepted", 1), (None, "accepted", 1)]
    versions = stage_work_versions(stage_ids=[stage.pk])
    assert versions == {stage.pk: "accepted=1/3,submitted=1/1"}
    # Beat's task: the journal into two deltas (accepted +1 in 3 changes, submitted +1),
    # folded into the counter rows.
    assert counters_compact_task() == 2
    assert not StageAssignmentJournal.objects.filter(stage=stage).exists()
    assert stage_assignment_counts_compact() == 0  # nothing left: folded once
    assert sorted(
        StageAssignmentCount.objects.filter(stage=stage).values_list("status", "n", "changes")
    ) == [("accepted", 1, 3), ("submitted", 1, 1)]
    assert stage_work_versions(stage_ids=[stage.pk]) == versions


def test_a_read_folds_the_deltas_when_many_are_pending(settings):
    stage, _, rows = _work(2)
    other, _, _ = _work(1)
    # By hand, so that SQLite (whose triggers write none) folds some too: a delta that
    # changes no number, only the version.
    StageAssignmentCountDelta.objects.create(stage=stage, status="submitted", n=0, changes=1)
    assignment_decide(assignment=rows[0], approve=True, source="requester")
    settings.COUNTERS_COMPACT_PENDING = 1000
    counts = stage_assignment_counts(stage_ids=[stage.pk])
    assert _pending(stage) > 0  # few: left to beat
    settings.COUNTERS_COMPACT_PENDING = 0
    versions = stage_work_versions(stage_ids=[stage.pk])  # many: folded after reading
    assert _pending(stage) == 0
    assert _pending(other) == (2 if POSTGRESQL else 0)  # not read, not folded
    assert stage_assignment_counts(stage_ids=[stage.pk]) == counts
    assert stage_work_versions(stage_ids=[stage.pk]) == versions
    assert counts == stage_assignment_counts_full(stage_ids=[stage.pk])
    assert stage_assignment_counts_compact(stage_ids=[]) == 0
