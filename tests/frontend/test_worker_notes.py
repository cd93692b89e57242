"""Notes follow the settings (issue 36, point 6): the recipes' instructions name their
numbers as placeholders, and the worker pages read the stage's current values, so a
stage changed from five questions to three no longer says "Write five"."""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse

from campaigns.design.items import items_upload
from campaigns.design.services import campaign_create, stage_add, stage_update
from campaigns.platforms.publishing import campaign_start
from campaigns.recipes import mintaka, nangia, whyqa
from campaigns.tasktypes.instructions import instructions_render, number_words
from campaigns.work.invites import invite_create, invite_token
from tests.campaigns.tasktypes.test_templates import CASES
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def _worker_on_stage(stage) -> Client:
    campaign = stage.campaign
    campaign_start(campaign=campaign, to_state="pilot")  # pilot: still editable
    client = Client()
    invite = invite_create(
        campaign=campaign, created_by=campaign.owner, expires_in=timedelta(days=1)
    )
    response = client.post(reverse("worker:invite", kwargs={"token": invite_token(invite=invite)}))
    assert response.status_code == 302
    return client


def _writing_stage():
    owner = UserFactory.create()
    campaign = campaign_create(owner=owner, name="Notes follow settings")
    stage = stage_add(
        campaign=campaign,
        name="Write questions",
        task_type="question_writing",
        config=dict(mintaka.WRITE.config),
        instructions=mintaka.WRITE.instructions,
        reward=Decimal("1.25"),
    )
    items, _config, _answer, _text, _path = CASES["question_writing"]
    rows = "\n".join(json.dumps({"id": it["external_id"], **it["data"]}) for it in items)
    items_upload(stage=stage, content=rows.encode(), filename="items.jsonl")
    return stage


def test_the_worker_pages_read_the_stage_current_number():
    stage = _writing_stage()
    client = _worker_on_stage(stage)
    stage_url = reverse("worker:stage", kwargs={"stage_id": stage.pk})
    page = client.get(stage_url).content.decode()
    assert "Write five different questions" in page
    assert "{questions_per_hit}" not in page

    stage_update(stage=stage, config={**stage.config, "questions_per_hit": 3})
    page = client.get(stage_url).content.decode()
    assert "Write three different questions" in page
    assert "Write five" not in page
    # The task page's notes too.
    response = client.post(reverse("worker:accept", kwargs={"stage_id": stage.pk}))
    task = client.get(response["Location"]).content.decode()
    assert "Write three different questions" in task


def test_every_recipe_placeholder_is_known_to_its_stage():
    specs = [mintaka.WRITE, whyqa.ANSWER, nangia.VALIDATION_QUIZ_STAGE, nangia._tutorial("CROWD")]
    for spec in specs:
        text = instructions_render(
            text=spec.instructions,
            task_type=spec.task_type,
            config=spec.config,
            items_per_hit=1,
            assignments_per_hit=1,
        )
        assert "{" not in text, (spec.name, text)
    writing = instructions_render(
        text=nangia.WRITING_INSTRUCTIONS,
        task_type="mc_question_writing",
        config={"questions_per_passage": 3},
        items_per_hit=1,
        assignments_per_hit=1,
    )
    assert writing.startswith("Read the passage and write three multiple-choice questions")
    quiz = instructions_render(
        text=nangia.VALIDATION_QUIZ_STAGE.instructions,
        task_type="quiz",
        config=nangia.VALIDATION_QUIZ,
        items_per_hit=1,
        assignments_per_hit=1,
    )
    assert quiz == "Answer five questions about short passages; three right answers qualify you."


def test_unknown_names_and_braces_stay_as_typed():
    text = "Use {curly} braces; {items_per_hit} item(s) per task, {assignments_per_hit} workers."
    rendered = instructions_render(
        text=text, task_type="question_writing", config={}, items_per_hit=2, assignments_per_hit=14
    )
    assert rendered == "Use {curly} braces; two item(s) per task, 14 workers."
    assert number_words(12) == "twelve"
    assert number_words(2.5) == "2.5"
