"""``campaign_stage_or_400``: the ``stage`` filter of the review, entity-link review and
invite-link endpoints."""

from __future__ import annotations

import pytest
from rest_framework import serializers

from campaigns.api.common import campaign_stage_or_400
from tests.factories import StageFactory

pytestmark = pytest.mark.django_db


def test_no_stage_given_is_none():
    stage = StageFactory.create()
    assert campaign_stage_or_400(campaign=stage.campaign, stage_id=None) is None


def test_a_stage_of_the_campaign():
    stage = StageFactory.create()
    assert campaign_stage_or_400(campaign=stage.campaign, stage_id=stage.pk) == stage


def test_a_stage_of_another_campaign_is_a_400_on_stage():
    stage, other = StageFactory.create(), StageFactory.create()
    with pytest.raises(serializers.ValidationError) as refused:
        campaign_stage_or_400(campaign=stage.campaign, stage_id=other.pk)
    assert refused.value.detail == {"stage": ["No stage with this id in this campaign."]}
