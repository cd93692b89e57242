"""Hand-off: an approved answer becomes next-stage items once, published when live."""

from __future__ import annotations

import random
import zlib

import pytest

from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    HITItem,
    Item,
    ItemSource,
    ItemStatus,
    Stage,
)
from campaigns.tasks import handoff_run_task
from campaigns.work.allocation import assignment_accept
from campaigns.work.decisions import assignment_approve, assignment_reject
from campaigns.work.handoff import handoff_flush, handoff_run, handoffs_run
from campaigns.work.publishing import stage_publish
from campaigns.work.submission import assignment_submit

pytestmark = pytest.mark.django_db


@pytest.fixture
def pipeline(make_stage):
    def make(state: str = "live", **first_fields):
        first = make_stage(state=state, items=2, items_per_hit=2, **first_fields)
        second = make_stage(campaign=first.campaign, position=1)
        first.next_stage = second
        first.save()
        stage_publish(stage=first)
        return first, second

    return make


def _approved(stage, worker, texts, capture):
    assignment = assignment_accept(stage=stage, worker=worker)
    form = {f"items/{i}/text": t for i, t in enumerate(texts)}
    assignment_submit(assignment_id=assignment.pk, worker=worker, form=form, telemetry=None)
    with capture(execute=True) as callbacks:
        assignment_approve(assignment=assignment, source="requester")
    assert len(callbacks) == 1  # the hand-off task, enqueued after commit
    return assignment


def test_handoff_creates_items_once_and_publishes_them(
    pipeline, invited, django_capture_on_commit_callbacks
):
    first, second = pipeline()
    worker = invited(first.campaign)

    assignment = _approved(first, worker, ["alpha", "beta"], django_capture_on_commit_callbacks)

    items = list(Item.objects.filter(stage=second).order_by("id"))
    assert [i.data for i in items] == [{"text": "ALPHA"}, {"text": "BETA"}]
    assert all(i.source == ItemSource.PRODUCED for i in items)
    assert all(i.source_assignment_id == assignment.pk for i in items)
    assert all(i.status == ItemStatus.PUBLISHED for i in items)
    assert HIT.objects.filter(stage=second, status="published").count() == 2

    assert handoff_run(assignment=assignment) == 0
    assert handoff_run_task.delay(assignment.pk).get() == 0
    assert Item.objects.filter(stage=second).count() == 2
    assert HIT.objects.filter(stage=second).count() == 2
    # The next stage's work is there for its workers, with no manual step.
    assert assignment_accept(stage=second, worker=worker).hit.stage == second


def test_handoff_in_a_paused_campaign_waits_to_publish(
    pipeline, invited, django_capture_on_commit_callbacks
):
    first, second = pipeline()
    worker = invited(first.campaign)
    assignment = assignment_accept(stage=first, worker=worker)
    assignment_submit(
        assignment_id=assignment.pk,
        worker=worker,
        form={"items/0/text": "one", "items/1/text": "two"},
        telemetry=None,
    )
    first.campaign.state = "paused"
    first.campaign.save()
    with django_capture_on_commit_callbacks(execute=True):
        assignment_approve(assignment=assignment, source="requester")

    assert Item.objects.filter(stage=second, status=ItemStatus.PENDING).count() == 2
    assert not HIT.objects.filter(stage=second).exists()


def test_items_the_next_stage_refuses_are_left_out(
    pipeline, invited, django_capture_on_commit_callbacks
):
    first, second = pipeline()
    _approved(first, invited(first.campaign), ["!bad", "good"], django_capture_on_commit_callbacks)
    assert [i.data for i in Item.objects.filter(stage=second)] == [{"text": "GOOD"}]


def test_unapproved_or_last_stage_hands_off_nothing(pipeline, invited, make_stage):
    first, _ = pipeline()
    worker = invited(first.campaign)
    assignment = assignment_accept(stage=first, worker=worker)
    assert handoff_run(assignment=assignment) == 0

    last = make_stage(items=1)
    stage_publish(stage=last)
    only = assignment_accept(stage=last, worker=invited(last.campaign))
    assignment_submit(
        assignment_id=only.pk, worker=only.worker, form={"items/0/text": "text"}, telemetry=None
    )
    assignment_approve(assignment=only, source="requester")
    assert handoff_run(assignment=only) == 0


def _pipeline_into_groups_of_three(make_stage, *, first_hits: int):
    first = make_stage(items=first_hits, items_per_hit=1)
    second = make_stage(campaign=first.campaign, position=1, items_per_hit=3)
    first.next_stage = second
    first.save()
    stage_publish(stage=first)
    return first, second


