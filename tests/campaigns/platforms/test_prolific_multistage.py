"""Prolific campaigns of several stages: the hand-off publishes the next stage as its own
study, in batches; and a study created while its campaign was paused catches up."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from campaigns.design.services import campaign_transition, stage_add, stage_link
from campaigns.models import (
    HIT,
    Assignment,
    CampaignState,
    HITStatus,
    OperationKind,
    ProviderOperation,
    Stage,
)
from campaigns.platforms.prolific.studies import prolific_studies_sync
from campaigns.platforms.publishing import campaign_start, stage_provider_publish
from campaigns.platforms.review import paid_assignment_approve
from campaigns.work.handoff import handoff_flush
from tests.campaigns.platforms.conftest import make_campaign, run_operations
from tests.campaigns.platforms.test_prolific_flow import publish, work

pytestmark = pytest.mark.django_db


@pytest.fixture
def pipeline(requester, fake):
    """Question writing (2 cells) → answer entity linking, on Prolific, in pilot."""
    campaign, writing = make_campaign(requester, provider="prolific", slug="prolific-two")
    linking = stage_add(
        campaign=campaign,
        name="Link answers",
        task_type="answer_entity_linking",
        reward=Decimal("0.20"),
        config={"estimated_minutes": 1},  # £12 an hour
    )
    stage_link(stage=writing, next_stage=linking, handoff={})
    return campaign, writing, linking


def _work_and_approve(client, fake, study_id, stage, capture) -> Assignment:
    session, _ = work(client, fake, study_id, stage)
    prolific_studies_sync()
    assignment = Assignment.objects.get(provider_assignment_id=session["id"])
    with capture(execute=True):  # the hand-off runs after the approval commits
        paid_assignment_approve(assignment=assignment, source="requester")
        run_operations()
    return assignment


def _studies_of(stage: Stage) -> set[str]:
    return set(
        HIT.objects.filter(stage=stage)
        .exclude(provider_group_id="")
        .values_list("provider_group_id", flat=True)
    )


def test_drained_source_publishes_the_next_stage_as_a_study(
    pipeline, fake, client, django_capture_on_commit_callbacks
):
    _campaign, writing, linking = pipeline
    study_id, _ = publish(writing, fake)

    _work_and_approve(client, fake, study_id, writing, django_capture_on_commit_callbacks)
    # One answer handed on; the source still works and 1 place < the batch: it waits.
    assert linking.items.count() == 1
    assert not _studies_of(linking)
    assert len(fake.state.studies) == 1

    _work_and_approve(client, fake, study_id, writing, django_capture_on_commit_callbacks)
    # Nothing more can come from writing: the linking HITs go out together, once.
    with django_capture_on_commit_callbacks(execute=True):
        run_operations()
    second = _studies_of(linking)
    assert len(second) == 1
    (second_id,) = second
    assert second_id != study_id
    study = fake.state.studies[second_id]
    assert study["status"] == "ACTIVE"
    assert study["total_available_places"] == sum(
        HIT.objects.filter(stage=linking).values_list("max_assignments", flat=True)
    )
    assert f"qa_stage={linking.pk}" in study["external_study_url"]
    assert not HIT.objects.filter(stage=linking, status=HITStatus.PENDING).exists()
    # Beat's flush afterwards finds nothing to do.
    handoff_flush()
    run_operations()
    assert len(fake.state.studies) == 2


def test_waiting_hand_off_hits_go_out_after_the_max_wait(
    pipeline, fake, client, settings, django_capture_on_commit_callbacks
):
    settings.PAID_HANDOFF_MAX_WAIT_SECONDS = 600
    _campaign, writing, linking = pipeline
    study_id, _ = publish(writing, fake)
    _work_and_approve(client, fake, study_id, writing, django_capture_on_commit_callbacks)
    handoff_flush()
    assert not ProviderOperation.objects.filter(payload__stage_id=linking.pk).exists()

    HIT.objects.filter(stage=linking).update(created_at=timezone.now() - timedelta(minutes=11))
    with django_capture_on_commit_callbacks(execute=True):
        handoff_flush()
        run_operations()
    assert len(_studies_of(linking)) == 1


def test_later_batches_grow_the_stage_study_and_no_hit_is_in_two_studies(
    pipeline, fake, client, settings, django_capture_on_commit_callbacks
):
    settings.PAID_HANDOFF_BATCH_PLACES = 1
    _campaign, writing, linking = pipeline
    study_id, _ = publish(writing, fake)
    _work_and_approve(client, fake, study_id, writing, django_capture_on_commit_callbacks)
    first_op = ProviderOperation.objects.get(
        kind=OperationKind.CREATE_STUDY, payload__stage_id=linking.pk
    )
    # While that study's create operation has not run, asking again adds no second study.
    assert stage_provider_publish(stage=linking) in (None, first_op)
    with django_capture_on_commit_callbacks(execute=True):
        run_operations()
    _work_and_approve(client, fake, study_id, writing, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        run_operations()
    ops = ProviderOperation.objects.filter(
        kind=OperationKind.CREATE_STUDY, payload__stage_id=linking.pk
    )
    hit_ids = [h for op in ops for h in op.payload["hit_ids"]]
    assert len(hit_ids) == len(set(hit_ids)) == HIT.objects.filter(stage=linking).count()
    # The second batch became more places on the stage's one study (PATCH), with its codes.
    assert len(ops) == 2
    (linking_study,) = _studies_of(linking)
    first_batch, second = ops.order_by("pk").first(), ops.order_by("pk").last()
    assert first_batch is not None
    assert second is not None
    assert second.result is not None
    assert second.payload["grow_study_id"] == linking_study
    assert second.payload["codes"] == first_batch.payload["codes"]
    assert second.result["grown"] is True
    assert fake.state.studies[linking_study]["total_available_places"] == sum(
        HIT.objects.filter(stage=linking).values_list("max_assignments", flat=True)
    )
    assert len(fake.calls("PATCH", rf"/api/v1/studies/{linking_study}/")) == 1
    assert len(fake.state.studies) == 2  # writing's and linking's, nothing more


@pytest.mark.parametrize("finished", ["AWAITING REVIEW", "COMPLETED"])
def test_a_finished_study_is_grown_and_reactivated_not_replaced(
    pipeline, fake, client, settings, django_capture_on_commit_callbacks, finished
):
    settings.PAID_HANDOFF_BATCH_PLACES = 1
    _campaign, writing, linking = pipeline
    study_id, _ = publish(writing, fake)
    _work_and_approve(client, fake, study_id, writing, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        run_operations()
    (first,) = _studies_of(linking)
    places = fake.state.studies[first]["total_available_places"]
    # All places taken and reviewed (or stopped): the study has finished on Prolific.
    fake.state.studies[first]["status"] = finished
    _work_and_approve(client, fake, study_id, writing, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        run_operations()
    assert _studies_of(linking) == {first}  # one study per stage
    assert fake.state.studies[first]["status"] == "ACTIVE"  # more places reactivated it
    assert fake.state.studies[first]["total_available_places"] > places
    last = ProviderOperation.objects.filter(
        kind=OperationKind.CREATE_STUDY, payload__stage_id=linking.pk
    ).latest("pk")
    assert last.result is not None
    assert last.result["grown"]
    assert last.result["status"] == "ACTIVE"
    assert len(fake.calls("POST", r"/api/v1/studies/$")) == 2  # writing's and linking's


def test_pause_reaches_a_study_whose_create_was_still_running(prolific_stage, fake):
    campaign, stage = prolific_stage
    op = stage_provider_publish(stage=stage)
    assert op is not None
    # Paused before the create operation ran: there was no study to pause yet.
    campaign = campaign_start(campaign=campaign, to_state=CampaignState.PAUSED)
    assert campaign.state == CampaignState.PAUSED
    run_operations()  # the create, then the pause it asks for
    run_operations()
    (study_id,) = _studies_of(stage)
    assert fake.state.studies[study_id]["status"] == "PAUSED"
    actions = [c.body["action"] for c in fake.calls("POST", r"/api/v1/studies/.*/transition/")]
    assert actions.count("PAUSE") == 1


def test_completed_before_the_create_ran_stops_the_study(prolific_stage, fake):
    campaign, stage = prolific_stage
    stage_provider_publish(stage=stage)
    campaign_transition(campaign=campaign, to_state=CampaignState.LIVE)
    campaign_start(campaign=campaign, to_state=CampaignState.COMPLETED)
    run_operations()
    run_operations()
    (study_id,) = _studies_of(stage)
    assert fake.state.studies[study_id]["status"] in {"COMPLETED", "AWAITING REVIEW"}
