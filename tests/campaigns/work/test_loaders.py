"""The hand-written loaders of the worker pages give what the ORM gives."""

from __future__ import annotations

import pytest
from django.db.models.signals import post_init
from django.forms.models import model_to_dict

from campaigns.models import Assignment, Campaign
from campaigns.work.allocation import assignment_accept
from campaigns.work.publishing import stage_publish
from campaigns.work.selectors.access import RequestWorkers
from campaigns.work.selectors.loading import (
    assignment_load,
    hit_items,
    model_from_row,
    stage_load,
)
from tests.campaigns.work.conftest import add_items

pytestmark = pytest.mark.django_db


def _fields(obj) -> dict:
    return {f.attname: getattr(obj, f.attname) for f in obj._meta.concrete_fields}


def test_assignment_load_matches_the_orm(make_stage, invited):
    stage = make_stage(config={"anonymous": False}, review_rules=[{"rule": "none"}])
    add_items(stage, ["é and ünïcode", "two"], cells=["a", "b"])
    stage_publish(stage=stage)
    worker = invited(stage.campaign)
    accepted = assignment_accept(stage=stage, worker=worker)

    loaded = assignment_load(
        assignment_id=accepted.pk, workers=RequestWorkers(worker_ids=(worker.pk,))
    )
    orm = Assignment.objects.select_related("hit__stage__campaign").get(pk=accepted.pk)
    assert _fields(loaded) == _fields(orm)
    assert _fields(loaded.hit) == _fields(orm.hit)
    assert _fields(loaded.hit.stage) == _fields(orm.hit.stage)
    assert _fields(loaded.hit.stage.campaign) == _fields(orm.hit.stage.campaign)
    assert model_to_dict(stage_load(stage_id=stage.pk)) == model_to_dict(orm.hit.stage)
    assert hit_items(hit=orm.hit)[0]["data"] == {"text": "é and ünïcode", "cell": "a"}
    for instance in (loaded, loaded.hit, loaded.hit.stage, loaded.hit.stage.campaign):
        assert instance._state.adding is False
        assert instance._state.db == "default"
    assert loaded == orm
    assert loaded.hit == orm.hit


def test_model_from_row_calls_init_while_someone_listens(make_stage):
    """Without ``Model.__init__`` only while nothing listens to ``pre_init`` / ``post_init``."""
    stage = make_stage()
    campaign = Campaign.objects.get(pk=stage.campaign_id)
    row = [getattr(campaign, f.attname) for f in Campaign._meta.concrete_fields]
    seen = []

    def listener(sender, instance, **kwargs):
        seen.append(instance)

    post_init.connect(listener, sender=Campaign)
    try:
        made = model_from_row(Campaign, row)
    finally:
        post_init.disconnect(listener, sender=Campaign)
    assert seen == [made]
    plain = model_from_row(Campaign, row)
    assert seen == [made]
    assert _fields(plain) == _fields(made) == _fields(campaign)


def test_assignment_load_checks_the_holder(make_stage, invited, user_factory):
    stage = make_stage(items=1)
    stage_publish(stage=stage)
    worker = invited(stage.campaign)
    accepted = assignment_accept(stage=stage, worker=worker)
    with pytest.raises(Assignment.DoesNotExist):
        assignment_load(assignment_id=accepted.pk, workers=RequestWorkers(worker_ids=(0,)))
    with pytest.raises(Assignment.DoesNotExist):
        assignment_load(
            assignment_id=accepted.pk, workers=RequestWorkers(user_id=user_factory().pk)
        )
