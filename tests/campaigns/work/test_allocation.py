"""Allocation: places, exclusive keys, blocks, campaign state, expiry, and a race."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from campaigns import tasktypes
from campaigns.models import Assignment, AssignmentStatus, CampaignState, Stage, WorkerBlock
from campaigns.tasktypes import task_type_get
from campaigns.work.allocation import (
    NoWorkAvailableError,
    WorkerNotAllowedError,
    assignment_accept,
)
from campaigns.work.lifecycle import assignment_return, assignments_expire
from campaigns.work.publishing import stage_publish
from campaigns.work.selectors import next_hit
from campaigns.work.submission import assignment_submit
from tests.campaigns.work.conftest import PlainEchoTask, add_items
from tests.factories import WorkerFactory


def _published(make_stage, **kwargs):
    stage = make_stage(**kwargs)
    stage_publish(stage=stage)
    return stage


def _submit(assignment, text="fine answer"):
    form = {f"items/{i}/text": text for i in range(10)}
    return assignment_submit(
        assignment_id=assignment.pk, worker=assignment.worker, form=form, telemetry=None
    )


@pytest.mark.django_db
def test_max_assignments_respected(make_stage, invited):
    stage = _published(make_stage, items=1, assignments_per_hit=2)
    first, second, third = (invited(stage.campaign) for _ in range(3))

    a1 = assignment_accept(stage=stage, worker=first)
    a2 = assignment_accept(stage=stage, worker=second)
    assert a1.hit_id == a2.hit_id
    assert a1.status == AssignmentStatus.ACCEPTED
    assert a1.deadline == a1.accepted_at + stage.assignment_duration
    with pytest.raises(NoWorkAvailableError, match="no task left"):
        assignment_accept(stage=stage, worker=third)


@pytest.mark.django_db
def test_current_assignment_is_returned_again(make_stage, invited):
    stage = _published(make_stage, items=3)
    worker = invited(stage.campaign)
    first = assignment_accept(stage=stage, worker=worker)
    assert assignment_accept(stage=stage, worker=worker) == first
    _submit(first)
    second = assignment_accept(stage=stage, worker=worker)
    assert second.hit_id != first.hit_id


@pytest.mark.django_db
def test_worker_never_gets_the_same_hit_twice(make_stage, invited):
    stage = _published(make_stage, items=1, assignments_per_hit=3)
    worker = invited(stage.campaign)
    _submit(assignment_accept(stage=stage, worker=worker))
    with pytest.raises(NoWorkAvailableError):
        assignment_accept(stage=stage, worker=worker)


@pytest.mark.django_db
@pytest.mark.parametrize("read_from", ["stage", "worker"])
def test_exclusive_key_one_hit_per_cell(make_stage, invited, monkeypatch, read_from):
    """Whichever side the worker's keys are read from (``worker_exclusive_keys``: the
    stage's HITs when it has few, else the worker's assignments)."""
    if read_from == "worker":
        monkeypatch.setattr(next_hit, "HELD_FROM_STAGE_MAX_HITS", 1)
    stage = make_stage()
    add_items(stage, ["a", "b", "c"], cells=["moviesxcount", "moviesxcount", "booksxcount"])
    stage_publish(stage=stage)
    worker, other = invited(stage.campaign), invited(stage.campaign)

    first = assignment_accept(stage=stage, worker=worker)
    _submit(first)
    second = assignment_accept(stage=stage, worker=worker)
    _submit(second)
    cells = {a.hit.items.get().data["cell"] for a in (first, second)}
    assert cells == {"moviesxcount", "booksxcount"}
    with pytest.raises(NoWorkAvailableError):
        assignment_accept(stage=stage, worker=worker)
    # The key binds the worker, not the HIT: someone else takes the other movies cell.
    assert (
        assignment_accept(stage=stage, worker=other).hit.items.get().data["cell"] == "moviesxcount"
    )


@pytest.mark.django_db
def test_returned_cell_can_be_taken_again(make_stage, invited):
    stage = make_stage()
    add_items(stage, ["a", "b"], cells=["x", "x"])
    stage_publish(stage=stage)
    worker = invited(stage.campaign)
    first = assignment_accept(stage=stage, worker=worker)
    assignment_return(assignment_id=first.pk, worker=worker)
    again = assignment_accept(stage=stage, worker=worker)
    assert again.pk != first.pk


@pytest.mark.django_db
def test_blocked_worker_gets_nothing(make_stage, invited):
    stage = _published(make_stage, items=1)
    worker = invited(stage.campaign)
    block = WorkerBlock.objects.create(requester=stage.campaign.owner, worker=worker, reason="spam")
    with pytest.raises(WorkerNotAllowedError):
        assignment_accept(stage=stage, worker=worker)
    block.lifted_at = timezone.now()
    block.save()
    assert assignment_accept(stage=stage, worker=worker).pk


@pytest.mark.django_db
@pytest.mark.parametrize(
    "state", [CampaignState.DRAFT, CampaignState.PAUSED, CampaignState.COMPLETED]
)
def test_only_pilot_and_live_campaigns_give_work(make_stage, invited, state):
    stage = _published(make_stage, items=1, state=state)
    with pytest.raises(NoWorkAvailableError, match="not taking work"):
        assignment_accept(stage=stage, worker=invited(stage.campaign))


@pytest.mark.django_db
def test_worker_without_access_gets_nothing(make_stage):
    stage = _published(make_stage, items=1)
    with pytest.raises(WorkerNotAllowedError):
        assignment_accept(stage=stage, worker=WorkerFactory.create())


@pytest.mark.django_db
def test_expired_hit_is_not_offered(make_stage, invited):
    stage = _published(make_stage, items=1)
    stage.hits.update(expires_at=timezone.now() - timedelta(seconds=1))
    with pytest.raises(NoWorkAvailableError):
        assignment_accept(stage=stage, worker=invited(stage.campaign))


@pytest.mark.django_db
def test_expiry_frees_the_place(make_stage, invited):
    stage = _published(make_stage, items=1)
    slow, next_one = invited(stage.campaign), invited(stage.campaign)
    taken = assignment_accept(stage=stage, worker=slow)
    with pytest.raises(NoWorkAvailableError):
        assignment_accept(stage=stage, worker=next_one)

    assert taken.deadline is not None
    assert assignments_expire(now=taken.deadline - timedelta(seconds=1)) == 0
    assert assignments_expire(now=taken.deadline + timedelta(seconds=1)) == 1
    assert assignments_expire(now=taken.deadline + timedelta(seconds=1)) == 0

    taken.refresh_from_db()
    assert taken.status == AssignmentStatus.EXPIRED
    assert assignment_accept(stage=stage, worker=next_one).hit_id == taken.hit_id


@pytest.mark.django_db
def test_expire_task_runs_the_service(make_stage, invited):
    from campaigns.tasks import expire_assignments_task

    stage = _published(make_stage, items=1)
    taken = assignment_accept(stage=stage, worker=invited(stage.campaign))
    Assignment.objects.filter(pk=taken.pk).update(deadline=timezone.now() - timedelta(minutes=1))
    assert expire_assignments_task.delay().get() == 1


def _race(n: int, target) -> list:
    """Run ``target(i)`` in ``n`` threads released at once; their results or exceptions."""
    barrier = threading.Barrier(n)
    results: list = [None] * n

    def run(i: int) -> None:
        try:
            barrier.wait()
            results[i] = target(i)
        except Exception as exc:
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return results


@pytest.mark.django_db(transaction=True)
def test_twenty_workers_race_for_the_last_place(make_stage, invited):
    stage = _published(make_stage, items=1, assignments_per_hit=3)
    for _ in range(2):
        assignment_accept(stage=stage, worker=invited(stage.campaign))
    workers = [invited(stage.campaign) for _ in range(20)]

    results = _race(20, lambda i: assignment_accept(stage=stage, worker=workers[i]))

    won = [r for r in results if isinstance(r, Assignment)]
    lost = [r for r in results if isinstance(r, NoWorkAvailableError)]
    assert len(won) == 1, results
    assert len(lost) == 19, results
    assert Assignment.objects.filter(hit__stage=stage, status="accepted").count() == 3


@pytest.mark.django_db(transaction=True)
def test_racing_workers_all_get_a_place_when_there_are_enough(make_stage, invited):
    """SKIP LOCKED must not tell anyone "no work" while a place is free."""
    stage = _published(make_stage, items=1, assignments_per_hit=10)
    workers = [invited(stage.campaign) for _ in range(10)]

    results = _race(10, lambda i: assignment_accept(stage=stage, worker=workers[i]))

    assert all(isinstance(r, Assignment) for r in results), results
    assert Assignment.objects.filter(hit__stage=stage).count() == 10


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "postgresql", reason="plans are PostgreSQL's")
def test_held_keys_of_a_small_stage_are_read_from_its_hits(make_stage, invited):
    """The plan of ``worker_exclusive_keys``'s statement: for a stage of few HITs, the
    branch from the stage's HITs probes the index of a worker's place on a HIT for
    each (its cost does not grow with the worker's history elsewhere); the branch from
    the worker's side is not run. Plans (sequential scans priced out, on a small
    dataset), not timings."""
    stage = make_stage()
    add_items(stage, ["a", "b"], cells=["x", "y"])
    stage_publish(stage=stage)
    worker = invited(stage.campaign)
    _submit(assignment_accept(stage=stage, worker=worker))
    params = next_hit._held_items_params(stage.pk, worker.pk)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("ANALYZE campaigns_assignment, campaigns_hit, campaigns_hititem")
        cursor.execute("SET LOCAL enable_seqscan = off")  # sequential scans priced out
        cursor.execute(
            f"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) {next_hit._HELD_ITEMS_DATA_SQL}", params
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())
    stage_branch, worker_branch = plan.split("One-Time Filter", 2)[1:]
    assert "assignment_one_per_worker_per_hit" in stage_branch
    assert "never executed" in worker_branch
    assert next_hit.worker_exclusive_keys(
        stage=stage, worker=worker, task_type=task_type_get(stage.task_type)
    ) == {"x"}


@pytest.mark.parametrize("task_type", ["test_echo", "test_echo_plain"])
@pytest.mark.django_db(transaction=True)
def test_one_workers_racing_accepts_get_one_place(make_stage, invited, monkeypatch, task_type):
    """A double click (or several tabs): one worker's concurrent accepts in a stage with
    free places on many HITs all end on the same assignment; the stage given as an id
    (as the worker pages give it) or as a row; with exclusive keys and without (the
    place taken with the insert in one statement)."""
    monkeypatch.setitem(tasktypes._REGISTRY, PlainEchoTask.name, PlainEchoTask())
    stage = make_stage(items=10)
    Stage.objects.filter(pk=stage.pk).update(task_type=task_type)
    stage.refresh_from_db()
    stage_publish(stage=stage)
    worker = invited(stage.campaign)

    results = _race(
        6, lambda i: assignment_accept(stage=stage.pk if i % 2 else stage, worker=worker.pk)
    )

    assert all(isinstance(r, Assignment) for r in results), results
    assert len({r.pk for r in results}) == 1, results
    held = Assignment.objects.filter(worker=worker, hit__stage=stage)
    assert held.count() == 1
    assert held.get().status == AssignmentStatus.ACCEPTED
