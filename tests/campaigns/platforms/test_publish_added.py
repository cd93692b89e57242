"""Items added to a pilot or live stage are published (``stage_publish_added``, on
``items_added``), unless the stage keeps them for its Publish (``stage_publish_waiting``)
(issue 36, point 2)."""

from __future__ import annotations

import pytest

from campaigns.design.items import items_upload
from campaigns.design.services import stage_update
from campaigns.models import HIT, CampaignState, Item, ItemStatus
from campaigns.platforms.publishing import campaign_start, stage_publish_waiting
from qaportal.errors import DomainError
from tests.factories import UserFactory
from tests.helpers import local_pipeline

pytestmark = pytest.mark.django_db

ROWS = b"external_id,topic,complexity_type\nlate-1,lakes,count\nlate-2,bridges,count\n"


@pytest.fixture
def pilot():
    return local_pipeline(UserFactory.create())


def _waiting(stage) -> int:
    return Item.objects.filter(stage=stage, status=ItemStatus.PENDING).count()


def test_items_uploaded_to_a_running_stage_get_hits_at_once(pilot):
    _, writing, _ = pilot
    before = HIT.objects.filter(stage=writing).count()

    items_upload(stage=writing, content=ROWS, filename="late.csv")

    assert _waiting(writing) == 0
    assert HIT.objects.filter(stage=writing).count() == before + 2


def test_a_stage_set_to_manual_keeps_them_for_its_publish(pilot):
    _, writing, _ = pilot
    writing = stage_update(stage=writing, publish_added=False)
    before = HIT.objects.filter(stage=writing).count()

    items_upload(stage=writing, content=ROWS, filename="late.csv")

    assert _waiting(writing) == 2
    assert HIT.objects.filter(stage=writing).count() == before
    assert stage_publish_waiting(stage=writing) == 2
    assert _waiting(writing) == 0


def test_draft_and_paused_campaigns_publish_nothing_until_they_run(pilot):
    campaign, writing, _ = pilot
    campaign = campaign_start(campaign=campaign, to_state=CampaignState.PAUSED)
    writing.refresh_from_db()

    items_upload(stage=writing, content=ROWS, filename="late.csv")

    assert _waiting(writing) == 2
    with pytest.raises(DomainError, match="pilot or live"):
        stage_publish_waiting(stage=writing)
    campaign_start(campaign=campaign, to_state=CampaignState.LIVE)
    assert _waiting(writing) == 0