def test_remainder_waits_while_the_source_stage_still_works(
    make_stage, invited, django_capture_on_commit_callbacks
):
    first, second = _pipeline_into_groups_of_three(make_stage, first_hits=2)

    _approved(first, invited(first.campaign), ["one"], django_capture_on_commit_callbacks)
    # One item of a three-item HIT, and the other source HIT is still open: it waits.
    assert Item.objects.get(stage=second).status == ItemStatus.PENDING
    assert not HIT.objects.filter(stage=second).exists()

    _approved(first, invited(first.campaign), ["two"], django_capture_on_commit_callbacks)
    # The source stage is drained: the last, smaller HIT goes out with both items.
    hit = HIT.objects.get(stage=second)
    assert hit.items.count() == 2
    assert set(Item.objects.filter(stage=second).values_list("status", flat=True)) == {
        ItemStatus.PUBLISHED
    }


def test_flush_publishes_the_remainder_after_a_final_rejection(
    make_stage, invited, django_capture_on_commit_callbacks
):
    first, second = _pipeline_into_groups_of_three(make_stage, first_hits=2)
    _approved(first, invited(first.campaign), ["kept"], django_capture_on_commit_callbacks)
    worker = invited(first.campaign)
    last = assignment_accept(stage=first, worker=worker)
    assignment_submit(
        assignment_id=last.pk, worker=worker, form={"items/0/text": "spam"}, telemetry=None
    )
    assignment_reject(
        assignment=last, decided_by=None, source="requester", reason="off topic", feedback="x"
    )
    assert not HIT.objects.filter(stage=second).exists()

    assert handoff_flush() == 1
    assert HIT.objects.get(stage=second).items.count() == 1
    assert handoff_flush() == 0


def test_handoffs_of_a_round_run_as_one_with_the_same_items_and_hits(make_stage, invited):
    first, second = _pipeline_into_groups_of_three(make_stage, first_hits=2)
    approved = []
    for text in ("one", "two"):
        worker = invited(first.campaign)
        assignment = assignment_accept(stage=first, worker=worker)
        assignment_submit(
            assignment_id=assignment.pk, worker=worker, form={"items/0/text": text}, telemetry=None
        )
        assignment_approve(assignment=assignment, source="requester")  # hand-offs not run
        approved.append(assignment.pk)
    assert not Item.objects.filter(stage=second).exists()

    assert handoffs_run(assignment_ids=approved) == 2
    # As one hand-off after the other: an item per answer, from its answer; the
    # source stage drained, so the smaller HIT goes out with both.
    items = list(Item.objects.filter(stage=second).order_by("id"))
    assert [(i.data, i.source_assignment_id) for i in items] == [
        ({"text": "ONE"}, approved[0]),
        ({"text": "TWO"}, approved[1]),
    ]
    hit = HIT.objects.get(stage=second)
    assert list(
        HITItem.objects.filter(hit=hit).order_by("position").values_list("item_id", flat=True)
    ) == [i.pk for i in items]
    assert handoffs_run(assignment_ids=approved) == 0  # idempotent
    assert HIT.objects.filter(stage=second).count() == 1


def test_a_round_approved_at_once_counts_announces_and_hands_off_as_one_by_one(
    make_stage, invited, django_capture_on_commit_callbacks
):
    from campaigns.models import Assignment, Worker
    from campaigns.work.decisions import assignments_approve
    from qaportal.models import OutboxMessage

    first, second = _pipeline_into_groups_of_three(make_stage, first_hits=3)
    workers = [invited(first.campaign) for _ in range(2)]
    submitted = []
    for worker, text in zip(workers, ["alpha", "beta"], strict=True):
        assignment = assignment_accept(stage=first, worker=worker)
        assignment_submit(
            assignment_id=assignment.pk, worker=worker, form={"items/0/text": text}, telemetry=None
        )
        submitted.append(assignment.pk)
    at_work = assignment_accept(stage=first, worker=invited(first.campaign))

    with django_capture_on_commit_callbacks(execute=True):
        approved = assignments_approve(
            assignment_ids=[*reversed(submitted), at_work.pk], source="requester"
        )
    # Only the submitted ones, in id order; the one still at work is left as it is.
    assert [a.pk for a in approved] == submitted
    rows = Assignment.objects.filter(pk__in=submitted)
    assert {(a.status, a.decision_source) for a in rows} == {("approved", "requester")}
    assert Assignment.objects.get(pk=at_work.pk).status == "accepted"
    assert [w.approved_count for w in Worker.objects.filter(pk__in=[w.pk for w in workers])] == [
        1,
        1,
    ]
    # One hand-off message per approval, in order, each run once.
    messages = OutboxMessage.objects.filter(task="campaigns.handoff_run").order_by("id")
    assert [m.args for m in messages] == [[pk] for pk in submitted]
    assert all(m.done_at is not None for m in messages)
    assert sorted(i.data["text"] for i in Item.objects.filter(stage=second)) == ["ALPHA", "BETA"]
    # Again: nothing more to approve, nothing announced.
    assert assignments_approve(assignment_ids=submitted, source="requester") == []
    assert messages.count() == 2


