"""The campaign page's charts (issue 36, point 7): the work-time histogram names every
bucket on its x axis, counts in whole numbers, and titles both axes."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from tests.helpers import local_pipeline, submitted_assignment

pytestmark = pytest.mark.django_db


def test_work_time_histogram_has_readable_axes(requester, alice_client):
    campaign, writing, _ = local_pipeline(requester, slug="charts")
    submitted_assignment(writing)

    svg = alice_client.get(
        reverse("frontend:chart-work-time", kwargs={"slug": campaign.slug})
    ).content.decode()

    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    assert "Work time of one assignment" in texts
    assert "Assignments" in texts
    buckets = [t for t in texts if " to " in t or t.startswith("≥")]
    assert len(buckets) >= 4
    assert buckets[0].startswith("0 to ")
    assert not [t for t in texts if re.fullmatch(r"\d+\.\d+", t)]  # no 0.2 assignments
    # Readable when the 720 px image shrinks to a phone: axis text at 15 px, not 10.
    assert re.search(r"\.axis text\{[^}]*font-size:15px", svg)
