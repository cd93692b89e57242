"""Mintaka §4.3's seen-entity rule end to end: a question whose entity spans were all
linked with agreement before starts with one annotator and is resolved by one who keeps
the pre-filled links; values (dates, ordinals) never make it new; a new question gets
two."""

from __future__ import annotations

import pytest

from campaigns.models import HIT
from campaigns.platforms.publishing import campaign_start
from linking.models import AgreedLink, EntityLinkResolution, ResolutionStatus
from linking.selectors import stage_entity_agreement
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


MIXED = "Who directed Top Gun with Tom Cruise in 1986?"
MIXED_SPANS = [
    {"start": 13, "end": 20, "text": "Top Gun", "kind": "entity"},
    {"start": 26, "end": 36, "text": "Tom Cruise", "kind": "entity"},
    {"start": 40, "end": 44, "text": "1986", "kind": "date"},
]
MIXED_TOM = (26, 36, "Tom Cruise", "Q37079")
TOP_GUN = (13, 20, "Top Gun", "Q110397")


def _seen_and_mixed(linking_stage, slug):
    stage = linking_stage(
        items=[
            {"external_id": "seen", "question": QUESTION, "proposed_spans": SPANS},
            {"external_id": "mixed", "question": MIXED, "proposed_spans": MIXED_SPANS},
        ],
        task_type="question_entity_linking",
        assignments_per_hit=1,
        slug=slug,
    )
    AgreedLink.objects.create(
        campaign=stage.campaign, item=stage.items.get(external_id="seen"), start=0, end=10,
        text="Tom Cruise", qid="Q37079",
    )  # fmt: skip
    campaign = campaign_start(campaign=stage.campaign, to_state="live")
    prefetch_stage_task.delay(stage.pk)
    hits = {h.items.get().external_id: h for h in HIT.objects.filter(stage=stage)}
    assert (hits["seen"].max_assignments, hits["mixed"].max_assignments) == (1, 2)
    return campaign, stage, hits


@pytest.mark.django_db(transaction=True)
def test_a_link_typed_on_a_value_does_not_send_a_seen_question_to_a_second(linking_stage):
    """The one annotator of a seen question keeps its pre-filled link and types an id on
    the year: a value is no entity, so nobody disagreed and nobody more is asked."""
    campaign, stage, hits = _seen_and_mixed(linking_stage, "seen-value")
    work_once(campaign, stage, [(12, 17, "third", None), TOM, (40, 44, "1990", "Q2062")])
    seen = EntityLinkResolution.objects.get(item__external_id="seen")
    assert (seen.status, seen.source, seen.annotators) == (
        ResolutionStatus.RESOLVED,
        "seen_confirmed",
        1,
    )
    assert [(x["start"], x["qid"]) for x in seen.links or []] == [(26, "Q37079")]
    assert HIT.objects.get(pk=hits["seen"].pk).max_assignments == 1
    # The stage's agreement figures count it as confirmed by its one annotator too.
    assert stage_entity_agreement(stage=stage).seen_confirmed == 1


@pytest.mark.django_db(transaction=True)
def test_a_seen_entity_keeps_its_one_annotation_beside_a_new_one(linking_stage):
    """§4.3 per entity: a question with a seen and a new entity gets two annotators for
    the new one; the seen one is decided by the first annotation, which kept its
    pre-filled link, and the second annotator's "not in Wikidata" for it brings no
    third."""
    campaign, stage, hits = _seen_and_mixed(linking_stage, "seen-per-entity")
    mixed = hits["mixed"].items.get()
    assert mixed.data["seen"] is False
    assert [p["qid"] for p in mixed.data["prefilled_links"]] == ["Q37079"]
    work_once(campaign, stage, [TOM])  # the seen question's one annotator
    work_once(campaign, stage, [TOP_GUN, MIXED_TOM])
    work_once(campaign, stage, [TOP_GUN, (26, 36, "Tom Cruise", None)])
    resolution = EntityLinkResolution.objects.get(item=mixed)
    assert (resolution.status, resolution.source, resolution.annotators) == (
        ResolutionStatus.RESOLVED,
        "agreement",
        2,
    )
    links = resolution.links or []
    assert [(x["start"], x["qid"]) for x in links] == [(13, "Q110397"), (26, "Q37079")]
    assert HIT.objects.get(pk=hits["mixed"].pk).max_assignments == 2
