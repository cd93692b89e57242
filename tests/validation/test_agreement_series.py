"""Agreement over time: alpha and percent agreement over the answers submitted up to
each point, the last point equal to the stage's agreement now; the API and the chart
image on the campaign page."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from campaigns.models import Campaign
from tests.factories import UserFactory
from tests.validation.db_helpers import hits, make_stage, submit, worker
from validation.selectors import stage_agreement, stage_agreement_series

pytestmark = pytest.mark.django_db


@pytest.fixture
def stage():
    """Two items, three annotators each: item 1 agreed early, item 2 split later."""
    stage = make_stage(items=2)
    h1, h2 = hits(stage)
    start = timezone.now() - timedelta(days=2)
    for n, who in enumerate(("a", "b", "c")):
        submit(h1, worker(who), {"choice": 0}, at=start + timedelta(hours=n))
    for n, (who, choice) in enumerate((("a", 1), ("b", 2), ("c", 1))):
        submit(h2, worker(who), {"choice": choice}, at=start + timedelta(days=1, hours=n))
    return stage


def test_points_follow_the_submissions_and_end_at_now(stage):
    series = stage_agreement_series(stage=stage, points=2)

    assert len(series) == 2
    early, now = series
    assert early.items == 1
    assert early.percent_agreement == 1.0
    assert early.at < now.at
    overall = stage_agreement(stage=stage)
    assert now.alpha == pytest.approx(overall.alpha)
    assert now.percent_agreement == pytest.approx(overall.percent_agreement)
    assert now.percent_agreement is not None
    assert now.percent_agreement < 1.0
    assert now.items == 2


def test_no_categorical_answers_no_series():
    stage = make_stage(items=1)
    assert stage_agreement_series(stage=stage) == []


def test_api_and_chart(stage):
    owner = Campaign.objects.get(pk=stage.campaign_id).owner
    api = APIClient()
    api.force_authenticate(owner)
    body = api.get(f"/api/v1/stages/{stage.pk}/agreement-series/?points=3").json()
    assert [p["items"] for p in body][-1] == 2
    assert api.get(f"/api/v1/stages/{stage.pk}/agreement-series/?points=0").status_code == 400

    page = Client()
    page.force_login(owner)
    slug = stage.campaign.slug
    chart = page.get(
        reverse("frontend:stage-agreement-chart", kwargs={"slug": slug, "stage_id": stage.pk})
    )
    assert chart.status_code == 200
    assert chart["Content-Type"] == "image/svg+xml"
    assert b"<svg" in chart.content
    assert b"Krippendorff" in chart.content
    quality = page.get(reverse("frontend:campaign-quality", kwargs={"slug": slug})).content
    assert b"agreement.svg" in quality
    stranger = Client()
    stranger.force_login(UserFactory.create(username="stranger"))
    url = reverse("frontend:stage-agreement-chart", kwargs={"slug": slug, "stage_id": stage.pk})
    assert stranger.get(url).status_code == 404
