"""Mintaka §4.3's seen-entity rule end to end: a question whose entity spans were all
linked with agreement before starts with one annotator and is resolved by one who keeps
the pre-filled links; values (dates, ordinals) never make it new; a new question gets
two."""

from __future__ import annotations

import pytest

from campaigns.models import HIT
from campaigns.services.work import campaign_start
from linking.models import AgreedLink, EntityLinkResolution, ResolutionStatus
from linking.tasks import prefetch_stage_task
from tests.linking.conftest import work_once

QUESTION = "Who was the third wife of Tom Cruise in 1990?"
SPANS = [
    {"start": 12, "end": 17, "text": "third", "kind": "ordinal"},
    {"start": 26, "end": 36, "text": "Tom Cruise", "kind": "entity"},
    {"start": 40, "end": 44, "text": "1990", "kind": "date"},
]
TOM = (26, 36, "Tom Cruise", "Q37079")


@pytest.mark.django_db(transaction=True)
def test_a_seen_question_gets_one_annotator_and_a_new_one_two(linking_stage):
    stage = linking_stage(
        items=[
            {"external_id": "seen", "question": QUESTION, "proposed_spans": SPANS},
            {
                "external_id": "new",
                "question": "Who directed Top Gun?",
                "proposed_spans": [{"start": 13, "end": 20, "text": "Top Gun", "kind": "entity"}],
            },
        ],
        task_type="question_entity_linking",
        assignments_per_hit=1,
        escalation_rule={
            "rule": "entity_agreement",
            "annotators": 2,
            "max": 3,
            "seen_annotators": 1,
        },
        slug="seen-rule",
    )
    AgreedLink.objects.create(
        campaign=stage.campaign, item=stage.items.get(external_id="new"), start=0, end=10,
        text="Tom Cruise", qid="Q37079",
    )  # fmt: skip
    campaign = campaign_start(campaign=stage.campaign, to_state="live")
    prefetch_stage_task.delay(stage.pk)
    hits = {h.items.get().external_id: h for h in HIT.objects.filter(stage=stage)}
    assert hits["seen"].items.get().data["seen"] is True
    assert hits["seen"].max_assignments == 1
    assert hits["new"].max_assignments == 2

    work_once(campaign, stage, [TOM])
    resolution = EntityLinkResolution.objects.get(item__external_id="seen")
    assert (resolution.status, resolution.source, resolution.annotators) == (
        ResolutionStatus.RESOLVED,
        "seen_confirmed",
        1,
    )
