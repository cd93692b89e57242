"""A survey stage marked anonymous stores its answers apart from who gave them."""

from __future__ import annotations

import pytest
from django.http import QueryDict

from campaigns.design.items import items_upload
from campaigns.design.services import campaign_create, stage_add
from campaigns.models import Assignment, AssignmentStatus, DetachedAnswer
from campaigns.platforms.publishing import campaign_start
from campaigns.work.allocation import assignment_accept
from campaigns.work.submission import assignment_submit
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

QUESTIONS = [
    {"id": "age", "text": "How old are you?", "kind": "number", "required": True},
    {
        "id": "native",
        "text": "Is English your first language?",
        "kind": "single",
        "options": ["yes", "no"],
        "required": True,
    },
]


def _survey(*, anonymous: bool):
    owner = UserFactory.create(username="owner")
    campaign = campaign_create(owner=owner, name=f"Survey {anonymous}")
    stage = stage_add(
        campaign=campaign,
        name="demographics",
        task_type="survey",
        config={"anonymous": anonymous, "questions": QUESTIONS},
        assignments_per_hit=2,
    )
    items_upload(stage=stage, content=b'{"id": "survey"}\n', filename="s.jsonl")
    campaign_start(campaign=campaign, to_state="live")
    return stage


def _submit(stage, worker, age: str):
    assignment = assignment_accept(stage=stage, worker=worker)
    form = QueryDict(mutable=True)
    form.update({"responses/age": age, "responses/native": "no"})
    return assignment_submit(assignment_id=assignment.pk, worker=worker, form=form, telemetry={})


def test_anonymous_answers_are_detached(invited):
    stage = _survey(anonymous=True)
    workers = [invited(stage.campaign) for _ in range(2)]
    for worker, age in zip(workers, ["34", "51"], strict=True):
        result = _submit(stage, worker, age)
        assert result.stored

    assignments = Assignment.objects.filter(hit__stage=stage)
    assert {a.status for a in assignments} == {AssignmentStatus.SUBMITTED}
    assert all(a.answers == {"detached": True} for a in assignments)
    detached = DetachedAnswer.objects.filter(stage=stage)
    ages = sorted(str(d.answers["responses"]["age"]) for d in detached)
    assert [age.split(".")[0] for age in ages] == ["34", "51"]
    # Nothing in the detached row points back at a person or an assignment.
    field_names = {f.name for f in DetachedAnswer._meta.get_fields()}
    assert field_names == {"id", "stage", "answers", "submitted_on"}


def test_identified_survey_keeps_answers_on_the_assignment(invited):
    stage = _survey(anonymous=False)
    result = _submit(stage, invited(stage.campaign), "40")
    assert result.stored
    assert "responses" in (Assignment.objects.get(hit__stage=stage).answers or {})
    assert not DetachedAnswer.objects.exists()


def test_invalid_anonymous_answer_stores_nothing(invited):
    stage = _survey(anonymous=True)
    result = _submit(stage, invited(stage.campaign), "")
    assert not result.stored
    assert not DetachedAnswer.objects.exists()
