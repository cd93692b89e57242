"""A requirement naming a stage (``quiz_stage``, ``round_stage``, ``graders_stage``) takes
a stage's id: anything else is a 400 with nothing stored, and a row stored before that
was refused names no stage instead of breaking the stage list and the campaign page."""

from __future__ import annotations

import pytest
from django.test import Client

from campaigns.design.services import campaign_create, stage_add
from campaigns.models import Stage
from campaigns.workforce.requirements import stage_requirements

pytestmark = pytest.mark.django_db

NOT_AN_ID = ["Qualification quiz", "1e3", "7", [1], {}, True, 0, -3, 1.5]


@pytest.fixture
def stages(requester):
    campaign = campaign_create(owner=requester, name="Q", slug="q")
    writing = stage_add(
        campaign=campaign,
        name="Write",
        task_type="question_writing",
        config={"questions_per_hit": 5},
    )
    quiz = stage_add(
        campaign=campaign,
        name="Rate",
        task_type="question_writing",
        config={"questions_per_hit": 5},
    )
    return quiz, writing


@pytest.mark.parametrize("key", ["quiz_stage", "round_stage", "graders_stage"])
@pytest.mark.parametrize("value", NOT_AN_ID)
def test_a_stage_reference_that_is_not_an_id_is_a_400(token_client, stages, key, value):
    _quiz, writing = stages
    response = token_client.patch(
        f"/api/v1/stages/{writing.pk}/",
        {"qualification_requirements": [{key: value}]},
        format="json",
    )
    assert response.status_code == 400, response.content
    assert "stage's id" in str(response.json())
    writing.refresh_from_db()
    assert writing.qualification_requirements == []


@pytest.mark.parametrize("value", ["2", "1e3", [1], 0])
def test_a_round_that_is_not_a_number_is_a_400(token_client, stages, value):
    quiz, writing = stages
    response = token_client.patch(
        f"/api/v1/stages/{writing.pk}/",
        {"qualification_requirements": [{"round_stage": quiz.pk, "round": value}]},
        format="json",
    )
    assert response.status_code == 400
    writing.refresh_from_db()
    assert writing.qualification_requirements == []


def test_a_real_stage_id_is_taken(token_client, stages):
    quiz, writing = stages
    response = token_client.patch(
        f"/api/v1/stages/{writing.pk}/",
        {"qualification_requirements": [{"quiz_stage": quiz.pk}]},
        format="json",
    )
    assert response.status_code == 200, response.content


def test_a_bad_reference_stored_earlier_breaks_no_page(requester, stages, token_client):
    _quiz, writing = stages
    Stage.objects.filter(pk=writing.pk).update(
        qualification_requirements=[{"quiz_stage": "Qualification quiz"}, {"round_stage": [1]}]
    )
    assert token_client.get("/api/v1/campaigns/q/stages/").status_code == 200
    page = Client()
    page.force_login(requester)
    assert page.get("/campaigns/q/").status_code == 200


def test_a_bad_reference_stored_earlier_opens_on_the_edit_page(requester, stages):
    _quiz, writing = stages
    Stage.objects.filter(pk=writing.pk).update(
        qualification_requirements=[{"quiz_stage": "Qualification quiz"}, {"round_stage": [1]}]
    )
    page = Client()
    page.force_login(requester)
    assert page.get(f"/campaigns/q/stages/{writing.pk}/edit/").status_code == 200


@pytest.mark.parametrize("key", ["quiz_stage", "round_stage", "graders_stage"])
def test_a_stage_reference_resolves_in_two_queries_once_its_type_exists(
    stages, key, django_assert_num_queries
):
    # A worker's page resolves the requirements on every opening of a stage: the
    # referenced stage with its campaign (the type's owner and name), then the type.
    quiz, writing = stages
    Stage.objects.filter(pk=writing.pk).update(qualification_requirements=[{key: quiz.pk}])
    writing = Stage.objects.get(pk=writing.pk)
    first = stage_requirements(stage=writing)  # creates the qualification type
    assert len(first) == 1
    assert first[0]["qualification_type_id"]
    with django_assert_num_queries(2):
        assert stage_requirements(stage=writing) == first
