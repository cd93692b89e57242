"""The admin: every campaigns model has a page, and the records services own stay read-only."""

from __future__ import annotations

from typing import cast

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.auth.models import User
from django.test import Client, RequestFactory
from django.urls import reverse
from django.utils import timezone

from campaigns.design.services import campaign_transition
from campaigns.models import (
    HIT,
    AdversarialTry,
    Assignment,
    Campaign,
    CampaignWorker,
    CampaignWorkerQuality,
    Datasheet,
    DetachedAnswer,
    ExportAudit,
    HITItem,
    IdempotencyRecord,
    InviteLink,
    InviteRedemption,
    Item,
    Job,
    JobKind,
    LedgerEntry,
    LocalGrant,
    ModelCall,
    ModelEndpoint,
    ProviderCredential,
    ProviderOperation,
    ProviderSyncCursor,
    QualificationGrant,
    QualificationType,
    Stage,
    StageAssignmentCount,
    StageAssignmentCountDelta,
    StageAssignmentJournal,
    StageHeldWork,
    StageHITCount,
    StageItemCount,
    StageSubmissionMinute,
    StageWorkerCount,
    WorkerBlock,
)
from campaigns.platforms.credentials import credentials_encrypt
from campaigns.work.counts import stage_assignment_counts_compact
from tests.factories import (
    AssignmentFactory,
    ItemFactory,
    LedgerEntryFactory,
    ProviderOperationFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

EXTERNAL_ID = "A1SECRETWORKERID"
# Shown only inside their parent's page.
INLINE_ONLY = {HITItem}
VIEW_ONLY = [
    ModelEndpoint,
    ModelCall,
    HIT,
    Assignment,
    LedgerEntry,
    ProviderOperation,
    InviteLink,
    InviteRedemption,
    LocalGrant,
    StageAssignmentCount,
    StageAssignmentCountDelta,
]


@pytest.fixture
def superuser():
    return UserFactory(username="root", is_staff=True, is_superuser=True)


@pytest.fixture
def admin_client(superuser) -> Client:
    client = Client()
    client.force_login(superuser)
    return client


@pytest.fixture
def rows(requester):
    """One row of every model, so list and change pages render real data."""
    # factory_boy's calls are typed as returning the factory; they return model instances.
    assignment = cast(
        Assignment,
        AssignmentFactory(
            worker__provider="mturk",
            worker__external_id=EXTERNAL_ID,
            hit__stage__campaign__owner=requester,
        ),
    )
    hit = assignment.hit
    item = cast(Item, ItemFactory(stage=hit.stage))
    HITItem.objects.create(hit=hit, item=item, position=0)
    campaign, worker = hit.stage.campaign, assignment.worker
    CampaignWorker.objects.create(campaign=campaign, worker=worker, arm="BASELINE")
    WorkerBlock.objects.create(requester=requester, worker=worker, reason="copy-pasted answers")
    qualification = QualificationType.objects.create(owner=requester, name="Quiz", kind="quiz")
    QualificationGrant.objects.create(qualification_type=qualification, worker=worker)
    LedgerEntryFactory(campaign=campaign, worker=worker)  # and its running totals
    # The stage counters' deltas (PostgreSQL's triggers made some; SQLite keeps none).
    StageItemCount.objects.create(stage=hit.stage, status="pending", n=0)
    StageHITCount.objects.create(stage=hit.stage, status="pending", n=0)
    StageHeldWork.objects.create(stage=hit.stage, n=0)
    StageSubmissionMinute.objects.create(stage=hit.stage, minute=timezone.now(), n=0)
    StageWorkerCount.objects.create(stage=hit.stage, worker=worker, status="accepted", n=0)
    CampaignWorkerQuality.objects.create(
        campaign=campaign, worker=worker, fingerprint="f", computed_at=timezone.now()
    )
    ProviderOperationFactory(campaign=campaign)
    invite = InviteLink.objects.create(
        campaign=campaign, created_by=requester, expires_at=timezone.now()
    )
    second = cast(Assignment, AssignmentFactory(hit=hit))
    InviteRedemption.objects.create(invite=invite, worker=second.worker)
    LocalGrant.objects.create(campaign=campaign, user=cast(User, UserFactory(username="annotator")))
    DetachedAnswer.objects.create(
        stage=hit.stage, answers={"responses": {"age": 30}}, submitted_on=timezone.now().date()
    )
    # Appended by PostgreSQL's triggers; SQLite's write none: one by hand (changes no count).
    StageAssignmentCountDelta.objects.create(stage=hit.stage, status="approved", n=0, changes=0)
    stage_assignment_counts_compact()  # PostgreSQL's counter rows, from its deltas
    StageAssignmentCountDelta.objects.create(stage=hit.stage, status="approved", n=0, changes=0)
    # After the compaction, which folds the journal (a row by hand: it moves nothing).
    StageAssignmentJournal.objects.create(stage=hit.stage, worker=worker)
    IdempotencyRecord.objects.create(
        user=requester,
        key="k-1",
        request_hash="0" * 64,
        method="POST",
        path="/api/v1/assignments/1/approve/",
        response_status=200,
        response_body={"status": "approved"},
        created_at=timezone.now(),
    )
    ExportAudit.objects.create(
        campaign=campaign, user=requester, export_format="jsonl", via="api", reason="audit"
    )
    Datasheet.objects.create(campaign=campaign, text="# Datasheet\n", updated_by=requester)
    Job.objects.create(kind=JobKind.EXPORT, campaign=campaign, export_format="jsonl")
    ProviderSyncCursor.objects.create(
        provider="mturk", scope="hit:3H000000000000000000000000001", state={"token": None}
    )
    endpoint = ModelEndpoint.objects.create(
        owner=campaign.owner, name="baseline", kind="baseline_bm25"
    )
    call = ModelCall.objects.create(
        endpoint=endpoint,
        campaign=campaign,
        stage=hit.stage,
        item=item,
        purpose="adversarial",
        idempotency_key="model:adversarial:admin",
    )
    AdversarialTry.objects.create(
        assignment=assignment,
        item=item,
        stage=hit.stage,
        worker=worker,
        try_number=1,
        question="Why is the sky blue?",
        model_call=call,
    )
    ProviderCredential.objects.create(
        campaign=campaign,
        provider="prolific",
        ciphertext=credentials_encrypt({"api_token": "admin-test-token-0123456789"}),
        hints={"api_token": "…6789"},
    )
    return {"assignment": assignment, "hit": hit, "worker": worker, "campaign": campaign}


def _models_needing_admin():
    return [m for m in apps.get_app_config("campaigns").get_models() if m not in INLINE_ONLY]


def test_every_campaigns_model_is_registered():
    missing = [m.__name__ for m in _models_needing_admin() if m not in admin.site._registry]
    assert missing == []


def test_every_changelist_and_change_page_renders(admin_client, rows):
    for model in _models_needing_admin():
        meta = model._meta
        changelist = reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")
        response = admin_client.get(changelist)
        assert response.status_code == 200, meta.model_name
        obj = model.objects.first()
        assert obj is not None, f"the rows fixture has no {meta.model_name}"
        change = reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[obj.pk])
        assert admin_client.get(change).status_code == 200, meta.model_name


