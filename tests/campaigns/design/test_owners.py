"""Money settings are the owner's: a collaborator can design, publish and review, but not
lift the budget cap or the bonus ceiling, flip the sandbox flag, set credentials, change a
wage floor, or change the currency or the platform (nobody can after creation). Each
field by role, through the API and the pages."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import cast

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from campaigns.design.services import campaign_create, stage_add
from campaigns.models import Campaign, ProviderCredential, Stage
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

WAGE_FLOOR = [{"rule": "wage_floor", "hourly": "15.00"}]
TOKEN = "lab-prolific-token-0123456789-XYZ"


@pytest.fixture
def people(requester):
    carol = cast(User, UserFactory(username="carol"))
    staff = UserFactory(username="sam", is_staff=True)
    campaign = campaign_create(owner=requester, name="Money", slug="money")
    campaign.budget_cap = Decimal("100.00")
    campaign.bonus_max = Decimal("5.00")
    campaign.provider = "prolific"
    campaign.save(update_fields=["budget_cap", "bonus_max", "provider"])
    campaign.collaborators.add(carol)
    return {"owner": requester, "collaborator": carol, "staff": staff, "campaign": campaign}


def _api(user) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def _page(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def stage(people) -> Stage:
    return stage_add(
        campaign=people["campaign"],
        name="Write",
        task_type="question_writing",
        config={"questions_per_hit": 5},
    )


MONEY_CHANGES = [
    ("budget_cap", "1000.00"),
    ("bonus_max", "500.00"),
    ("sandbox", False),
]


@pytest.mark.parametrize(("field", "value"), MONEY_CHANGES)
def test_a_collaborator_cannot_change_a_money_setting_through_the_api(people, field, value):
    before = Campaign.objects.values(field).get(pk=people["campaign"].pk)
    response = _api(people["collaborator"]).patch(
        "/api/v1/campaigns/money/", {field: value}, format="json"
    )
    assert response.status_code == 403, response.content
    assert "owner" in response.json()["detail"]
    assert Campaign.objects.values(field).get(pk=people["campaign"].pk) == before


@pytest.mark.parametrize("role", ["owner", "staff"])
@pytest.mark.parametrize(("field", "value"), MONEY_CHANGES)
def test_the_owner_and_staff_change_money_settings(people, role, field, value):
    response = _api(people[role]).patch("/api/v1/campaigns/money/", {field: value}, format="json")
    assert response.status_code == 200, response.content
    assert str(response.json()[field]) == str(value)


def test_a_collaborator_still_edits_the_rest(people):
    response = _api(people["collaborator"]).patch(
        "/api/v1/campaigns/money/", {"name": "Renamed", "description": "d"}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["name"] == "Renamed"


@pytest.mark.parametrize("field", ["currency", "provider"])
@pytest.mark.parametrize("role", ["owner", "collaborator"])
def test_currency_and_platform_never_change_after_creation(people, role, field):
    response = _api(people[role]).patch(
        "/api/v1/campaigns/money/",
        {field: "GBP" if field == "currency" else "mturk"},
        format="json",
    )
    assert response.status_code == 400
    campaign = Campaign.objects.get(pk=people["campaign"].pk)
    assert (campaign.currency, campaign.provider) == ("USD", "prolific")


@pytest.mark.parametrize(("role", "expected"), [("owner", 200), ("collaborator", 403)])
def test_credentials_through_the_api_by_role(people, role, expected):
    response = _api(people[role]).put(
        "/api/v1/campaigns/money/credentials/", {"api_token": TOKEN}, format="json"
    )
    assert response.status_code == expected, response.content
    assert ProviderCredential.objects.exists() == (expected == 200)


@pytest.mark.parametrize(("role", "expected"), [("owner", 200), ("collaborator", 403)])
def test_the_wage_floor_through_the_api_by_role(people, stage, role, expected):
    client = _api(people[role])
    response = client.patch(
        f"/api/v1/stages/{stage.pk}/", {"bonus_rules": WAGE_FLOOR}, format="json"
    )
    assert response.status_code == expected, response.content
    stage.refresh_from_db()
    assert stage.bonus_rules == (WAGE_FLOOR if expected == 200 else [])
    # A new stage with a wage floor is the owner's too.
    added = client.post(
        "/api/v1/campaigns/money/stages/",
        {
            "name": "Write more",
            "task_type": "question_writing",
            "config": {"questions_per_hit": 5},
            "bonus_rules": WAGE_FLOOR,
        },
        format="json",
    )
    assert added.status_code == (201 if expected == 200 else 403), added.content


def test_a_collaborator_cannot_remove_the_owners_wage_floor(people, stage):
    Stage.objects.filter(pk=stage.pk).update(bonus_rules=WAGE_FLOOR)
    response = _api(people["collaborator"]).patch(
        f"/api/v1/stages/{stage.pk}/", {"bonus_rules": []}, format="json"
    )
    assert response.status_code == 403
    stage.refresh_from_db()
    assert stage.bonus_rules == WAGE_FLOOR
    # Other stage fields stay the collaborator's to edit.
    ok = _api(people["collaborator"]).patch(
        f"/api/v1/stages/{stage.pk}/", {"instructions": "Be brief."}, format="json"
    )
    assert ok.status_code == 200


def _stage_form(stage: Stage, bonus_rules: list) -> dict[str, str]:
    return {
        "name": stage.name,
        "instructions": stage.instructions,
        "reward": str(stage.reward),
        "assignments_per_hit": str(stage.assignments_per_hit),
        "items_per_hit": str(stage.items_per_hit),
        "assignment_minutes": "60",
        "lifetime_hours": "168",
        "gold_ratio": "0",
        "qualification_requirements": "[]",
        "review_rules": "[]",
        "bonus_rules": json.dumps(bonus_rules),
        "escalation_rule": "{}",
        "handoff": "{}",
        "next_stage": "",
        "config_json": json.dumps(stage.config, indent=2, sort_keys=True),
        "config_json_original": json.dumps(stage.config, indent=2, sort_keys=True),
        "cfg__questions_per_hit": str(stage.config.get("questions_per_hit", "")),
    }


@pytest.mark.parametrize(("role", "expected"), [("owner", 302), ("collaborator", 403)])
def test_the_wage_floor_on_the_stage_page_by_role(people, stage, role, expected):
    response = _page(people[role]).post(
        f"/campaigns/money/stages/{stage.pk}/edit/", _stage_form(stage, WAGE_FLOOR)
    )
    assert response.status_code == expected
    stage.refresh_from_db()
    assert stage.bonus_rules == (WAGE_FLOOR if expected == 302 else [])


@pytest.mark.parametrize(("role", "expected"), [("owner", 302), ("collaborator", 403)])
def test_credentials_on_the_workforce_page_by_role(people, role, expected):
    response = _page(people[role]).post(
        "/campaigns/money/workforce/credentials/", {"api_token": TOKEN}
    )
    assert response.status_code == expected
    assert ProviderCredential.objects.exists() == (expected == 302)
