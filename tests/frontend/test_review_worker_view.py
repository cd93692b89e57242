"""The review queue shows each answer as the worker's page showed it, read only: a
sentence selection ticks the chosen sentences in their article; nothing in it can be
submitted; what the worker wrote stays text."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from django.utils import timezone

from campaigns.design.services import campaign_create, stage_add
from campaigns.models import HIT, Assignment, Item, ItemSource
from campaigns.platforms.publishing import campaign_start
from tests.campaigns.tasktypes.test_whyqa import entry, sel_items
from tests.factories import WorkerFactory

pytestmark = pytest.mark.django_db


def test_sentence_selection_is_shown_ticked_in_its_article(requester, alice_client):
    campaign = campaign_create(owner=requester, name="Why", slug="why-review")
    stage = stage_add(campaign=campaign, name="Answer", task_type="sentence_selection_answer")
    items = sel_items()
    first = items[0]
    Item.objects.create(
        stage=stage,
        external_id=first["external_id"],
        data=first["data"],
        source=ItemSource.UPLOADED,
    )
    campaign_start(campaign=campaign, to_state="pilot")
    hit = HIT.objects.get(stage=stage)
    stored = Item.objects.get(stage=stage)
    now = timezone.now()
    Assignment.objects.create(
        hit=hit,
        worker=WorkerFactory.create(),
        provider="local",
        status="submitted",
        answers={
            "items": [
                {
                    **entry([{"external_id": stored.external_id}], 0, sentences=[3, 4]),
                    "comment": "<b>bold</b> claim",
                }
            ]
        },
        accepted_at=now,
        submitted_at=now,
    )

    html = alice_client.get(reverse("frontend:campaign-review", args=[campaign.slug])).content
    queue = html.decode()
    # The queue's row links its worker's view, fetched when opened (not rendered per row).
    assert '<div class="worker-view" inert>' not in queue
    assignment = Assignment.objects.get(hit=hit)
    url = reverse("frontend:review-as-worker", args=[campaign.slug, assignment.pk])
    assert f'data-src="{url}"' in queue
    page = alice_client.get(url).content.decode()

    view = page[page.index('<div class="worker-view" inert>') :]
    ticked = re.findall(r'<input[^>]*type="checkbox"[^>]*checked[^>]*>', view)
    assert len(ticked) == 2
    assert all("disabled" in t for t in ticked)
    assert str(first["data"]["sentences"][3]) in view
    assert "<b>bold</b>" not in page
    assert "<b>bold</b>" not in queue
    controls = re.findall(r"<(?:input|textarea)[^>]*>", view)
    assert controls
    assert all("disabled" in c for c in controls), controls
