"""The campaign's progress: counts by status, share done, the estimate from the recent
submission rate, the API, the live section of the campaign page and its escaping."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from campaigns.insights.progress import campaign_progress
from campaigns.models import Assignment, Item, ItemSource
from campaigns.work.decisions import assignment_approve
from tests.helpers import local_pipeline, submitted_assignment

pytestmark = pytest.mark.django_db

MARKUP = "<script>alert(1)</script>"


@pytest.fixture
def running(requester):
    """Two writing HITs of one place each; one submitted and approved, one open."""
    campaign, writing, linking = local_pipeline(requester, slug="progress")
    done = submitted_assignment(writing)
    assignment_approve(assignment=done, decided_by=requester, source="requester")
    return campaign, writing, linking, done


def test_counts_share_done_and_estimate(running):
    campaign, writing, linking, _done = running
    Item.objects.create(stage=linking, external_id="qa-1", data={}, source=ItemSource.UPLOADED)
    now = timezone.now()

    progress = campaign_progress(campaign=campaign, now=now)

    first, second = progress.stages
    assert (first.stage_id, second.stage_id) == (writing.pk, linking.pk)
    assert first.assignments == {"approved": 1}
    assert first.hits.get("published") == 2
    assert (first.done, first.remaining, first.percent) == (1, 1, 50.0)
    # One submission within the hour: 1 per hour, so the last open place takes an hour.
    assert first.recent == 1
    assert first.rate_per_hour == 1.0
    assert first.eta_seconds == 3600
    assert first.eta_at == now + timedelta(hours=1)
    # A pending linking item, not in a HIT yet: the places its HIT will open are to come.
    per_hit = linking.assignments_per_hit
    assert second.items == {"pending": 1}
    assert (second.done, second.remaining, second.eta_at) == (0, per_hit, None)
    assert progress.eta_at is None  # linking has work and no rate yet
    assert (progress.done, progress.remaining) == (1, 1 + per_hit)


def test_one_definition_per_number(running, alice_client):
    """Issue 36, point 7: an open HIT is one a worker could still take (a full one is
    not); the campaign's missing estimate names the stage without a rate; the numbers
    on the page are the API's."""
    campaign, _writing, linking, _done = running
    Item.objects.create(stage=linking, external_id="qa-1", data={}, source=ItemSource.UPLOADED)

    progress = campaign_progress(campaign=campaign)
    page = alice_client.get(reverse("frontend:campaign-progress", kwargs={"slug": campaign.slug}))
    api = alice_client.get(f"/api/v1/campaigns/{campaign.slug}/progress/").json()

    first = progress.stages[0]
    assert (first.hits.get("published"), first.hits_open, first.items_done) == (2, 1, 1)
    assert progress.without_estimate == ["Link answers"]
    html = page.content.decode()
    assert '<td class="num hits-open">1</td>' in html
    assert "no estimate: “Link answers” has had no submission in the last hour" in html
    assert (api["stages"][0]["hits_open"], api["stages"][0]["items_done"]) == (1, 1)


def test_a_completed_campaign_has_nothing_to_go_and_no_estimate(running, alice_client):
    campaign, _writing, _linking, _done = running
    from campaigns.platforms.publishing import campaign_start

    campaign_start(campaign=campaign, to_state="completed")
    html = alice_client.get(
        reverse("frontend:campaign-progress", kwargs={"slug": campaign.slug})
    ).content.decode()

    assert "to go" not in html
    assert "estimate" not in html.split("progress-legend")[0]
    assert "1 done; completed" in html


def test_old_submissions_give_no_rate(running):
    campaign, _writing, _linking, done = running
    later = done.submitted_at + timedelta(hours=2)

    first = campaign_progress(campaign=campaign, now=later).stages[0]

    assert (first.recent, first.rate_per_hour, first.eta_at) == (0, None, None)


def test_query_count_does_not_grow_with_work(running, requester):
    campaign, writing, *_ = running
    cache.clear()  # the items-done count computed, not read from the cache
    with CaptureQueriesContext(connection) as before:
        campaign_progress(campaign=campaign)
    submitted_assignment(writing, question="Which lake is deeper?")
    with CaptureQueriesContext(connection) as after:
        progress = campaign_progress(campaign=campaign)
    with CaptureQueriesContext(connection) as again:
        cached = campaign_progress(campaign=campaign)
    assert len(again) == 5  # nothing changed: items done from the cache
    assert cached.stages[0].items_done == progress.stages[0].items_done
    # Stages, items, HITs, the assignment counters (with their versions, the items-done
    # cache key), recent submissions, items done (the cache missed: work changed).
    assert len(after) == len(before) == 6
    assert progress.stages[0].done == 2
    assert progress.stages[0].items_done == progress.stages[0].items_total
    assert progress.stages[0].remaining == 0
    assert progress.stages[0].eta_seconds == 0


def test_api_progress(running, token_client):
    campaign, writing, *_ = running

    body = token_client.get(f"/api/v1/campaigns/{campaign.slug}/progress/").json()

    assert body["done"] == 1
    assert body["remaining"] == 1
    stage = body["stages"][0]
    assert stage["stage_id"] == writing.pk
    assert stage["assignments"] == {"approved": 1}
    assert stage["percent"] == 50.0
    assert stage["eta_seconds"] == 3600


def test_page_shows_bars_and_polls_while_live(running, alice_client):
    campaign, writing, *_ = running
    writing.name = f"Write {MARKUP}"
    writing.save(update_fields=["name"])
    url = reverse("frontend:campaign-progress", kwargs={"slug": campaign.slug})

    html = alice_client.get(reverse("frontend:campaign-detail", args=[campaign.slug])).content
    page = html.decode()
    assert f'data-live-url="{url}"' in page
    assert page.count("frontend/live.js") == 1
    title = page[page.index("<title>") : page.index("</title>")]
    assert "script" not in title  # the script tag once sat in the title block
    assert '<progress value="1" max="2"' in page
    assert MARKUP not in page

    fragment = alice_client.get(url)
    assert fragment.status_code == 200
    text = fragment.content.decode()
    assert "<html" not in text
    assert "Write &lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert '<span class="stage-percent">50.0 %</span>' in text


def test_fragment_follows_new_work(running, alice_client):
    campaign, writing, *_ = running
    url = reverse("frontend:campaign-progress", kwargs={"slug": campaign.slug})
    submitted_assignment(writing, question="Which lake is deeper?")
    text = alice_client.get(url).content.decode()
    assert '<span class="stage-percent">100.0 %</span>' in text
    assert Assignment.objects.filter(hit__stage=writing).count() == 2


def test_draft_page_does_not_poll(requester, alice_client):
    from campaigns.design.services import campaign_create

    campaign = campaign_create(owner=requester, name="Quiet", slug="quiet")
    page = alice_client.get(reverse("frontend:campaign-detail", args=[campaign.slug])).content
    progress_url = reverse("frontend:campaign-progress", kwargs={"slug": campaign.slug})
    assert f'data-live-url="{progress_url}"'.encode() not in page
    assert b'data-live-seconds="0"' in page  # quality loads once, never again
    assert b"0 done, 0 to go" in page
