"""Migration 0016 (its recipe-notes step): stages made from a recipe before the notes followed the settings get
the recipe sentence with its placeholder; other text is left alone."""

from __future__ import annotations

import importlib
from decimal import Decimal

import pytest
from django.apps import apps

from campaigns.design.services import campaign_create, stage_add
from campaigns.models import Stage
from campaigns.tasktypes.instructions import stage_instructions
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

migration = importlib.import_module("campaigns.migrations.0016_wave_three")

OLD_MINTAKA = (
    "Write five different questions about the topic, each of the complexity type shown, "
    "with their answers. Use any source you like."
)


def test_old_recipe_sentences_follow_the_settings_after_the_migration():
    campaign = campaign_create(owner=UserFactory.create(), name="Made last month")
    stage = stage_add(
        campaign=campaign,
        name="Write questions",
        task_type="question_writing",
        config={"questions_per_hit": 3},
        instructions=OLD_MINTAKA,
        reward=Decimal("1.25"),
    )
    own = stage_add(
        campaign=campaign,
        name="Own words",
        task_type="question_writing",
        config={"questions_per_hit": 3},
        instructions="Write five good ones, please.",
        reward=Decimal("1.25"),
    )
    assert stage_instructions(stage).startswith("Write five different")  # the bug

    migration.instructions_follow_settings(apps, None)

    stage = Stage.objects.get(pk=stage.pk)
    assert stage.instructions.startswith("Write {questions_per_hit} different questions")
    assert stage_instructions(stage).startswith("Write three different questions")
    assert Stage.objects.get(pk=own.pk).instructions == "Write five good ones, please."
