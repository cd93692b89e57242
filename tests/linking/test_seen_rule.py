"""Mintaka §4.3's seen-entity rule: a question whose entity spans were all linked with
agreement before gets one annotator (a second only on disagreement); values (dates,
ordinals, numbers) never make it new; a new question gets 2 (+1)."""

from __future__ import annotations

import pytest

from campaigns.models import HIT
from campaigns.services.work import campaign_start
from linking.models import AgreedLink, EntityLinkResolution, ResolutionStatus
from linking.services import seen_prefill
from linking.tasks import prefetch_stage_task
from tests.linking.conftest import work_once

QUESTION = "Who was the third wife of Tom Cruise in 1990?"
SPANS = [
    {"start": 12, "end": 17, "text": "third", "kind": "ordinal"},
    {"start": 26, "end": 36, "text": "Tom Cruise", "kind": "entity"},
    {"start": 40, "end": 44, "text": "1990", "kind": "date"},
]
TOM = (26, 36, "Tom Cruise", "Q37079")


def test_values_do_not_make_an_item_new():
    seen, prefilled = seen_prefill(SPANS, known={"Tom Cruise": "Q37079"})
    assert seen is True
    assert prefilled == [
        {"start": 26, "end": 36, "text": "Tom Cruise", "qid": "Q37079", "none": False}
    ]
    assert seen_prefill(SPANS, known={})[0] is False


def test_an_overlapping_alternative_of_a_known_span_is_not_new():
    spans = [
        {"start": 0, "end": 9, "text": "Uncharted", "kind": "entity"},
        {"start": 0, "end": 16, "text": "Uncharted series", "kind": "entity"},
        {"start": 21, "end": 29, "text": "Sony Ent", "kind": "entity"},
    ]
    assert seen_prefill(spans, known={"Uncharted": "Q1064135", "Sony Ent": "Q1"})[0]
    # A separate entity not linked before still makes the item new.
    assert not seen_prefill(spans, known={"Uncharted": "Q1064135"})[0]


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
