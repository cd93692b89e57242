"""The worker pages with the task types that exist, not only the test one."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse

from campaigns.models import Assignment, AssignmentStatus, Item, ItemSource
from campaigns.tasktypes import UnknownTaskTypeError, task_type_get
from campaigns.work.invites import invite_create, invite_token
from campaigns.work.publishing import stage_publish

pytestmark = pytest.mark.django_db


def test_question_writing_page_round_trip(make_stage):
    try:
        task_type = task_type_get("question_writing")
    except UnknownTaskTypeError:
        pytest.skip("question_writing is not registered")
    if not task_type.template_name:
        pytest.skip("question_writing has no template yet")
    stage = make_stage(config={"questions_per_hit": 1})
    stage.task_type = "question_writing"
    stage.save()
    for n, topic in enumerate(["movies", "books"]):
        Item.objects.create(
            stage=stage,
            external_id=f"cell-{n}",
            data={"topic": topic, "complexity_type": "count"},
            source=ItemSource.UPLOADED,
        )
    stage_publish(stage=stage)
    link = invite_create(
        campaign=stage.campaign, created_by=stage.campaign.owner, expires_in=timedelta(days=1)
    )
    client = Client()
    client.post(reverse("worker:invite", kwargs={"token": invite_token(invite=link)}))

    preview = client.get(reverse("worker:stage", kwargs={"stage_id": stage.pk}))
    assert preview.status_code == 200
    assert "movies" in preview.text
    client.post(reverse("worker:accept", kwargs={"stage_id": stage.pk}))
    assignment = Assignment.objects.get()
    url = reverse("worker:assignment", kwargs={"assignment_id": assignment.pk})
    assert client.get(url).status_code == 200

    # An answer the task type refuses comes back with the worker's text, stores nothing.
    typed = "How many films did Kubrick direct"
    response = client.post(url, {"questions/0/question": typed, "telemetry": "{}"})
    assert response.status_code == 400
    assert typed in response.text
    assert Assignment.objects.get(pk=assignment.pk).status == AssignmentStatus.ACCEPTED
