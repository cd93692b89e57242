"""Review rules applied to stored assignments: decisions, batches, override, hook, early stop."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    HITStatus,
    Item,
    ItemStatus,
    ProviderOperation,
    Stage,
    Worker,
)
from campaigns.work.allocation import assignment_accept
from campaigns.work.decisions import assignment_approve
from campaigns.work.invites import invite_create, invite_redeem, invite_token
from campaigns.work.submission import assignment_submit
from qaportal.errors import DomainError
from qaportal.models import OutboxMessage
from tests.factories import UserFactory
from tests.validation.db_helpers import hits, make_stage, submit, worker
from validation.early_stopping import DONE, DROPPED, EXTENDED, WAITING, hit_early_stop
from validation.models import ReviewRun
from validation.services import assignment_override, stage_review

pytestmark = pytest.mark.django_db

RULES = [
    {"rule": "consensus", "action": "reject"},
    {"rule": "work_time", "min_seconds": 20},
]


def test_stage_review_decides_with_reasons_and_numbers():
    stage = make_stage(items=2, review_rules=RULES)
    h1, h2 = hits(stage)
    w1, w2, w3 = worker("a"), worker("b"), worker("c")
    a = submit(h1, w1, {"choice": 0})
    b = submit(h1, w2, {"choice": 0}, seconds=5)
    c = submit(h1, w3, {"choice": 2})
    lone = submit(h2, w1, {"choice": 1})

    summary = stage_review(stage=stage)

    assert summary.decisions == {"approve": 1, "reject": 2, "hold": 1}
    for row in (a, b, c, lone):
        row.refresh_from_db()
    # work_time only looks for problems: it passes, the approval is consensus's.
    assert (a.status, a.decision_source) == ("approved", "rule:consensus")
    assert a.decided_by is None
    assert a.decided_at is not None
    assert (b.status, b.decision_source) == ("rejected", "rule:work_time")
    assert b.decision_reason == "work_time: worked 5s < floor 20s"
    assert (c.status, c.decision_source) == ("rejected", "rule:consensus")
    rules = {v["rule"]: v for v in c.review_details["review"]["rules"]}
    assert rules["consensus"]["numbers"] == {"agree": 0, "items": 1, "share": 0.0, "min": 0.5}
    assert rules["work_time"]["decision"] == "pass"
    assert lone.status == "submitted"
    assert lone.review_details["review"]["decision"] == "hold"
    assert Worker.objects.get(pk=w1.pk).approved_count == 1
    assert Worker.objects.get(pk=w3.pk).rejected_count == 1
    assert ReviewRun.objects.get(stage=stage).decisions == summary.decisions

    # Twice: nothing decided changes; the held one is looked at again.
    again = stage_review(stage=stage)
    assert again.decisions == {"hold": 1}
    assert Worker.objects.get(pk=w3.pk).rejected_count == 1


@pytest.mark.parametrize("handed_on", [False, True], ids=["last stage", "next stage"])
def test_a_constant_number_of_queries_per_batch(handed_on):
    """Whatever the batch's size; with a next stage, the approvals' hand-offs are one
    more query per batch that approves (their outbox messages in one INSERT), not one per
    approval. (A batch is grouped by worker: one of a rejected worker's approves none.)"""
    stage = make_stage(items=8, review_rules=[*RULES, {"rule": "duplicates"}])
    if handed_on:
        stage.next_stage = Stage.objects.create(
            campaign=stage.campaign,
            name="Next",
            task_type=stage.task_type,
            assignments_per_hit=1,
            reward=stage.reward,
            position=1,
        )
        stage.save(update_fields=["next_stage"])
    people = [worker(f"w{n}") for n in range(3)]
    for hit in hits(stage):
        for n, who in enumerate(people):
            submit(hit, who, {"choice": n % 2})

    def queries(batch_size):
        from campaigns.models import Assignment

        Assignment.objects.filter(hit__stage=stage).update(status="submitted", review_details={})
        with CaptureQueriesContext(connection) as ctx:
            summary = stage_review(stage=stage, batch_size=batch_size)
        handoffs = sum(
            q["sql"].startswith("INSERT") and OutboxMessage._meta.db_table in q["sql"]
            for q in ctx.captured_queries
        )
        return len(ctx.captured_queries) - handoffs, summary.batches, handoffs

    q12, b12, h12 = queries(12)  # 24 assignments: 2 batches
    q6, b6, h6 = queries(6)  # 4 batches
    q3, b3, h3 = queries(3)  # 8 batches
    assert (b12, b6, b3) == (2, 4, 8)
    per_batch = (q6 - q12) / 2
    assert per_batch == (q3 - q6) / 4
    assert per_batch == 3  # savepoint, the statement, release
    approvals = ReviewRun.objects.filter(stage=stage).latest("pk").decisions["approve"]
    if handed_on:
        # One INSERT per batch with approvals, at most one per batch: 16 approvals.
        assert (approvals, h12, h6) == (16, 2, 4)
        assert 0 < h3 <= b3
    else:
        assert h12 == h6 == h3 == 0


@pytest.mark.django_db(transaction=True)
def test_stage_review_outside_a_transaction_writes_batches_on_a_thread(monkeypatch):
    """Committed data, no caller's transaction: on PostgreSQL the batches are written by
    the writer threads in turn (each with its own connection, closed at the end) while the
    next ones are decided; the decisions are those of the inline path, and a failed write
    is raised."""
    import threading

    from validation import review_batches

    stage = make_stage(items=4, review_rules=RULES)
    people = [worker(f"t{n}") for n in range(3)]
    rows = [
        submit(hit, who, {"choice": n % 2}, seconds=5 if n == 2 else 60)
        for hit in hits(stage)
        for n, who in enumerate(people)
    ]
    threads: list[str] = []
    apply = review_batches._batch_apply

    def recorded(**kwargs):
        threads.append(threading.current_thread().name)
        apply(**kwargs)

    monkeypatch.setattr(review_batches, "_batch_apply", recorded)
    summary = stage_review(stage=stage, batch_size=5)

    assert summary.batches == 3  # 12 assignments
    assert len(threads) == 3
    # The writer threads are PostgreSQL's; other databases write inline.
    if connection.vendor == "postgresql":  # dealt in turn, run at once
        assert sorted(name.rsplit("_", 1)[0] for name in threads) == [
            "stage-review-writer-0",
            "stage-review-writer-0",
            "stage-review-writer-1",
        ]
    else:
        assert threads == ["MainThread"] * 3
    assert summary.decisions == {"approve": 4, "reject": 8}
    statuses = sorted(r.status for r in Assignment.objects.filter(pk__in=[r.pk for r in rows]))
    assert statuses == ["approved"] * 4 + ["rejected"] * 8
    assert (
        sum(
            Worker.objects.filter(pk__in=[w.pk for w in people]).values_list(
                "rejected_count", flat=True
            )
        )
        == 8
    )

    def broken(**kwargs):
        raise RuntimeError("write failed")

    Assignment.objects.filter(pk__in=[r.pk for r in rows]).update(status="submitted")
    monkeypatch.setattr(review_batches, "_batch_apply", broken)
    with pytest.raises(RuntimeError, match="write failed"):
        stage_review(stage=stage, batch_size=5)


def test_requester_override_of_a_rule_decision_and_of_a_hold():
    requester = UserFactory.create()
    stage = make_stage(items=2, review_rules=RULES)
    h1, h2 = hits(stage)
    w1, w2, w3 = worker("a"), worker("b"), worker("c")
    submit(h1, w1, {"choice": 0})
    submit(h1, w2, {"choice": 0})
    c = submit(h1, w3, {"choice": 2})
    lone = submit(h2, w1, {"choice": 1})
    stage_review(stage=stage)
    c.refresh_from_db()
    assert c.status == "rejected"

    # The plain service refuses to turn a decision over: that is what the override is for.
    with pytest.raises(DomainError):
        assignment_approve(assignment=c, decided_by=requester, source="requester")

    c = assignment_override(
        assignment=c, decision="approve", decided_by=requester, reason="option C is right"
    )
    c.refresh_from_db()
    assert (c.status, c.decided_by_id, c.decision_source) == ("approved", requester.pk, "requester")
    (override,) = c.review_details["overrides"]
    assert override["replaced"]["source"] == "rule:consensus"
    assert c.review_details["review"]["decision"] == "reject"  # the rule's verdict stays
    w3.refresh_from_db()
    assert (w3.approved_count, w3.rejected_count) == (1, 0)

    lone = assignment_override(
        assignment=lone, decision="reject", decided_by=requester, reason="copied"
    )
    lone.refresh_from_db()
    assert (lone.status, lone.decided_by_id) == ("rejected", requester.pk)
    assert lone.review_details["overrides"][0]["replaced"]["review"] == "hold"

    # A later run leaves requester decisions alone.
    stage_review(stage=stage)
    c.refresh_from_db()
    assert c.status == "approved"


def test_submit_hook_reviews_after_commit(django_capture_on_commit_callbacks):
    stage = make_stage(items=1, per_hit=3, review_rules=[{"rule": "work_time", "min_seconds": 5}])
    from datetime import timedelta

    link = invite_create(
        campaign=stage.campaign, created_by=stage.campaign.owner, expires_in=timedelta(days=1)
    )
    who = invite_redeem(token=invite_token(invite=link))[1]
    assignment = assignment_accept(stage=stage, worker=who)
    with django_capture_on_commit_callbacks(execute=True):
        result = assignment_submit(
            assignment_id=assignment.pk, worker=who, form={"items/0/choice": "1"}, telemetry={}
        )
    assert result.stored
    assignment.refresh_from_db()
    # Submitted at once: under the 5 s floor.
    assert (assignment.status, assignment.decision_source) == ("rejected", "rule:work_time")


def _sentence_stage(**rule):
    def data(n):
        return {"question": f"Why {n}?", "sentences": ["A.", "B.", "C.", "D."]}

    return make_stage(
        items=2,
        task_type="sentence_selection_answer",
        data=data,
        escalation_rule={"rule": "early_stop", "first": 3, "drop_if_no_answer": 2, "extend_to": 8},
        **rule,
    )


def test_early_stopping_drops_or_extends():
    stage = _sentence_stage()
    dropped, extended = hits(stage)
    people = [worker(f"e{n}") for n in range(4)]
    no_answer = {"sentences": [], "no_answer": True}
    answer = {"sentences": [1], "no_answer": False}

    submit(dropped, people[0], no_answer)
    submit(dropped, people[1], answer)
    assert hit_early_stop(hit=dropped) == WAITING
    submit(dropped, people[2], no_answer)
    assert hit_early_stop(hit=dropped) == DROPPED
    assert hit_early_stop(hit=dropped) == DONE
    dropped.refresh_from_db()
    assert (dropped.status, dropped.places_left) == (HITStatus.COMPLETED, 0)
    assert Item.objects.get(hits=dropped).status == ItemStatus.DROPPED

    for who, entry in zip(people, [no_answer, answer, answer], strict=False):
        submit(extended, who, entry)
    assert hit_early_stop(hit=extended) == EXTENDED
    assert hit_early_stop(hit=extended) == DONE
    extended.refresh_from_db()
    assert (extended.max_assignments, extended.places_left) == (8, 5)
    assert (
        ProviderOperation.objects.filter(idempotency_key=f"early_stop:{extended.pk}").count() == 1
    )
    assert Item.objects.get(hits=extended).status == ItemStatus.PUBLISHED


def test_early_stopping_lets_more_workers_in_after_submit(django_capture_on_commit_callbacks):
    from datetime import timedelta

    stage = _sentence_stage()
    HIT.objects.filter(pk=hits(stage)[0].pk).update(status=HITStatus.COMPLETED, places_left=0)
    link = invite_create(
        campaign=stage.campaign, created_by=stage.campaign.owner, expires_in=timedelta(days=1)
    )
    workers = [invite_redeem(token=invite_token(invite=link))[1] for _ in range(4)]
    for who in workers[:3]:
        a = assignment_accept(stage=stage, worker=who)
        with django_capture_on_commit_callbacks(execute=True):
            assignment_submit(
                assignment_id=a.pk, worker=who, form={"items/0/sentences": ["2"]}, telemetry={}
            )
    hit = HIT.objects.get(pk=hits(stage)[1].pk)
    assert (hit.max_assignments, hit.places_left) == (8, 5)
    fourth = assignment_accept(stage=stage, worker=workers[3])
    assert fourth.hit_id == hit.pk
    assert fourth.status == AssignmentStatus.ACCEPTED


def _reviewed_twice(review):
    """Two like stages with like submissions; ``review(ids)`` run on the second, the
    per-submission reviews one after the other on the first. Their outcomes."""
    from validation.services import assignment_review

    outcomes = []
    for run in ("one by one", "drained"):
        stage = make_stage(items=2, per_hit=4, review_rules=RULES)
        h1, h2 = hits(stage)
        w = [worker(f"{run}-{n}") for n in range(4)]
        rows = [
            submit(h1, w[0], {"choice": 0}),
            submit(h2, w[0], {"choice": 1}),
            submit(h1, w[1], {"choice": 0}, seconds=5),
            submit(h1, w[2], {"choice": 2}),
            submit(h2, w[3], {"choice": 3}),
        ]
        ids = [row.pk for row in rows]
        if run == "drained":
            review(ids)
        else:
            for pk in ids:
                assignment_review(assignment=Assignment.objects.get(pk=pk))
        outcome = []
        for row in Assignment.objects.filter(pk__in=ids).order_by("pk"):
            details = dict(row.review_details["review"])
            details.pop("at")
            outcome.append((row.status, row.decision_source, row.decision_reason, details))
        outcomes.append(outcome)
    return outcomes


def test_a_drained_queue_of_reviews_stores_what_one_by_one_did():
    """``assignments_review`` (the outbox's batch runner of ``validation.review_submission``):
    the held reviews written once at the end, the same decisions and reviews as the
    reviews run one after the other; fewer writes."""
    from validation.services import assignments_review

    writes: list[str] = []

    def review(ids):
        with CaptureQueriesContext(connection) as queries:
            assignments_review(assignment_ids=ids)
        writes.extend(q["sql"] for q in queries if q["sql"].startswith("UPDATE"))

    one_by_one, drained = _reviewed_twice(review)
    assert drained == one_by_one
    assert [o[0] for o in drained] == ["approved", "submitted", "rejected", "rejected", "submitted"]
    assert drained[1][3]["decision"] == "hold"
    review_writes = [sql for sql in writes if '"review_details"' in sql and "CASE" in sql]
    assert len(review_writes) == 1  # the held ones, once
