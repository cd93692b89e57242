"""A stage review's batch writes: what they store is what one decision stores."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest

from campaigns.models import Assignment, AssignmentStatus
from tests.validation.db_helpers import hits, make_stage, submit, worker
from validation.review_batches import ReviewSummary, _batch_apply, _batch_prepare
from validation.rules.facts import Submission, Verdict
from validation.rules.settings import APPROVE, HOLD
from validation.rules.verdicts import Review

pytestmark = pytest.mark.django_db


def _submission(row: Assignment) -> Submission:
    return Submission(
        id=row.pk,
        hit_id=row.hit_id,
        worker_id=row.worker_id,
        status=row.status,
        answers=row.answers,
        provider=row.provider,
    )


def test_verdicts_equal_in_python_but_not_in_json_are_stored_as_given():
    """On PostgreSQL a batch's distinct verdicts are sent once and each review names its
    own: 1, 1.0 and True are one key in Python but three values in JSON; a list among
    the numbers is told apart by its JSON. The stored review is ``Review.details`` with
    its time and "applied", as ``validation.services._details`` writes it."""
    stage = make_stage(items=3, review_rules=[{"rule": "auto_approve"}])
    people = [worker(f"b{n}") for n in range(2)]
    rows = [submit(hit, who, {"choice": 0}) for hit in hits(stage) for who in people]
    Assignment.objects.filter(pk=rows[0].pk).update(review_details={"kept": 1})
    numbers: list[dict[str, Any]] = [
        {"n": 1},
        {"n": 1.0},
        {"n": True},
        {"n": 1},
        {"of": [{"assignment": 3}]},
        {"of": [{"assignment": 3}]},
    ]
    reviews = []
    for n, row in enumerate(rows):
        verdicts = [
            Verdict("gold_accuracy", APPROVE, "same reason", numbers[n]),
            Verdict("work_time", "pass", f"worked {n}s", {"seconds": n, "floor": 10.0}),
        ]
        decision = HOLD if n == 5 else APPROVE
        reviews.append(
            (
                _submission(row),
                Review(decision, "rule:gold_accuracy", "gold_accuracy: same reason", verdicts),
            )
        )

    summary = ReviewSummary()
    _batch_apply(stage=stage, batch=_batch_prepare(reviews), summary=summary)

    assert summary.reviewed == 6
    assert summary.decisions == {"approve": 5, "hold": 1}
    for (_, review), row in zip(reviews, rows, strict=True):
        row.refresh_from_db()
        stored = row.review_details["review"]
        expected = {**review.details(), "at": stored["at"], "applied": review.decision == APPROVE}
        # Compared as JSON text: 1 == 1.0 == True in Python.
        assert json.dumps(stored, sort_keys=True) == json.dumps(expected, sort_keys=True)
        if review.decision == APPROVE:
            assert row.decided_at == datetime.fromisoformat(stored["at"])
    rows[0].refresh_from_db()
    assert rows[0].review_details["kept"] == 1  # merged into what was stored
    assert rows[5].status == AssignmentStatus.SUBMITTED


def test_a_runs_verdicts_are_keyed_once_and_each_batch_sends_its_own(monkeypatch):
    """The writer keeps each verdict's key and JSON for the whole run (``encoded``); each
    batch still sends the verdicts its own rows name, and no other, and the rows' heads
    once per distinct head."""
    monkeypatch.setattr("validation.review_batches.connection.vendor", "postgresql")
    shared = Verdict("work_time", "pass", "worked 30s", {"seconds": 30})
    first = Verdict("consensus", APPROVE, "agrees", {"share": 1.0})
    second = Verdict("consensus", HOLD, "disagrees", {"share": 0.0})

    def reviews(verdict: Verdict, ids: range) -> list[tuple[Submission, Review]]:
        review = Review(verdict.decision, f"rule:{verdict.rule}", verdict.reason, [verdict, shared])
        return [(Submission(n, 1, 1, "submitted", {}, provider="local"), review) for n in ids]

    encoded: dict[int, list[Any]] = {}
    one = _batch_prepare(reviews(first, range(1, 4)), encoded)
    two = _batch_prepare(reviews(second, range(4, 6)), encoded)

    for batch, verdict in ((one, first), (two, second)):
        sent = json.loads(batch.verdicts)
        assert sent == [verdict.as_json(), shared.as_json()]
        assert [row.data["verdicts"] for row in batch.rows] == [[0, 1]] * len(batch.rows)
        (head,) = json.loads(batch.heads)
        assert head["reason"] == verdict.reason
        assert {row.data["head"] for row in batch.rows} == {0}
    assert len(encoded) == 3