def test_hit_page_shows_its_items_inline(admin_client, rows):
    hit = rows["hit"]
    response = admin_client.get(reverse("admin:campaigns_hit_change", args=[hit.pk]))
    assert response.status_code == 200
    assert str(hit.items.get()) in response.content.decode()


@pytest.mark.parametrize("model", VIEW_ONLY, ids=lambda m: m.__name__)
def test_view_only_models_cannot_be_added_changed_or_deleted(superuser, model):
    request = RequestFactory().get("/admin/")
    request.user = superuser
    model_admin = admin.site._registry[model]
    assert model_admin.has_view_permission(request)
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request)
    assert not model_admin.has_delete_permission(request)


@pytest.mark.parametrize("model", [LedgerEntry, ProviderOperation], ids=lambda m: m.__name__)
def test_money_records_have_no_add_page(admin_client, model):
    meta = model._meta
    assert (
        admin_client.get(reverse(f"admin:{meta.app_label}_{meta.model_name}_add")).status_code
        == 403
    )


def test_ledger_entry_post_changes_nothing(admin_client):
    entry = cast(LedgerEntry, LedgerEntryFactory())
    url = reverse("admin:campaigns_ledgerentry_change", args=[entry.pk])
    response = admin_client.post(url, {"amount": "999.00", "status": "paid", "key": entry.key})
    assert response.status_code == 403
    entry.refresh_from_db()
    assert str(entry.amount) == "1.00"


