"""Escalation and extension add places to a HIT exactly once per key."""

from __future__ import annotations

import pytest

from campaigns.models import HIT, ProviderOperation
from campaigns.work import lifecycle
from campaigns.work.allocation import assignment_accept
from campaigns.work.lifecycle import PlacesWanted, hit_add_assignments, hits_add_assignments
from campaigns.work.publishing import stage_publish
from tests.factories import HITFactory

pytestmark = pytest.mark.django_db


def test_local_places_open_at_once_and_only_once(make_stage, invited):
    stage = make_stage(items=1)
    stage_publish(stage=stage)
    hit = HIT.objects.get(stage=stage)
    first = invited(stage.campaign)
    assignment_accept(stage=stage, worker=first)
    assert HIT.objects.get(pk=hit.pk).places_left == 0

    hit_add_assignments(hit=hit, count=1, reason="disagreement", key="escalate:1:3")
    hit_add_assignments(hit=hit, count=1, reason="disagreement", key="escalate:1:3")

    hit.refresh_from_db()
    assert (hit.max_assignments, hit.places_left) == (2, 1)
    operation = ProviderOperation.objects.get(idempotency_key="escalate:1:3")
    assert (operation.kind, operation.state) == ("add_assignments", "done")
    # The new place is real: another worker gets it.
    assert assignment_accept(stage=stage, worker=invited(stage.campaign)).hit_id == hit.pk


def test_paid_provider_waits_for_its_executor():
    hit = HITFactory.create(provider="mturk", provider_hit_id="3ABC", max_assignments=2)
    hit_add_assignments(hit=hit, count=2, reason="early stopping: extend", key="extend:9")
    hit.refresh_from_db()
    assert hit.max_assignments == 2
    operation = ProviderOperation.objects.get(provider="mturk", idempotency_key="extend:9")
    assert operation.state == "pending"
    assert operation.payload == {
        "hit_id": hit.pk,
        "count": 2,
        "reason": "early stopping: extend",
        "study_id": hit.provider_group_id,
    }


def test_many_hits_at_once_each_key_once(make_stage, invited, django_assert_max_num_queries):
    """A round's escalations in one call: each key adds its places once, a key asked
    twice in the batch or already written adds nothing, a completed HIT reopens, and the
    statements do not grow with the HITs."""
    stage = make_stage(items=6)
    stage_publish(stage=stage)
    hits = list(HIT.objects.filter(stage=stage).order_by("pk"))
    assert len(hits) == 6
    hit_add_assignments(hit=hits[0], count=1, reason="earlier", key="k:0")
    HIT.objects.filter(pk=hits[1].pk).update(status="completed", places_left=0)
    wanted = [
        PlacesWanted(hit_id=hits[0].pk, count=3, reason="again", key="k:0"),  # written before
        PlacesWanted(hit_id=hits[1].pk, count=2, reason="reopen", key="k:1"),
        PlacesWanted(hit_id=hits[1].pk, count=2, reason="twice", key="k:1"),  # twice here
        *(PlacesWanted(hit_id=h.pk, count=1, reason="more", key=f"k:{h.pk}") for h in hits[2:]),
    ]
    with django_assert_max_num_queries(12):
        locked = hits_add_assignments(wanted=wanted)

    fresh = {h.pk: h for h in HIT.objects.filter(stage=stage)}
    assert (fresh[hits[0].pk].max_assignments, fresh[hits[0].pk].places_left) == (2, 2)
    assert (fresh[hits[1].pk].max_assignments, fresh[hits[1].pk].places_left) == (3, 2)
    assert fresh[hits[1].pk].status == "published"
    for hit in hits[2:]:
        assert (fresh[hit.pk].max_assignments, fresh[hit.pk].places_left) == (2, 2)
    # What the caller gets back is the HITs as they now are.
    assert {pk: (h.max_assignments, h.places_left, h.status) for pk, h in locked.items()} == {
        pk: (h.max_assignments, h.places_left, h.status) for pk, h in fresh.items()
    }
    operations = ProviderOperation.objects.filter(kind="add_assignments")
    assert operations.count() == 1 + 1 + 4
    reopened = operations.get(idempotency_key="k:1")
    assert reopened.payload == {"hit_id": hits[1].pk, "count": 2, "reason": "reopen"}
    assert reopened.result == {"max_assignments": 3}
    assert reopened.completed_at is not None
    # Asked again: nothing changes.
    hits_add_assignments(wanted=wanted)
    assert {h.pk: h.max_assignments for h in HIT.objects.filter(stage=stage)} == {
        pk: h.max_assignments for pk, h in fresh.items()
    }


def test_a_key_written_meanwhile_is_not_added_again(make_stage, monkeypatch):
    """The bulk insert meets a key another transaction wrote after the check (a key not
    tied to these HITs' locks): the batch reads the keys again and adds the places of
    the keys it wrote only."""
    stage = make_stage(items=2)
    stage_publish(stage=stage)
    first, second = HIT.objects.filter(stage=stage).order_by("pk")
    real_check = lifecycle._keys_not_written
    checks = []

    def racing_check(**kwargs):
        new = real_check(**kwargs)  # read before the other side writes
        checks.append(sorted(key for _, key in new))
        if len(checks) == 1:
            ProviderOperation.objects.create(
                provider="local", kind="add_assignments", campaign=stage.campaign,
                idempotency_key="shared", payload={"hit_id": first.pk, "count": 5},
                state="done",
            )  # fmt: skip
        return new

    monkeypatch.setattr(lifecycle, "_keys_not_written", racing_check)
    hits_add_assignments(
        wanted=[
            PlacesWanted(hit_id=first.pk, count=2, reason="race", key="shared"),
            PlacesWanted(hit_id=second.pk, count=1, reason="mine", key="mine"),
        ]
    )
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.max_assignments == 1  # the other side's key: its places are not ours
    assert (second.max_assignments, second.places_left) == (2, 2)
    assert ProviderOperation.objects.get(idempotency_key="mine").result == {"max_assignments": 2}
    # The insert failed on the key written meanwhile, and the keys were read again.
    assert checks == [["mine", "shared"], ["mine"]]
