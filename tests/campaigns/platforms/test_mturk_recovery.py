"""MTurk after crashes and under throttling: every effect exactly once, by the fake's
own record.

A crash "after the platform's success and before the DB commit" is simulated by
making the executor's commit (``_finish``) or the provider's checkpoint raise once:
the operation stays ``running`` with MTurk already changed; it is then recovered
(``recover=True`` once stale), as ``operations_reconcile`` would.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from campaigns.models import (
    HIT,
    AssignmentStatus,
    HITStatus,
    LedgerEntry,
    LedgerStatus,
    OperationState,
    ProviderOperation,
)
from campaigns.platforms import operations
from campaigns.platforms.mturk.sync import mturk_hits_sync
from campaigns.platforms.publishing import stage_provider_publish
from campaigns.platforms.review import paid_assignment_approve
from campaigns.platforms.worker_actions import assignment_bonus_pay
from tests.campaigns.platforms.conftest import execute, make_campaign
from tests.campaigns.platforms.mturk_helpers import page_submit

pytestmark = pytest.mark.django_db


class Crash(Exception):
    """The worker process dies here."""


def crash_once(monkeypatch, name: str) -> None:
    real = getattr(operations, name)
    state = {"crashed": False}

    def dying(*args, **kwargs):
        if not state["crashed"]:
            state["crashed"] = True
            raise Crash(name)
        return real(*args, **kwargs)

    monkeypatch.setattr(operations, name, dying)


def crash_on_checkpoint(monkeypatch, field: str) -> None:
    """The process dies when a checkpoint would first record ``field`` (not saved)."""
    real = operations._save_result
    state = {"crashed": False}

    def save_result(operation_id):
        save = real(operation_id)

        def dying(result):
            if field in result and not state["crashed"]:
                state["crashed"] = True
                raise Crash(field)
            save(result)

        return dying

    monkeypatch.setattr(operations, "_save_result", save_result)


def recover(op: ProviderOperation) -> ProviderOperation:
    op.refresh_from_db()
    assert op.state == OperationState.RUNNING
    ProviderOperation.objects.filter(pk=op.pk).update(
        updated_at=timezone.now() - timedelta(hours=1)
    )
    return execute(op.pk, recover=True)


@pytest.fixture
def stage(requester, mturk):
    _, stage = make_campaign(requester, provider="mturk", slug="mturk-crash", items=30)
    return stage


def published(stage):
    op = stage_provider_publish(stage=stage)
    assert op is not None
    assert execute(op.pk).state == OperationState.DONE
    return op


def test_create_hit_crash_after_mturk_made_them_recovers_without_duplicates(
    stage, mturk, monkeypatch
):
    op = stage_provider_publish(stage=stage)
    assert op is not None
    crash_on_checkpoint(monkeypatch, "hits")  # 25 HITs made, their checkpoint lost
    with pytest.raises(Crash):
        execute(op.pk)
    assert len(mturk.state.hits) == 25
    done = recover(op)
    assert done.state == OperationState.DONE, done.last_error
    assert len(mturk.state.hits) == 30  # the 25 found again by token + annotation, 5 new
    hits = HIT.objects.filter(stage=stage)
    assert {h.status for h in hits} == {HITStatus.PUBLISHED}
    assert {h.provider_hit_id for h in hits} == set(mturk.state.hits)


def test_create_hit_recovered_after_mturk_forgot_its_tokens_lists_hits_first(
    stage, mturk, monkeypatch
):
    op = stage_provider_publish(stage=stage)
    assert op is not None
    crash_on_checkpoint(monkeypatch, "hits")
    with pytest.raises(Crash):
        execute(op.pk)
    # A day later: MTurk no longer knows the tokens; the operation is older than that.
    mturk.state.tokens.clear()
    op.refresh_from_db()
    result = dict(op.result or {})
    result["started_at"] = (datetime.now(UTC) - timedelta(days=2)).isoformat()
    ProviderOperation.objects.filter(pk=op.pk).update(result=result)
    done = recover(op)
    assert done.state == OperationState.DONE, done.last_error
    assert len(mturk.state.hits) == 30
    assert mturk.state.calls["ListHITs"] >= 1


@pytest.fixture
def submitted(stage, mturk):
    published(stage)
    hit = HIT.objects.filter(stage=stage).earliest("pk")
    assignment = page_submit(mturk, hit, "AGOODWORKER1")
    mturk_hits_sync()
    assignment.refresh_from_db()
    return assignment


def test_approve_crash_before_commit_approves_once(submitted, mturk, monkeypatch):
    op = paid_assignment_approve(assignment=submitted, source="test")
    crash_once(monkeypatch, "_finish")
    with pytest.raises(Crash):
        execute(op.pk)
    assert mturk.state.approvals[submitted.provider_assignment_id] == 1
    done = recover(op)
    assert done.state == OperationState.DONE, done.last_error
    assert mturk.state.approvals[submitted.provider_assignment_id] == 1
    submitted.refresh_from_db()
    assert submitted.status == AssignmentStatus.APPROVED
    entries = LedgerEntry.objects.filter(assignment=submitted)
    assert set(entries.values_list("status", flat=True)) == {LedgerStatus.PAID}


def test_bonus_crash_before_commit_pays_once(submitted, mturk, monkeypatch):
    op = assignment_bonus_pay(
        assignment=submitted, amount=Decimal("0.40"), reason="Well done", key="crash"
    )
    crash_once(monkeypatch, "_finish")
    with pytest.raises(Crash):
        execute(op.pk)
    assert len(mturk.state.bonuses) == 1
    done = recover(op)
    assert done.state == OperationState.DONE, done.last_error
    assert len(mturk.state.bonuses) == 1
    assert LedgerEntry.objects.get(key="bonus:crash").status == LedgerStatus.PAID


def test_bonus_crash_right_after_send_recovered_past_token_memory_pays_once(
    submitted, mturk, monkeypatch
):
    op = assignment_bonus_pay(
        assignment=submitted, amount=Decimal("0.40"), reason="Well done", key="late"
    )
    crash_on_checkpoint(monkeypatch, "paid")  # MTurk paid; "paid" never saved
    with pytest.raises(Crash):
        execute(op.pk)
    assert len(mturk.state.bonuses) == 1
    mturk.state.tokens.clear()  # MTurk forgot the token (24 h)
    op.refresh_from_db()
    result = dict(op.result or {})
    result["requested_at"] = (datetime.now(UTC) - timedelta(days=2)).isoformat()
    ProviderOperation.objects.filter(pk=op.pk).update(result=result)
    done = recover(op)
    assert done.state == OperationState.DONE, done.last_error
    assert (done.result or {})["confirmed_by"] == "list_bonus_payments"
    assert len(mturk.state.bonuses) == 1


def test_a_lost_answer_is_retried_with_the_same_token(submitted, mturk):
    mturk.fail_next("SendBonus", "drop_after")  # paid, answer lost
    op = assignment_bonus_pay(
        assignment=submitted, amount=Decimal("0.25"), reason="Thanks", key="drop"
    )
    done = execute(op.pk)
    assert done.state == OperationState.DONE, done.last_error
    assert len(mturk.state.bonuses) == 1
    assert mturk.state.calls["SendBonus"] == 2


def test_everything_completes_under_thirty_percent_throttling(requester, mturk):
    mturk.rates = {"throttle": 0.3}
    _, stage = make_campaign(requester, provider="mturk", slug="mturk-throttle", items=40)
    op = published(stage)
    assert len(mturk.state.hits) == 40
    hits = list(HIT.objects.filter(stage=stage).order_by("pk")[:10])
    assignments = [page_submit(mturk, h, f"AWORKER{n:03d}") for n, h in enumerate(hits)]
    stats = mturk_hits_sync()
    assert stats.errors == 0
    ops = []
    for n, a in enumerate(assignments):
        a.refresh_from_db()
        ops.append(paid_assignment_approve(assignment=a, source="test"))
        ops.append(
            assignment_bonus_pay(assignment=a, amount=Decimal("0.10"), reason="Bonus", key=f"t{n}")
        )
    for o in ops:
        assert execute(o.pk).state == OperationState.DONE
    assert mturk.state.faulted["throttle"] > 10
    assert len(mturk.state.hits) == 40
    assert all(n == 1 for n in mturk.state.approvals.values())
    assert len(mturk.state.approvals) == 10
    assert len({b["AssignmentId"] for b in mturk.state.bonuses}) == len(mturk.state.bonuses) == 10
    assert op.idempotency_key


def test_server_errors_and_dropped_connections_do_not_duplicate(requester, mturk):
    mturk.rates = {"500": 0.1, "drop_after": 0.1, "drop_before": 0.1}
    mturk.rate_ops = {"CreateHITWithHITType", "SendBonus", "ListAssignmentsForHIT"}
    _, stage = make_campaign(requester, provider="mturk", slug="mturk-5xx", items=30)
    op = stage_provider_publish(stage=stage)
    assert op is not None
    for _ in range(5):  # the executor's own retries, as beat would enqueue them
        if execute(op.pk).state == OperationState.DONE:
            break
        ProviderOperation.objects.filter(pk=op.pk).update(next_attempt_at=None)
    assert ProviderOperation.objects.get(pk=op.pk).state == OperationState.DONE
    assert len(mturk.state.hits) == 30
    assert HIT.objects.filter(stage=stage, status=HITStatus.PUBLISHED).count() == 30


def test_a_refusal_half_way_keeps_the_hits_made_and_leaves_the_rest_pending(stage, mturk):
    mturk.fail_next("CreateHITWithHITType", "pass", times=10)
    mturk.fail_next("CreateHITWithHITType", "refuse")
    op = stage_provider_publish(stage=stage)
    assert op is not None
    done = execute(op.pk)
    assert done.state == OperationState.DONE
    assert len((done.result or {})["refused"]) == 20
    assert "no longer accepts" in (done.result or {})["error"]
    assert HIT.objects.filter(stage=stage, status=HITStatus.PUBLISHED).count() == 10
    assert HIT.objects.filter(stage=stage, status=HITStatus.PENDING).count() == 20
    again = stage_provider_publish(stage=stage)  # the rest, under a new key
    assert again is not None
    assert again.pk != op.pk
    assert again.payload["hit_ids"] == (done.result or {})["refused"]
    assert execute(again.pk).state == OperationState.DONE
    assert len(mturk.state.hits) == 30