def test_worker_lists_show_the_pseudonym_not_the_external_id(admin_client, rows):
    worker = rows["worker"]
    for name in ("worker", "assignment", "ledgerentry", "campaignworker", "workerblock"):
        content = admin_client.get(reverse(f"admin:campaigns_{name}_changelist")).content.decode()
        assert worker.pseudonym in content, name
        assert EXTERNAL_ID not in content, name


def test_worker_can_be_found_by_exact_external_id(admin_client, rows):
    url = reverse("admin:campaigns_worker_changelist")
    found = admin_client.get(url, {"q": EXTERNAL_ID}).context["cl"].result_list
    assert list(found) == [rows["worker"]]
    partial = admin_client.get(url, {"q": EXTERNAL_ID[:-2]}).context["cl"].result_list
    assert list(partial) == []


def test_worker_identity_is_read_only(superuser, rows):
    request = RequestFactory().get("/admin/")
    request.user = superuser
    readonly = admin.site._registry[type(rows["worker"])].get_readonly_fields(
        request, rows["worker"]
    )
    assert {"provider", "external_id", "pseudonym"} <= set(readonly)


def test_campaign_state_is_not_editable(admin_client, rows):
    campaign = rows["campaign"]
    url = reverse("admin:campaigns_campaign_change", args=[campaign.pk])
    response = admin_client.get(url)
    form = response.context["adminform"].form
    assert "state" not in form.fields
    assert "provider" not in form.fields


def test_campaigns_stages_and_items_are_added_through_services(superuser):
    request = RequestFactory().get("/admin/")
    request.user = superuser
    for model in (Campaign, Stage, Item):
        assert not admin.site._registry[model].has_add_permission(request), model.__name__


def test_stage_of_live_campaign_is_read_only(superuser, rows):
    campaign = rows["campaign"]
    stage = campaign.stages.get()
    campaign_transition(campaign=campaign, to_state="live")
    request = RequestFactory().get("/admin/")
    request.user = superuser
    assert not admin.site._registry[Stage].has_change_permission(request, stage)


def test_stage_config_is_validated_by_its_task_type(admin_client, requester):
    from campaigns.design.services import campaign_create, stage_add

    campaign = campaign_create(owner=requester, name="Draft", slug="draft")
    stage = stage_add(campaign=campaign, name="Write", task_type="question_writing")
    url = reverse("admin:campaigns_stage_change", args=[stage.pk])
    form = admin_client.get(url).context["adminform"].form
    data = {k: v for k, v in form.initial.items() if v is not None}
    data.update(
        {
            "config": '{"questions_per_hit": 500}',
            "qualification_requirements": "[]",
            "escalation_rule": "{}",
            "review_rules": "[]",
            "bonus_rules": "[]",
            "handoff": "{}",
            "assignment_duration": "01:00:00",
            "lifetime": "7 00:00:00",
        }
    )
    response = admin_client.post(url, data)
    assert response.status_code == 200
    assert "config" in response.context["adminform"].form.errors
    stage.refresh_from_db()
    assert stage.config == {}
