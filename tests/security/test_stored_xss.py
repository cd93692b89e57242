"""Stored XSS: what a worker wrote, what a requester typed and what an upload carried
shows as text on every page. Markup goes into a submitted answer, an item, a stage's
name and instructions, a campaign's description and a qualification's name; then every
page and API route the owner can open is fetched and none contains the markup raw."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import get_resolver
from rest_framework.test import APIClient

from campaigns.models import Item, Job, ModelEndpoint, QualificationType
from linking.models import GeneratedQuestion
from tests.helpers import local_pipeline, submitted_assignment
from tests.security.test_authorization_matrix import (
    PUBLIC,
    WORKER_PAGES,
    _fill,
    _routes,
)

pytestmark = pytest.mark.django_db

MARKUP = '<img src=x onerror="alert(document.domain)">'


def test_markup_is_text_on_every_page(requester):
    campaign, writing, _ = local_pipeline(requester, slug="xss")
    campaign.description = f"About {MARKUP}"
    campaign.name = f"Campaign {MARKUP}"
    campaign.save(update_fields=["description", "name"])
    writing.name = f"Write {MARKUP}"
    writing.instructions = f"Do {MARKUP}"
    writing.save(update_fields=["name", "instructions"])
    item = Item.objects.filter(stage=writing).order_by("pk").first()
    assert item is not None
    item.data = {**item.data, "topic": f"rivers {MARKUP}"}
    item.save(update_fields=["data"])
    work = submitted_assignment(writing, question=f"Which river, {MARKUP}, is longer?")
    QualificationType.objects.create(owner=requester, name=f"Quiz {MARKUP}", kind="manual")
    generated = GeneratedQuestion.objects.create(
        campaign=campaign,
        query={},
        query_key="k",
        sparql=f"SELECT {MARKUP}",
        canonical_question=f"Who is {MARKUP}?",
        answer_labels=[MARKUP],
    )
    item = Item.objects.get(hits=work.hit_id)
    values = {
        "slug": campaign.slug,
        "stage_id": writing.pk,
        "fmt": "csv",
        "item_id": item.pk,
        "assignment_id": work.pk,
        "hit_id": work.hit_id,
        "invite_id": 0,
        "grant_id": 0,
        "pseudonym": work.worker.pseudonym,
        "username": "nobody",
        "export_format": "csv",
        "name": "jsonl",
        "token": "x",
        "question_id": generated.pk,
        "try_number": 1,
        # A failed upload job: its page shows the file name and the error as text.
        "job_id": Job.objects.create(
            kind="upload",
            campaign=campaign,
            created_by=requester,
            status="failed",
            input_filename=MARKUP,
            error=MARKUP,
            errors=[{"row": 2, "field": MARKUP, "message": MARKUP}],
        ).pk,
    }
    values["endpoint_id"] = ModelEndpoint.objects.create(
        owner=requester, name=f"Model {MARKUP}", kind="baseline_bm25", model=MARKUP
    ).pk
    page = Client()
    page.force_login(requester)
    api = APIClient()
    api.force_authenticate(requester)
    checked = 0
    for route, name, _ in _routes(get_resolver().url_patterns):
        if name in PUBLIC | WORKER_PAGES or route.startswith("api/"):
            continue  # the API answers JSON, which a browser does not render as HTML
        url = _fill(route, values)
        response = page.get(url)
        if response.status_code != 200 or "html" not in response.get("Content-Type", ""):
            continue
        body = response.getvalue()  # streamed or not
        assert MARKUP.encode() not in body, url
        checked += 1
    # The pages that show what was written: campaign, review, item history, quality...
    assert checked >= 8
    for url in (
        f"/api/v1/campaigns/{campaign.slug}/",
        f"/api/v1/campaigns/{campaign.slug}/assignments/",
    ):
        assert api.get(url)["Content-Type"].startswith("application/json")
