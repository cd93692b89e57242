"""Toy Crowd joins qaportal for a test: one registry line, its settings, its pages."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import clear_url_caches

from campaigns.design.platform import platform_register, platform_unregister
from campaigns.design.services import campaign_create, stage_add
from campaigns.models import HIT, Assignment, Item, ItemSource
from tests.campaigns.platforms.conftest import FORM
from tests.campaigns.platforms.toy_platform import service
from tests.campaigns.platforms.toy_platform.platform import ToyPlatform

WEBHOOK_SECRET = "toy-hook-secret"


def _site_urls_reload() -> None:
    """``qaportal.urls`` again: it mounts the pages of the platforms registered now."""
    importlib.reload(importlib.import_module("qaportal.urls"))
    clear_url_caches()


@pytest.fixture
def toy(settings) -> Iterator[service.ToyCrowd]:
    """Toy Crowd registered (the registry line a real platform has in
    ``campaigns/platforms/registry.py``), empty, with its settings; forgotten after."""
    crowd = service.crowd_reset()
    settings.TOY_API_KEY = service.API_KEY
    settings.TOY_WEBHOOK_SECRET = WEBHOOK_SECRET
    settings.ROOT_URLCONF = "qaportal.urls"
    platform_register(ToyPlatform())
    _site_urls_reload()
    try:
        yield crowd
    finally:
        platform_unregister("toy")
        _site_urls_reload()


def toy_campaign(owner, *, items: int = 2):
    campaign = campaign_create(owner=owner, name="On Toy Crowd", slug="toy-qa", provider="toy")
    stage = stage_add(
        campaign=campaign,
        name="Write questions",
        task_type="question_writing",
        config={"questions_per_hit": 1, "estimated_minutes": 5},
    )
    stage.reward = Decimal("1.00")
    stage.assignments_per_hit = 2
    stage.save(update_fields=["reward", "assignments_per_hit"])
    for n in range(items):
        Item.objects.create(
            stage=stage,
            external_id=f"cell-{n}",
            data={"topic": f"topic {n}", "complexity_type": "comparative"},
            source=ItemSource.UPLOADED,
        )
    return campaign, stage


def work_through_toy_crowd(crowd, hit: HIT, worker_id: str) -> Assignment:
    """A Toy Crowd worker takes a place, works on qaportal's page, and submits."""
    toy_assignment = crowd.accept(hit_id=hit.provider_hit_id, worker_id=worker_id)
    browser = Client()
    entry = browser.get(
        "/work/toy/",
        {"hitId": hit.provider_hit_id, "assignmentId": toy_assignment, "workerId": worker_id},
    )
    assert entry.status_code == 302, entry.content
    page = browser.get(entry["Location"])
    assert page.status_code == 200
    done = browser.post(entry["Location"], FORM)
    assert done.status_code == 302, done.content
    assert done["Location"] == "https://toy-crowd.example/done"
    crowd.submit(assignment_id=toy_assignment)
    return Assignment.objects.get(provider="toy", provider_assignment_id=toy_assignment)
