"""Stages the review-rule tests build (API and pages): decided by rules, or an
entity-link item in the requester's review queue."""

from __future__ import annotations

from campaigns.design.services import campaign_create, stage_add
from campaigns.models import HIT, Assignment, Campaign, Item, ItemSource, Stage
from campaigns.work.publishing import stage_publish
from linking.models import EntityLinkResolution, ResolutionStatus
from tests.validation.db_helpers import hits, make_stage, submit, worker
from validation.services import stage_review

RULES = [
    {"rule": "consensus", "action": "reject"},
    {"rule": "work_time", "min_seconds": 20},
]


def reviewed_stage(owner) -> tuple[Stage, dict[str, Assignment]]:
    """An mc_validation stage of ``owner`` whose rules approved ``a``, rejected ``b``
    (too fast) and ``c`` (against the consensus) and held ``lone`` (no peers)."""
    stage = make_stage(items=2, review_rules=RULES)
    Campaign.objects.filter(pk=stage.campaign_id).update(owner=owner, slug=f"rules-{owner.pk}")
    stage.refresh_from_db()
    h1, h2 = hits(stage)
    w1, w2, w3 = worker(f"a{owner.pk}"), worker(f"b{owner.pk}"), worker(f"c{owner.pk}")
    made = {
        "a": submit(h1, w1, {"choice": 0}),
        "b": submit(h1, w2, {"choice": 0}, seconds=5),
        "c": submit(h1, w3, {"choice": 2}),
        "lone": submit(h2, w1, {"choice": 1}),
    }
    stage_review(stage=stage)
    for row in made.values():
        row.refresh_from_db()
    return stage, made


LINK_ITEM = {
    "question": "Who starred in Top Gun?",
    "answer": "Tom Cruise and Val Kilmer",
}
TOM = {"start": 0, "end": 10, "text": "Tom Cruise", "qid": "Q37079", "none": False}
VAL = {"start": 15, "end": 25, "text": "Val Kilmer", "qid": "Q193048", "none": False}
VAL_NIL = {"start": 15, "end": 25, "text": "Val Kilmer", "qid": None, "none": True}
VAL_OTHER = {"start": 15, "end": 25, "text": "Val Kilmer", "qid": "Q1", "none": False}


def link_review_item(owner, *, slug: str) -> tuple[Item, list[Assignment]]:
    """A linking item of ``owner`` three annotators linked three ways: in review."""
    campaign = campaign_create(owner=owner, name=f"Links {slug}", slug=slug)
    stage = stage_add(
        campaign=campaign,
        name="Link",
        task_type="answer_entity_linking",
        assignments_per_hit=3,
        escalation_rule={"rule": "entity_agreement", "annotators": 2, "max": 3},
    )
    item = Item.objects.create(
        stage=stage, external_id="topgun", data=LINK_ITEM, source=ItemSource.UPLOADED
    )
    stage_publish(stage=stage)
    hit = HIT.objects.get(stage=stage)
    annotations = [
        submit(hit, worker(f"{slug}-{n}"), {"links": links})
        for n, links in enumerate([[TOM, VAL], [TOM, VAL_NIL], [TOM, VAL_OTHER]])
    ]
    EntityLinkResolution.objects.create(
        item=item, stage=stage, hit=hit, status=ResolutionStatus.REVIEW, annotators=3
    )
    return item, annotations
