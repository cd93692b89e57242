"""Entity agreement end to end through the real worker pages: two agree → done;
disagree → a third → resolved, or the requester's review queue; seen entities."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse

from campaigns.models import (
    HIT,
    LedgerEntry,
    LedgerKind,
    LedgerStatus,
    OperationKind,
    ProviderOperation,
)
from campaigns.platforms.publishing import campaign_start
from campaigns.work.publishing import stage_publish
from linking.models import AgreedLink, EntityLinkResolution, ResolutionStatus
from linking.selectors import link_review_queue, stage_entity_agreement
from linking.services import bonus_key, entity_agreement_sweep, entity_link_decide
from linking.tasks import prefetch_stage_task
from tests.linking.conftest import accept, joined_client, upload, work_once

pytestmark = pytest.mark.django_db(transaction=True)

ANSWER = "Tom Cruise and Val Kilmer"
ITEM = {
    "external_id": "topgun",
    "question": "Who starred in Top Gun?",
    "answer": ANSWER,
    "proposed_spans": [
        {"start": 0, "end": 10, "text": "Tom Cruise", "kind": "entity"},
        {"start": 15, "end": 25, "text": "Val Kilmer", "kind": "entity"},
    ],
}
TOM = (0, 10, "Tom Cruise", "Q37079")
VAL = (15, 25, "Val Kilmer", "Q193048")
VAL_NIL = (15, 25, "Val Kilmer", None)
VAL_OTHER = (15, 25, "Val Kilmer", "Q1")


def _escalations(hit):
    return ProviderOperation.objects.filter(
        kind=OperationKind.ADD_ASSIGNMENTS,
        idempotency_key__startswith=f"entity_agreement:{hit.pk}:",
    )


def _live(linking_stage, **kwargs):
    stage = linking_stage(items=[ITEM], **kwargs)
    campaign = campaign_start(campaign=stage.campaign, to_state="live")
    return campaign, stage, HIT.objects.get(stage=stage)


def test_two_annotators_agree_and_the_item_is_done(linking_stage):
    campaign, stage, hit = _live(linking_stage)
    first = work_once(campaign, stage, [TOM, VAL])
    assert not EntityLinkResolution.objects.exists()  # a place is still open: waiting
    second = work_once(campaign, stage, [TOM, VAL])

    resolution = EntityLinkResolution.objects.get(item__stage=stage)
    assert resolution.status == ResolutionStatus.RESOLVED
    assert resolution.annotators == 2
    assert resolution.source == "agreement"
    assert resolution.links is not None
    assert [(lk["text"], lk["qid"]) for lk in resolution.links] == [
        ("Tom Cruise", "Q37079"),
        ("Val Kilmer", "Q193048"),
    ]
    hit.refresh_from_db()
    assert hit.max_assignments == 2
    assert hit.places_left == 0
    assert not _escalations(hit).exists()
    assert set(AgreedLink.objects.values_list("text", "qid")) == {
        ("Tom Cruise", "Q37079"),
        ("Val Kilmer", "Q193048"),
    }
    # $0.05 for the one agreed entity beyond the first, planned for each annotator.
    bonuses = LedgerEntry.objects.filter(kind=LedgerKind.BONUS).order_by("assignment_id")
    assert [(b.assignment_id, b.amount, b.status) for b in bonuses] == [
        (first.pk, Decimal("0.05"), LedgerStatus.PLANNED),
        (second.pk, Decimal("0.05"), LedgerStatus.PLANNED),
    ]
    assert bonuses[0].key == bonus_key(assignment_id=first.pk, item_id=resolution.item_id)
    # Checking again (the sweep, a re-delivered task) changes nothing.
    assert entity_agreement_sweep() == 0
    assert LedgerEntry.objects.count() == 2
    summary = stage_entity_agreement(stage=stage)
    assert (summary.after_2, summary.after_3) == (1.0, 1.0)


def test_disagreement_adds_a_third_annotator_who_settles_it(linking_stage):
    campaign, stage, hit = _live(linking_stage)
    first = work_once(campaign, stage, [TOM, VAL])
    work_once(campaign, stage, [TOM, VAL_NIL])  # "not in Wikidata" is an answer too

    hit.refresh_from_db()
    assert (hit.max_assignments, hit.places_left) == (3, 1)
    (operation,) = _escalations(hit)
    assert operation.idempotency_key == f"entity_agreement:{hit.pk}:3"
    assert EntityLinkResolution.objects.get().status == ResolutionStatus.PENDING

    third = work_once(campaign, stage, [TOM, VAL])
    resolution = EntityLinkResolution.objects.get()
    assert (resolution.status, resolution.annotators) == (ResolutionStatus.RESOLVED, 3)
    assert _escalations(hit).count() == 1
    assert set(
        LedgerEntry.objects.filter(kind=LedgerKind.BONUS).values_list("assignment_id", flat=True)
    ) == {first.pk, third.pk}
    summary = stage_entity_agreement(stage=stage)
    assert (summary.agreed_after_2, summary.agreed_after_3, summary.with_two) == (0, 1, 1)


def test_three_different_answers_go_to_the_review_queue(linking_stage, requester):
    campaign, stage, hit = _live(linking_stage)
    work_once(campaign, stage, [TOM, VAL])
    work_once(campaign, stage, [TOM, VAL_NIL])
    work_once(campaign, stage, [TOM, VAL_OTHER])

    hit.refresh_from_db()
    assert (hit.max_assignments, hit.places_left) == (3, 0)  # no fourth: max is 3
    resolution = EntityLinkResolution.objects.get()
    assert resolution.status == ResolutionStatus.REVIEW
    assert resolution.item.status == "published"
    (entry,) = link_review_queue(campaign=campaign)
    assert entry["item"].external_id == "topgun"
    assert [len(a["links"]) for a in entry["annotations"]] == [2, 2, 2]
    assert not LedgerEntry.objects.exists()
    assert not AgreedLink.objects.exists()

    decided = entity_link_decide(
        item=resolution.item,
        links=[
            {"start": 0, "end": 10, "text": "Tom Cruise", "qid": "Q37079"},
            {"start": 15, "end": 25, "text": "Val Kilmer", "qid": "Q193048"},
        ],
        decided_by=requester,
    )
    assert decided.status == ResolutionStatus.DECIDED
    assert link_review_queue(campaign=campaign) == []
    assert AgreedLink.objects.count() == 2
    assert entity_agreement_sweep() == 0  # a decided item stays decided


def test_a_seen_entity_is_prefilled_and_needs_one_annotator(linking_stage):
    # One place per HIT: the prefetch adds the second for items with new entities.
    stage = linking_stage(items=[ITEM], assignments_per_hit=1, slug="link-seen")
    campaign = campaign_start(campaign=stage.campaign, to_state="live")
    prefetch_stage_task.delay(stage.pk)
    first_hit = HIT.objects.get(stage=stage)
    assert first_hit.max_assignments == 2
    work_once(campaign, stage, [TOM, VAL])
    work_once(campaign, stage, [TOM, VAL])
    assert EntityLinkResolution.objects.get().status == ResolutionStatus.RESOLVED

    # Later items naming the same entities: spans proposed (spaCy), ids pre-filled.
    upload(
        stage, [{"external_id": "again", "question": "Who was Maverick?", "answer": "Tom Cruise"}]
    )
    stage_publish(stage=stage)
    prefetch_stage_task.delay(stage.pk)
    seen_hit = HIT.objects.filter(stage=stage).latest("id")
    item = seen_hit.items.get()
    assert item.data["seen"] is True
    assert item.data["proposed_spans"] == [
        {"start": 0, "end": 10, "text": "Tom Cruise", "kind": "entity"}
    ]
    assert item.data["prefilled_links"] == [
        {"start": 0, "end": 10, "text": "Tom Cruise", "qid": "Q37079", "none": False}
    ]
    assert seen_hit.max_assignments == 1

    client = joined_client(campaign)
    assignment = accept(client, stage)
    page = client.get(reverse("worker:assignment", kwargs={"assignment_id": assignment.pk}))
    assert 'value="Q37079"' in page.text
    assert "linked before in this campaign" in page.text
    assert f'data-tt-suggest="/work/suggest/?a={assignment.pk}"' in page.text
    # Submitting the page as it came (the pre-filled id kept) confirms it.
    response = client.post(
        reverse("worker:assignment", kwargs={"assignment_id": assignment.pk}),
        {
            "items/0/spans/0/start": "0",
            "items/0/spans/0/end": "10",
            "items/0/spans/0/text": "Tom Cruise",
            "items/0/spans/0/qid": "Q37079",
        },
    )
    assert response.status_code == 302
    resolution = EntityLinkResolution.objects.get(item=item)
    assert (resolution.status, resolution.source, resolution.annotators) == (
        ResolutionStatus.RESOLVED,
        "seen_confirmed",
        1,
    )
    seen_hit.refresh_from_db()
    assert seen_hit.max_assignments == 1

    # A seen item whose annotator changes the id gets a second annotator.
    upload(stage, [{"external_id": "third", "question": "Who?", "answer": "Tom Cruise"}])
    stage_publish(stage=stage)
    prefetch_stage_task.delay(stage.pk)
    work_once(campaign, stage, [(0, 10, "Tom Cruise", "Q5")])
    changed_hit = HIT.objects.filter(stage=stage).latest("id")
    assert changed_hit.max_assignments == 2
    work_once(campaign, stage, [(0, 10, "Tom Cruise", "Q37079")])  # sides with the earlier one
    resolution = EntityLinkResolution.objects.get(item__external_id="third")
    assert resolution.status == ResolutionStatus.RESOLVED
    assert resolution.links is not None
    assert resolution.links[0]["qid"] == "Q37079"
    summary = stage_entity_agreement(stage=stage)
    assert summary.seen_confirmed == 1


def test_checks_drained_in_one_go_judge_each_hit_once(linking_stage, monkeypatch):
    """The crowd simulator's round: the checks its submissions set off wait for the end
    of the block and run as one batch, the repeat for a HIT left to its last message."""
    from linking import subscriptions
    from qaportal.outbox import outbox_deferred

    other = dict(ITEM, external_id="topgun-2")
    stage = linking_stage(items=[ITEM, other])
    campaign = campaign_start(campaign=stage.campaign, to_state="live")
    batches: list[list[int]] = []
    checks = subscriptions.hits_entity_agreement_check

    def spy(*, hit_ids):
        batches.append(list(hit_ids))
        return checks(hit_ids=hit_ids)

    monkeypatch.setattr(subscriptions, "hits_entity_agreement_check", spy)
    with outbox_deferred():
        for _ in range(4):  # two answers on each of the two HITs
            work_once(campaign, stage, [TOM, VAL])
        assert not EntityLinkResolution.objects.exists()  # not inside the requests
    hits = list(HIT.objects.filter(stage=stage).order_by("id").values_list("pk", flat=True))
    assert batches == [hits]
    resolved = EntityLinkResolution.objects.filter(status=ResolutionStatus.RESOLVED)
    assert resolved.count() == 2
    assert all(r.annotators == 2 for r in resolved)
