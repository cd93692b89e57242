"""A local linking campaign and workers who join it through the real worker pages."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

from campaigns.design.items import items_upload
from campaigns.design.services import campaign_create, stage_add
from campaigns.models import Assignment, Campaign, Stage
from campaigns.work.invites import invite_create, invite_token
from tests.factories import UserFactory

ESCALATION = {"rule": "entity_agreement", "annotators": 2, "max": 3, "seen_annotators": 1}
BONUS = [{"rule": "per_agreed_entity", "amount": "0.05", "beyond": 1}]


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    """Suggestion lists and rate counters live in the shared cache (this suite's own
    Redis database): each test starts without them."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def linking_stage() -> Callable[..., Stage]:
    """A local draft campaign with one linking stage holding ``items`` (dicts with
    ``external_id`` and the item data)."""

    def make(
        *,
        items: list[dict[str, Any]],
        slug: str = "link-agree",
        task_type: str = "answer_entity_linking",
        assignments_per_hit: int = 2,
        escalation_rule: dict[str, Any] | None = None,
        bonus_rules: list[dict[str, Any]] | None = None,
    ) -> Stage:
        owner = UserFactory.create(username=f"owner-{slug}")
        campaign = campaign_create(owner=owner, name=f"Linking {slug}", slug=slug)
        stage = stage_add(
            campaign=campaign,
            name="Link",
            task_type=task_type,
            assignments_per_hit=assignments_per_hit,
            escalation_rule=ESCALATION if escalation_rule is None else escalation_rule,
            bonus_rules=BONUS if bonus_rules is None else bonus_rules,
        )
        upload(stage, items)
        return stage

    return make


def upload(stage: Stage, items: list[dict[str, Any]]) -> None:
    result = items_upload(
        stage=stage,
        content="\n".join(json.dumps(i) for i in items).encode(),
        filename="items.jsonl",
    )
    assert result.created == len(items)


def joined_client(campaign: Campaign) -> Client:
    """A browser that joined ``campaign`` through an invite link (a new worker)."""
    client = Client()
    link = invite_create(campaign=campaign, created_by=campaign.owner, expires_in=timedelta(days=1))
    response = client.post(reverse("worker:invite", kwargs={"token": invite_token(invite=link)}))
    assert response.status_code == 302
    return client


def accept(client: Client, stage: Stage) -> Assignment:
    response = client.post(reverse("worker:accept", kwargs={"stage_id": stage.pk}))
    assert response.status_code == 302, response
    assignment_id = int(response["Location"].rstrip("/").rsplit("/", 1)[1])
    return Assignment.objects.get(pk=assignment_id)


def link_form(spans: list[tuple[int, int, str, str | None]]) -> dict[str, str]:
    """The POST of one-item linking page: rows (start, end, text, qid or None for
    "not in Wikidata")."""
    form: dict[str, str] = {}
    for j, (start, end, text, qid) in enumerate(spans):
        row = f"items/0/spans/{j}"
        form.update({f"{row}/start": str(start), f"{row}/end": str(end), f"{row}/text": text})
        if qid is None:
            form[f"{row}/none"] = "1"
        else:
            form[f"{row}/qid"] = qid
    return form


def work_once(
    campaign: Campaign, stage: Stage, spans: list[tuple[int, int, str, str | None]]
) -> Assignment:
    """A new worker joins, accepts the next HIT and submits ``spans`` through the page."""
    client = joined_client(campaign)
    assignment = accept(client, stage)
    response = client.post(
        reverse("worker:assignment", kwargs={"assignment_id": assignment.pk}), link_form(spans)
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assignment.refresh_from_db()
    return assignment
