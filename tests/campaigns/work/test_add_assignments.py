"""Escalation and extension add places to a HIT exactly once per key."""

from __future__ import annotations

import pytest

from campaigns.models import HIT, ProviderOperation
from campaigns.work.allocation import assignment_accept
from campaigns.work.lifecycle import hit_add_assignments
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
