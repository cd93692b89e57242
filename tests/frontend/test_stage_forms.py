"""Issue 34: the stage edit page's country picker writes the platform-neutral country
requirement (``{"kind": "country", "countries": [...]}``), keeps the rest of the
requirements and the JSON, and refuses what Prolific would refuse."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from campaigns.design.services import campaign_create, stage_add
from tests.campaigns.platforms.conftest import fake  # noqa: F401  (the Prolific fake)
from tests.frontend.test_stage_pages import _form

pytestmark = pytest.mark.django_db

APPROVAL = {"kind": "approval_rate", "min": 95}


def _stage(requester, *, provider="prolific", requirements=None):
    campaign = campaign_create(
        owner=requester, name=f"On {provider}", slug=f"on-{provider}", provider=provider
    )
    return stage_add(
        campaign=campaign,
        name="Write questions",
        task_type="question_writing",
        config={"questions_per_hit": 5},
        qualification_requirements=requirements or [],
    )


def _edit(stage) -> str:
    return reverse(
        "frontend:stage-edit", kwargs={"slug": stage.campaign.slug, "stage_id": stage.pk}
    )


def _post(client, stage, *, countries, original, requirements=None):
    data = _form(
        stage,
        qualification_requirements=json.dumps(
            stage.qualification_requirements if requirements is None else requirements
        ),
        countries_original=",".join(original),
    )
    data["countries"] = countries
    return client.post(_edit(stage), data)


def test_picking_countries_writes_the_country_requirement(alice_client, requester):
    stage = _stage(requester, requirements=[APPROVAL])
    page = alice_client.get(_edit(stage)).content.decode()
    assert 'name="countries"' in page
    assert "United Kingdom (GB)" in page  # no catalogue cached: the ISO codes by name
    response = _post(alice_client, stage, countries=["US", "GB"], original=[])
    assert response.status_code == 302, response.content.decode()[:2000]
    stage.refresh_from_db()
    assert stage.qualification_requirements == [
        APPROVAL,
        {"kind": "country", "countries": ["US", "GB"]},
    ]


def test_a_recipes_locale_requirement_is_edited_in_place(alice_client, requester):
    stage = _stage(requester, requirements=[{"kind": "locale", "countries": ["US"]}, APPROVAL])
    page = alice_client.get(_edit(stage)).content.decode()
    assert '<option value="US" selected>' in page
    # What was selected goes back with the form: a change is told from an untouched list.
    assert 'name="countries_original" value="US"' in page
    response = _post(alice_client, stage, countries=["CA"], original=["US"])
    assert response.status_code == 302
    stage.refresh_from_db()
    assert stage.qualification_requirements == [
        {"kind": "locale", "countries": ["CA"]},
        APPROVAL,
    ]
    # None selected: anywhere, the requirement goes; the others stay.
    _post(alice_client, stage, countries=[], original=["CA"])
    stage.refresh_from_db()
    assert stage.qualification_requirements == [APPROVAL]


def test_changing_countries_in_both_places_is_refused(alice_client, requester):
    stage = _stage(requester, requirements=[{"kind": "country", "countries": ["US"]}])
    response = _post(
        alice_client,
        stage,
        countries=["GB"],
        original=["US"],
        requirements=[{"kind": "country", "countries": ["CA"]}],
    )
    assert response.status_code == 400
    assert "change them in one place" in response.content.decode()
    stage.refresh_from_db()
    assert stage.qualification_requirements == [{"kind": "country", "countries": ["US"]}]


def test_a_country_not_offered_is_refused(alice_client, requester):
    stage = _stage(requester)
    response = _post(alice_client, stage, countries=["XX"], original=[])
    assert response.status_code == 400
    assert "XX is not one of the available choices" in response.content.decode()
    stage.refresh_from_db()
    assert stage.qualification_requirements == []


def test_with_the_catalogue_cached_only_its_countries_are_offered(
    alice_client,
    requester,
    fake,  # noqa: F811
):
    call_command("prolific_filters", stdout=open("/dev/null", "w"))  # noqa: SIM115
    stage = _stage(requester)
    page = alice_client.get(_edit(stage)).content.decode()
    assert "Canada (CA)" in page
    assert "Japan (JP)" not in page  # the fake's catalogue has no Japan
    assert _post(alice_client, stage, countries=["JP"], original=[]).status_code == 400
    assert _post(alice_client, stage, countries=["CA"], original=[]).status_code == 302
    stage.refresh_from_db()
    assert stage.qualification_requirements == [{"kind": "country", "countries": ["CA"]}]


def test_an_exclusion_stays_the_jsons(alice_client, requester):
    excluded = {"kind": "country", "countries": ["US"], "exclude": True}
    stage = _stage(requester, provider="mturk", requirements=[excluded])
    page = alice_client.get(_edit(stage)).content.decode()
    assert 'name="countries"' not in page  # MTurk offers no list: the JSON says it
    stage = _stage(requester, requirements=[excluded])
    page = alice_client.get(_edit(stage)).content.decode()
    assert "edit it in the JSON above" in page