def test_a_held_stage_waits_for_the_requester_and_mixes_its_sources(
    make_stage, invited, django_capture_on_commit_callbacks
):
    """Issue 35, point 4 (Nangia et al. §4: the four protocols' data shuffled into one
    validation task): with ``hold_handoff`` the hand-off publishes nothing, the flush
    neither; the requester's publication, with ``shuffle``, mixes the sources in HITs."""
    from tests.factories import CampaignFactory

    # The shuffle is seeded by the campaign's slug: a fixed one, a fixed mix.
    campaign = CampaignFactory.create(state="live", slug="held-and-shuffled")
    first = make_stage(campaign=campaign, items=2, items_per_hit=1)
    other = make_stage(campaign=campaign, position=1, items=2, items_per_hit=1)
    target = make_stage(
        campaign=first.campaign,
        position=2,
        items_per_hit=2,
        config={"hold_handoff": True, "shuffle": True},
    )
    for stage in (first, other):
        stage.next_stage = target
        stage.save()
        stage_publish(stage=stage)
    _approved(first, invited(first.campaign), ["a one"], django_capture_on_commit_callbacks)
    _approved(first, invited(first.campaign), ["a two"], django_capture_on_commit_callbacks)
    _approved(other, invited(first.campaign), ["b one"], django_capture_on_commit_callbacks)
    _approved(other, invited(first.campaign), ["b two"], django_capture_on_commit_callbacks)
    assert Item.objects.filter(stage=target, status=ItemStatus.PENDING).count() == 4
    assert handoff_flush() == 0
    assert not HIT.objects.filter(stage=target).exists()

    pending = list(
        Item.objects.filter(stage=target, status=ItemStatus.PENDING)
        .order_by("pk")
        .values_list("pk", "external_id")
    )
    assert stage_publish(stage=target) == 2
    published = list(
        HITItem.objects.filter(hit__stage=target)
        .order_by("hit_id", "position")
        .values_list("item_id", flat=True)
    )
    # The order is the pending items' (by id) shuffled with the stage's seed (from the
    # campaign, the stage's position and the first item's external id, not row ids);
    # which sources a HIT mixes is then chance, checked at size in test_publish_order.
    seed = zlib.crc32(f"{campaign.slug}/{target.position}/{pending[0][1]}".encode())
    expected = [pk for pk, _ in pending]
    random.Random(seed).shuffle(expected)
    assert published == expected
    sources = {
        i.source_assignment.hit.stage_id if i.source_assignment else None
        for i in Item.objects.filter(stage=target).select_related("source_assignment__hit")
    }
    assert sources == {first.pk, other.pk}


def test_publish_order_mixes_the_sources_of_a_shuffled_stage():
    """At the size of a real validation stage a shuffled publication mixes the sources
    in its HITs (Nangia et al. §4), and an unshuffled one keeps them in arrival order."""
    from campaigns.work.publishing import _hit_groups, _publish_order
    from tests.factories import CampaignFactory, StageFactory

    stage = StageFactory.build(
        campaign=CampaignFactory.build(slug="mixing"),
        position=3,
        config={"shuffle": True},
        gold_ratio=0,
    )
    # 4 sources of 48 items each, arrived one source after the other.
    pending = [(n, False, f"src{n // 48}-{n}") for n in range(192)]
    groups = _hit_groups(_publish_order(stage=stage, pending=pending), size=4)
    mixed = [g for g in groups if len({n // 48 for n in g}) > 1]
    assert len(mixed) > len(groups) // 2
    stage.config = {}
    kept = _hit_groups(_publish_order(stage=stage, pending=pending), size=4)
    assert all(len({n // 48 for n in g}) == 1 for g in kept)


def test_a_question_dropped_by_early_stopping_is_not_rephrased():
    """Issue 35, point 9 (WhyQA §2.2.2-2.2.3): 2 of 3 answers say "no answer": the
    question is dropped, and its third answer, approved, sends nothing to rephrasing;
    the kept question's approved answer does."""
    from tests.validation.db_helpers import hits, make_stage, submit, worker
    from validation.early_stopping import DROPPED, hit_early_stop

    answering = make_stage(
        items=2,
        task_type="sentence_selection_answer",
        data=lambda n: {"question": f"Why {n}?", "sentences": ["A.", "B.", "C."]},
        escalation_rule={"rule": "early_stop", "first": 3, "drop_if_no_answer": 2, "extend_to": 8},
    )
    rephrasing = Stage.objects.create(
        campaign=answering.campaign, name="Rephrase", position=1, task_type="rephrase"
    )
    answering.next_stage = rephrasing
    answering.save()
    dropped, kept = hits(answering)
    no_answer = {"sentences": [], "no_answer": True}
    answer = {"sentences": [1], "no_answer": False}
    for n, entry in enumerate([no_answer, no_answer, answer]):
        last = submit(dropped, worker(f"d{n}"), entry)
    assert hit_early_stop(hit=dropped) == DROPPED
    good = submit(kept, worker("k0"), answer)
    for assignment in (last, good):
        Assignment.objects.filter(pk=assignment.pk).update(status=AssignmentStatus.APPROVED)
    assert handoffs_run(assignment_ids=[last.pk, good.pk]) == 1
    assert [i.data["question"] for i in Item.objects.filter(stage=rephrasing)] == ["Why 1?"]
