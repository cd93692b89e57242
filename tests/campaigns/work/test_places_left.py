"""HIT.places_left: set at publication, kept in step with the assignments holding a place."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from campaigns.models import HIT, Assignment
from campaigns.models.choices import ASSIGNMENT_HOLDING_STATES
from campaigns.work.allocation import assignment_accept
from campaigns.work.lifecycle import (
    AssignmentClosedError,
    assignment_return,
    assignments_expire,
)
from campaigns.work.publishing import stage_publish
from campaigns.work.submission import assignment_submit
from tests.campaigns.work.conftest import add_items
from tests.factories import HITFactory

pytestmark = pytest.mark.django_db

FORM = {f"items/{i}/text": "a fine answer" for i in range(3)}


def _assert_consistent(stage) -> None:
    """places_left == max_assignments - holding assignments, on every HIT of the stage."""
    for hit in HIT.objects.filter(stage=stage):
        held = hit.assignments.filter(status__in=ASSIGNMENT_HOLDING_STATES).count()
        assert hit.places_left == hit.max_assignments - held, (hit.pk, hit.places_left, held)


def _places(hit_id: int) -> int:
    return HIT.objects.values_list("places_left", flat=True).get(pk=hit_id)


def test_places_left_follows_accept_return_expire_submit(make_stage, invited):
    stage = make_stage(items=2, assignments_per_hit=3)
    stage_publish(stage=stage)
    assert list(HIT.objects.filter(stage=stage).values_list("places_left", flat=True)) == [3, 3]
    workers = [invited(stage.campaign) for _ in range(5)]

    first = assignment_accept(stage=stage, worker=workers[0])
    assert _places(first.hit_id) == 2
    assert assignment_accept(stage=stage, worker=workers[0]) == first  # resumed: no new place
    assert _places(first.hit_id) == 2
    _assert_consistent(stage)

    assignment_return(assignment_id=first.pk, worker=workers[0])
    assert _places(first.hit_id) == 3
    assignment_return(assignment_id=first.pk, worker=workers[0])  # idempotent
    assert _places(first.hit_id) == 3
    _assert_consistent(stage)

    taken = [assignment_accept(stage=stage, worker=w) for w in workers[1:4]]
    assert {a.hit_id for a in taken} == {first.hit_id}
    assert _places(first.hit_id) == 0
    _assert_consistent(stage)

    # Submitting keeps the place; expiry frees it, once.
    assignment_submit(assignment_id=taken[0].pk, worker=workers[1], form=FORM, telemetry=None)
    assert _places(first.hit_id) == 0
    Assignment.objects.filter(pk=taken[1].pk).update(deadline=timezone.now() - timedelta(minutes=1))
    assert assignments_expire() == 1
    assert assignments_expire() == 0
    assert _places(first.hit_id) == 1
    _assert_consistent(stage)

    # A submission after the deadline expires the assignment and frees its place.
    Assignment.objects.filter(pk=taken[2].pk).update(deadline=timezone.now() - timedelta(minutes=1))
    with pytest.raises(AssignmentClosedError) as closed:
        assignment_submit(assignment_id=taken[2].pk, worker=workers[3], form=FORM, telemetry=None)
    assert closed.value.assignment is not None
    assert _places(first.hit_id) == 2
    _assert_consistent(stage)

    # The freed places go to the next workers, on the first HIT again.
    assert assignment_accept(stage=stage, worker=workers[4]).hit_id == first.hit_id
    assert _places(first.hit_id) == 1
    _assert_consistent(stage)


def test_places_left_never_below_zero():
    """The CHECK constraint is the backstop of the counter."""
    hit = HITFactory.create(max_assignments=1, places_left=0)
    with pytest.raises(IntegrityError), transaction.atomic():
        HIT.objects.filter(pk=hit.pk).update(places_left=-1)


def test_full_hits_are_not_candidates(make_stage, invited):
    """Allocation reads the counter: a HIT with no place left is skipped, whatever its
    assignments say."""
    stage = make_stage(items=2)
    stage_publish(stage=stage)
    first, second = HIT.objects.filter(stage=stage).order_by("id")
    HIT.objects.filter(pk=first.pk).update(places_left=0)
    assert assignment_accept(stage=stage, worker=invited(stage.campaign)).hit_id == second.pk


def test_publish_takes_a_few_queries_whatever_the_number_of_hits(make_stage):
    small, large = make_stage(items=3), make_stage(items=60)
    with CaptureQueriesContext(connection) as few:
        assert stage_publish(stage=small) == 3
    with CaptureQueriesContext(connection) as many:
        assert stage_publish(stage=large) == 60
    assert len(many) == len(few) <= 8
    hits = HIT.objects.filter(stage=large)
    assert all(h.provider_hit_id == f"local-{h.pk}" and h.places_left == 1 for h in hits)


def test_exclusive_keys_with_counter(make_stage, invited):
    """Task types with exclusive keys still skip HITs of a key the worker holds."""
    stage = make_stage(assignments_per_hit=2)
    add_items(stage, ["a", "b", "c"], cells=["x", "x", "y"])
    stage_publish(stage=stage)
    worker = invited(stage.campaign)
    first = assignment_accept(stage=stage, worker=worker)
    assignment_submit(assignment_id=first.pk, worker=worker, form=FORM, telemetry=None)
    second = assignment_accept(stage=stage, worker=worker)
    assert second.hit.items.get().data["cell"] == "y"
    _assert_consistent(stage)
