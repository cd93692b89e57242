"""Mintaka §4: every crowd task (elicitation, answer and question linking) had US
workers with a 98 % approval rate and 5,000 approved tasks. The recipe puts them on
every paid stage; on the local workforce, which no platform checks, the requester is
told they are not enforced (stage page and API)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from campaigns.design.services import campaign_create
from campaigns.recipes import RECIPES
from campaigns.recipes.services import recipe_apply

pytestmark = pytest.mark.django_db

PAPER = [
    {"kind": "approval_rate", "min": 98},
    {"kind": "approved_count", "min": 5000},
    {"kind": "locale", "countries": ["US"]},
]


def test_every_paid_stage_has_the_papers_qualifications():
    paid = [s for s in RECIPES["mintaka"].stages if s.reward > 0]
    assert [s.name for s in paid] == [
        "Write questions", "Link answer entities", "Link question entities"
    ]  # fmt: skip
    for spec in paid:
        assert spec.qualification_requirements == PAPER, spec.name


def test_local_workforce_shows_platform_requirements_as_not_enforced(
    requester, token_client, client
):
    local = campaign_create(owner=requester, name="Local", slug="mintaka-local")
    recipe_apply(campaign=local, name="mintaka", sample=False)
    stages = token_client.get(f"/api/v1/campaigns/{local.slug}/stages/").json()
    stages = stages["results"] if isinstance(stages, dict) else stages
    by_name = {s["name"]: s for s in stages}
    unenforced = by_name["Link answer entities"]["unenforced_requirements"]
    assert [u["kind"] for u in unenforced] == ["approval_rate", "approved_count", "locale"]
    assert unenforced[0]["text"] == "approval rate ≥ 98 %"
    # A qaportal qualification (the translators' grant) is enforced everywhere.
    assert by_name["Translate questions"]["unenforced_requirements"] == []

    client.force_login(requester)
    page = client.get(reverse("frontend:campaign-detail", kwargs={"slug": local.slug}))
    assert page.status_code == 200
    text = page.content.decode()
    assert text.count("Not enforced on this workforce") == 3
    assert "at least 5,000 approved tasks" in text

    mturk = campaign_create(owner=requester, name="MTurk", slug="mintaka-mturk", provider="mturk")
    recipe_apply(campaign=mturk, name="mintaka", sample=False)
    stages = token_client.get(f"/api/v1/campaigns/{mturk.slug}/stages/").json()
    stages = stages["results"] if isinstance(stages, dict) else stages
    assert all(s["unenforced_requirements"] == [] for s in stages)
