"""The one writer of decisions (``campaigns.work.decisions``) and its invariants, once:
only submitted work is decided (decided work only flips, by the requester); workers'
counters move with the status; approvals that can be handed on are announced
(``assignment_decided``: an outbox message for the hand-off); a decision taken first
wins. For one decision, a batch written the fast way (PostgreSQL's one statement) and
the portable way, and a flip."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any, NamedTuple

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from campaigns.models import Assignment, AssignmentStatus, Stage, Worker
from campaigns.work.decisions import (
    assignment_decide,
    assignment_decision_flip,
    decisions_write_many,
)
from qaportal.errors import DomainError
from qaportal.models import OutboxMessage
from tests.factories import UserFactory
from tests.validation.db_helpers import hits, make_stage, submit, worker

pytestmark = pytest.mark.django_db


def _handoffs() -> list[int]:
    """The assignments whose approval was announced (their hand-off messages)."""
    return sorted(m.args[0] for m in OutboxMessage.objects.filter(task="campaigns.handoff_run"))


def _counts(*workers: Worker) -> list[tuple[int, int]]:
    rows = Worker.objects.filter(pk__in=[w.pk for w in workers])
    counts = {pk: (a, r) for pk, a, r in rows.values_list("pk", "approved_count", "rejected_count")}
    return [counts[w.pk] for w in workers]


def _work(n: int) -> tuple[Stage, list[Worker], list[Assignment]]:
    stage = make_stage(items=n, per_hit=2)
    people = [worker("w0"), worker("w1")]
    rows = [submit(hit, who, {"choice": 0}) for hit in hits(stage) for who in people]
    return stage, people, rows


# --- one decision ---------------------------------------------------------------------


def test_one_decision_counts_announces_and_is_taken_once():
    _, (w0, w1), (a, b, *_) = _work(2)
    assignment_decide(assignment=a, approve=True, source="requester")
    assignment_decide(assignment=a, approve=True, source="requester")  # again: no-op
    assignment_decide(assignment=b, approve=False, source="rule:x", reason="wrong")
    a.refresh_from_db()
    b.refresh_from_db()
    assert (a.status, b.status) == (AssignmentStatus.APPROVED, AssignmentStatus.REJECTED)
    assert (b.decision_source, b.decision_reason) == ("rule:x", "wrong")
    assert _counts(w0, w1) == [(1, 0), (0, 1)]
    assert _handoffs() == [a.pk]
    # Decided work is not decided again the other way (only a flip turns it over).
    with pytest.raises(DomainError, match="Only a submitted assignment"):
        assignment_decide(assignment=a, approve=False, source="requester", reason="no")
    with pytest.raises(DomainError, match="needs a reason"):
        assignment_decide(assignment=b, approve=False, source="requester", reason=" ")
    assert _counts(w0, w1) == [(1, 0), (0, 1)]


# --- a batch --------------------------------------------------------------------------


class Row(NamedTuple):
    """A batch row as ``validation.review_batches`` encodes it (``DecisionRow``)."""

    pk: int
    worker_id: int
    status: str
    data: dict[str, Any]


def _rows(wanted: list[tuple[Assignment, str]], *, at: str) -> tuple[list[Row], str, str, int]:
    """Rows deciding ``status`` ("" : a review only) for each assignment, one verdict each
    (``parts``: the batch's one verdict; ``heads``: its distinct heads), in the form of
    the database in use."""
    rows = []
    heads: list[dict[str, Any]] = []
    for a, status in wanted:
        head = {"decision": status or "hold", "source": "rule:test", "reason": "because"}
        if connection.vendor == "postgresql":
            if {**head, "at": at} not in heads:
                heads.append({**head, "at": at})
            data: dict[str, Any] = {
                "id": a.pk,
                "head": heads.index({**head, "at": at}),
                "verdicts": [0],
            }
            if status:
                data["status"] = status
        else:
            data = {"details": {"review": {**head, "at": at, "rules": [{"rule": "test"}]}}}
            if status:
                data.update(at=at, source="rule:test", reason="because")
        rows.append(Row(a.pk, a.worker_id, status, data))
    return rows, json.dumps([{"rule": "test"}]), json.dumps(heads), 1


@pytest.fixture(params=["database", "portable"])
def way(request, monkeypatch) -> str:
    """PostgreSQL's one statement, or the portable writes other databases get (forced
    here by naming the connection's vendor otherwise)."""
    if request.param == "portable" and connection.vendor == "postgresql":
        monkeypatch.setattr(connection, "vendor", "portable")
    return str(request.param)


def test_a_batch_writes_what_one_decision_writes_and_counts_once(way):
    _, (w0, w1), rows = _work(3)
    a, b, c, d, e, f = rows
    Assignment.objects.filter(pk=a.pk).update(review_details={"kept": 1})
    # Decided first by someone else: the batch leaves it alone.
    assignment_decide(assignment=f, approve=False, source="requester", reason="mine")
    OutboxMessage.objects.all().delete()
    at = timezone.now().isoformat()
    yes, no = AssignmentStatus.APPROVED, AssignmentStatus.REJECTED
    batch, parts, heads, width = _rows(
        [(a, yes), (b, no), (c, yes), (d, ""), (e, yes), (f, yes)],
        at=at,
    )

    with CaptureQueriesContext(connection) as ctx:
        written = decisions_write_many(
            rows=batch, parts=parts, heads=heads, width=width, hands_on=True
        )

    one_statement = any("WITH ORDINALITY" in q["sql"] for q in ctx.captured_queries)
    assert one_statement == (way == "database" and connection.vendor == "postgresql")
    assert written == [a.pk, b.pk, c.pk, d.pk, e.pk]
    got = {r.pk: r for r in Assignment.objects.filter(pk__in=[x.pk for x in rows])}
    assert [got[x.pk].status for x in rows] == [yes, no, yes, "submitted", yes, no]
    assert got[a.pk].decided_at == datetime.fromisoformat(at)
    assert (got[a.pk].decision_source, got[a.pk].decision_reason) == ("rule:test", "because")
    assert (got[a.pk].decided_by_id, got[a.pk].feedback) == (None, "")
    assert got[a.pk].review_details["kept"] == 1  # merged into what was stored
    assert got[a.pk].review_details["review"]["rules"] == [{"rule": "test"}]
    assert got[d.pk].review_details["review"]["decision"] == "hold"
    assert got[d.pk].decided_at is None
    assert got[f.pk].decision_reason == "mine"  # the decision taken first wins
    # w0: a, c, e approved; w1: b rejected, f rejected earlier.
    assert _counts(w0, w1) == [(3, 0), (0, 2)]
    assert _handoffs() == [a.pk, c.pk, e.pk]

    # Written again: nothing is still submitted but d, which only gets its review.
    again = decisions_write_many(rows=batch, parts=parts, heads=heads, width=width, hands_on=True)
    assert again == [d.pk]
    assert _counts(w0, w1) == [(3, 0), (0, 2)]
    assert _handoffs() == [a.pk, c.pk, e.pk]


def test_a_batch_of_a_last_stage_announces_no_approval(way):
    _, (w0, _), (a, *_) = _work(1)
    batch, parts, heads, width = _rows(
        [(a, AssignmentStatus.APPROVED)], at=timezone.now().isoformat()
    )
    assert decisions_write_many(
        rows=batch, parts=parts, heads=heads, width=width, hands_on=False
    ) == [a.pk]
    assert _counts(w0) == [(1, 0)]
    assert _handoffs() == []


# --- a flip ---------------------------------------------------------------------------


def _locked(a: Assignment) -> Assignment:
    return Assignment.objects.get(pk=a.pk)


def test_a_flip_moves_the_counters_and_announces_a_new_approval():
    requester = UserFactory.create()
    _, (w0, _), (a, *_) = _work(1)
    assignment_decide(assignment=a, approve=False, source="rule:x", reason="looked wrong")
    assert _counts(w0) == [(0, 1)]

    flip: Callable[..., Assignment] = assignment_decision_flip
    row = flip(assignment=_locked(a), approve=True, decided_by=requester, reason="it is right")
    assert (row.status, row.decision_source, row.decided_by_id) == (
        AssignmentStatus.APPROVED,
        "requester",
        requester.pk,
    )
    assert _counts(w0) == [(1, 0)]
    assert _handoffs() == [a.pk]

    # Confirming the same decision names the requester and counts nothing.
    flip(assignment=_locked(a), approve=True, decided_by=requester, reason="sure")
    assert _counts(w0) == [(1, 0)]
    assert _handoffs() == [a.pk]

    row = flip(
        assignment=_locked(a), approve=False, decided_by=requester, reason="no", feedback="f"
    )
    assert (row.status, row.feedback) == (AssignmentStatus.REJECTED, "f")
    assert _counts(w0) == [(0, 1)]
    assert _handoffs() == [a.pk]  # a rejection announces no hand-off


def test_a_counter_never_goes_below_zero_and_submitted_work_is_not_flipped():
    requester = UserFactory.create()
    _, (w0, w1), (a, b, *_) = _work(1)
    Assignment.objects.filter(pk=a.pk).update(status=AssignmentStatus.APPROVED)  # uncounted
    assignment_decision_flip(assignment=_locked(a), approve=False, decided_by=requester, reason="r")
    assert _counts(w0) == [(0, 1)]
    with pytest.raises(DomainError, match="Only a decided assignment"):
        assignment_decision_flip(
            assignment=_locked(b), approve=True, decided_by=requester, reason="r"
        )
    assert _counts(w1) == [(0, 0)]
