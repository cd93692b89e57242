"""Issue 36, the worker's day (point 10) in Debian's chromium at 390 and 1280 px with
axe-core: a worker of one protocol arm who opens another arm's stage is told it is
another group's task (not "no access… open the invitation link"); every page has its
icon (no favicon 404)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from campaigns.design.services import campaign_create, stage_add
from campaigns.models import CampaignWorker, Item, ItemSource
from campaigns.platforms.publishing import campaign_start
from campaigns.work.invites import invite_create, invite_token
from tests.browser.a11y import assert_person_can_use
from tests.browser.pages import WIDTHS, screenshot, start
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _two_arms():
    owner = UserFactory.create()
    campaign = campaign_create(owner=owner, name="Two arms")
    stages = {}
    for arm in ("CROWD", "EXPERT"):
        stages[arm] = stage_add(
            campaign=campaign,
            name=f"{arm}: write",
            task_type="question_writing",
            config={"questions_per_hit": 1, "arm": arm},
        )
        Item.objects.create(
            stage=stages[arm],
            external_id=f"{arm}-cell",
            data={"topic": "rivers", "complexity_type": "comparative"},
            source=ItemSource.UPLOADED,
        )
    campaign_start(campaign=campaign, to_state="live")
    invite = invite_create(campaign=campaign, created_by=owner, expires_in=timedelta(days=1))
    return stages, reverse("worker:invite", kwargs={"token": invite_token(invite=invite)})


@pytest.mark.parametrize("width", WIDTHS.values())
def test_another_arms_stage_says_it_is_another_groups_task(page, width):
    stages, invite_path = _two_arms()
    page.set_viewport_size({"width": width, "height": 844})
    missing: list[str] = []
    page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)

    start(page, invite_path)
    CampaignWorker.objects.filter(campaign=stages["CROWD"].campaign).update(arm="CROWD")
    response = page.goto(reverse("worker:stage", kwargs={"stage_id": stages["EXPERT"].pk}))

    assert response is not None
    assert response.status == 403
    page.get_by_role("heading", name="This is another group's task").wait_for()
    text = page.locator("main").inner_text()
    assert "group CROWD" in text
    assert "invitation link the requester sent you in this browser" not in text
    assert_person_can_use(page, where=f"another arm's stage at {width} px")
    screenshot(page, "worker-other-arm")
    assert page.locator('link[rel="icon"]').count() == 1
    assert not [u for u in missing if "favicon" in u]
