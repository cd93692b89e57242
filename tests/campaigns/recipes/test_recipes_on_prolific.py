"""Every recipe starts on Prolific: loaded for Prolific, its stages meet Prolific's rules
(the hourly minimum on every stage, quizzes and grading included; the countries resolved
through the filters catalogue), and going to pilot publishes studies whose bodies
Prolific's published schema accepts (the fake validates each against openapi.yml)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from decimal import Decimal

import pytest
from django.core.management import call_command

from campaigns.design.platform_rules import estimated_minutes
from campaigns.models import Campaign, CampaignState, OperationState, ProviderOperation
from campaigns.platforms.platform_rules import stage_platform_rules
from campaigns.platforms.publishing import campaign_start
from campaigns.recipes import RECIPES
from campaigns.recipes.services import campaign_create_with_recipe
from tests.campaigns.platforms.conftest import run_operations
from tests.campaigns.platforms.fake_prolific import FakeProlific

pytestmark = pytest.mark.django_db

MINIMUM = Decimal("6.00")  # GBP an hour


@pytest.fixture
def fake(settings) -> Iterator[FakeProlific]:
    with FakeProlific(token="recipe-token") as server:
        settings.PROLIFIC_API_TOKEN = "recipe-token"
        settings.PROLIFIC_API_URL = server.url
        settings.PROLIFIC_WORKSPACE_ID = "workspace-recipes"
        settings.PROLIFIC_BACKOFF_BASE = 0.01
        settings.SITE_URL = "https://qaportal.example.org"
        yield server


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_recipe_goes_to_pilot_on_prolific(requester, fake, name):
    campaign = campaign_create_with_recipe(
        owner=requester,
        name=f"{name} on Prolific",
        slug=f"{name}-prolific",
        provider="prolific",
        recipe=name,
        usd_rate=Decimal("0.80"),
    )
    assert campaign.currency == "GBP"
    for stage in campaign.stages.order_by("position"):
        rules = stage_platform_rules(stage=stage)
        assert rules["problems"] == [], (stage.name, rules["problems"])
        minutes = estimated_minutes(
            config=stage.config, assignment_duration=stage.assignment_duration
        )
        assert stage.reward * 60 >= MINIMUM * minutes, stage.name
        raised = stage.config.get("reward_raised")
        if raised is not None:  # the paper's amount was below the minimum: said so
            assert Decimal(raised["paper"]) < Decimal(raised["to"]) == stage.reward
    campaign = campaign_start(campaign=campaign, to_state=CampaignState.PILOT)
    assert campaign.state == CampaignState.PILOT
    run_operations()
    creates = fake.calls("POST", r"/api/v1/studies/$")
    assert creates, "no study was created"
    assert {c.status for c in creates} == {201}, [c.body for c in creates if c.status != 201]
    assert not [c for c in fake.state.calls if c.status == 400]
    assert not ProviderOperation.objects.exclude(state=OperationState.DONE).exists()
    for call in creates:
        body = call.body
        least = (
            2 + 2 * body["estimated_completion_time"] + 2 * body["estimated_completion_time"] ** 0.5
        )
        assert body["maximum_allowed_time"] >= least
        assert body["reward"] * 60 >= 600 * body["estimated_completion_time"]
    # Published: every study recruits.
    assert {s["status"] for s in fake.state.studies.values()} == {"ACTIVE"}


def test_load_recipe_for_prolific_says_what_was_raised(requester, fake):
    out = io.StringIO()
    call_command(
        "load_recipe",
        "whyqa",
        "--campaign",
        "why-prolific",
        "--owner",
        requester.username,
        "--provider",
        "prolific",
        "--no-sample",
        stdout=out,
    )
    summary = json.loads(out.getvalue())
    stages = {s["name"]: s for s in summary["stages"]}
    quiz = stages["Qualification quiz"]
    # Unpaid on MTurk (a Qualification test); Prolific pays every task: the minimum.
    assert quiz["reward_raised_from"] == "0.00"
    assert Decimal(quiz["reward"]) * 60 >= MINIMUM * quiz["estimated_minutes"]
    campaign = Campaign.objects.get(slug="why-prolific")
    assert all(not stage_platform_rules(stage=s)["problems"] for s in campaign.stages.all())
