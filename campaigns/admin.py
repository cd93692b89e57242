"""Django admin for the campaigns domain: a support tool, not a second way to run work.

What a service or a provider operation owns is read-only here, because an edit
in the admin would bypass its checks, its locks and the platform:
- HITs, assignments, ledger entries, provider operations and the local
  workforce's invite links, redemptions and grants are view-only;
- a campaign's state moves only through ``campaign_transition``;
- a worker's identity (provider, external id, pseudonym) and counters are fixed;
- campaigns, stages and items are created through the pages or the API, where
  the services derive the currency, positions and validate task-type data;
  a stage is editable only while its campaign is (draft or pilot).
A worker's external id is personal data: lists show the pseudonym.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from campaigns.design.services import EDITABLE_STATES, STAGE_SETTINGS_FIELDS
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
    LedgerEntry,
    LedgerStageTotal,
    LedgerWorkerTotal,
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
    Worker,
    WorkerBlock,
)
from campaigns.tasktypes import UnknownTaskTypeError, task_type_get


class ViewOnlyMixin:
    """No add, change or delete: rows are written by services and provider tasks only."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class StageInline(admin.TabularInline):
    model = Stage
    fields = ("position", "name", "task_type", "reward", "assignments_per_hit", "items_per_hit")
    readonly_fields = fields
    extra = 0
    show_change_link = True
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Stages are added through stage_add, which validates the task-type config.
        return False


class NoAddMixin:
    """Created through a service (pages, API, commands), which derives and checks fields."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Campaign)
class CampaignAdmin(NoAddMixin, admin.ModelAdmin):
    list_display = (
        "name",
        "slug",
        "owner",
        "provider",
        "sandbox",
        "state",
        "budget_cap",
        "created_at",
    )
    list_filter = ("state", "provider", "sandbox")
    search_fields = ("name", "slug", "owner__username")
    list_select_related = ("owner",)
    readonly_fields = ("state", "state_changed_at", "currency", "created_at", "updated_at")
    raw_id_fields = ("owner",)
    filter_horizontal = ("collaborators",)
    date_hierarchy = "created_at"
    inlines = (StageInline,)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # The provider decides the currency and where HITs live; it is fixed once created.
        fields = tuple(self.readonly_fields)
        return (*fields, "provider") if obj is not None else fields


class StageAdminForm(forms.ModelForm):
    class Meta:
        model = Stage
        # campaign and task_type are absent: fixed once the stage exists (see StageAdmin).
        # The settings a requester edits on the stage page (STAGE_SETTINGS_FIELDS), and
        # the pipeline's links.
        fields = ("name", "position", *STAGE_SETTINGS_FIELDS, "next_stage", "handoff")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        try:
            problems = task_type_get(self.instance.task_type).validate_config(
                cleaned.get("config") or {}
            )
        except UnknownTaskTypeError as exc:
            raise forms.ValidationError(str(exc)) from exc
        for problem in problems:
            self.add_error("config", str(problem))
        return cleaned


@admin.register(Stage)
class StageAdmin(NoAddMixin, admin.ModelAdmin):
    form = StageAdminForm
    list_display = (
        "name",
        "campaign",
        "position",
        "task_type",
        "reward",
        "assignments_per_hit",
        "items_per_hit",
    )
    list_filter = ("task_type", "campaign__state")
    search_fields = ("name", "campaign__name", "campaign__slug")
    list_select_related = ("campaign",)
    raw_id_fields = ("campaign", "next_stage")
    readonly_fields = ("created_at",)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # Items, HITs and answers were shaped by the task type: it cannot change afterwards.
        fields = tuple(self.readonly_fields)
        return (*fields, "campaign", "task_type") if obj is not None else fields

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Same rule as stage_update: once work is published, the stage is a record.
        if obj is not None and obj.campaign.state not in EDITABLE_STATES:
            return False
        return super().has_change_permission(request, obj)


class ItemAdminForm(forms.ModelForm):
    class Meta:
        model = Item
        fields = ("external_id", "data", "gold", "status")

    def clean_data(self) -> Any:
        data = self.cleaned_data.get("data")
        stage = self.instance.stage if self.instance.stage_id else None
        if stage is not None:
            try:
                problems = task_type_get(stage.task_type).validate_item(data)
            except UnknownTaskTypeError as exc:
                raise forms.ValidationError(str(exc)) from exc
            if problems:
                raise forms.ValidationError([str(p) for p in problems])
        return data


@admin.register(Item)
class ItemAdmin(NoAddMixin, admin.ModelAdmin):
    form = ItemAdminForm
    list_display = ("external_id", "stage", "status", "source", "is_gold", "created_at")
    list_filter = ("status", "source", "stage__task_type")
    search_fields = ("external_id", "stage__name", "stage__campaign__slug")
    list_select_related = ("stage", "stage__campaign")
    raw_id_fields = ("stage", "source_assignment")
    readonly_fields = ("created_at",)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # Provenance is a record of what happened; it is not edited.
        fields = tuple(self.readonly_fields)
        if obj is None:
            return fields
        return (*fields, "stage", "source", "source_assignment", "upload_batch")

    @admin.display(boolean=True, description="gold")
    def is_gold(self, obj: Item) -> bool:
        return obj.is_gold


class HITItemInline(ViewOnlyMixin, admin.TabularInline):
    model = HITItem
    fields = ("position", "item")
    readonly_fields = fields
    extra = 0


@admin.register(HIT)
class HITAdmin(ViewOnlyMixin, admin.ModelAdmin):
    list_display = (
        "id",
        "stage",
        "provider",
        "provider_hit_id",
        "status",
        "max_assignments",
        "reward",
        "published_at",
        "expires_at",
    )
    list_filter = ("status", "provider")
    search_fields = ("=id", "provider_hit_id", "stage__name", "stage__campaign__slug")
    list_select_related = ("stage", "stage__campaign")
    inlines = (HITItemInline,)


@admin.register(Assignment)
class AssignmentAdmin(ViewOnlyMixin, admin.ModelAdmin):
    list_display = (
        "id",
        "hit",
        "worker",
        "provider",
        "status",
        "accepted_at",
        "submitted_at",
        "work_seconds",
        "decision_source",
    )
    list_filter = ("status", "provider", "decision_source")
    search_fields = ("=id", "provider_assignment_id", "worker__pseudonym")
    list_select_related = ("hit", "worker")
    date_hierarchy = "accepted_at"


@admin.register(Worker)
class WorkerAdmin(admin.ModelAdmin):
    # The pseudonym names the worker in lists; the external id shows on the worker's own page.
    list_display = (
        "pseudonym",
        "provider",
        "user",
        "submitted_count",
        "approved_count",
        "rejected_count",
        "created_at",
    )
    list_filter = ("provider",)
    # Exact match only: finds a worker who quotes their id, without listing look-alikes.
    search_fields = ("pseudonym", "=external_id", "user__username")
    list_select_related = ("user",)
    raw_id_fields = ("user",)
    readonly_fields = (
        "pseudonym",
        "submitted_count",
        "approved_count",
        "rejected_count",
        "created_at",
    )

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # The pseudonym is derived from provider and external id: changing them forks identity.
        fields = tuple(self.readonly_fields)
        return ("provider", "external_id", *fields) if obj is not None else fields


@admin.register(CampaignWorker)
class CampaignWorkerAdmin(admin.ModelAdmin):
    list_display = ("worker", "campaign", "arm", "joined_at")
    list_filter = ("arm",)
    search_fields = ("worker__pseudonym", "campaign__name", "campaign__slug")
    list_select_related = ("worker", "campaign")
    raw_id_fields = ("worker", "campaign")


@admin.register(WorkerBlock)
class WorkerBlockAdmin(admin.ModelAdmin):
    list_display = ("worker", "requester", "short_reason", "created_at", "lifted_at")
    list_filter = (("lifted_at", admin.EmptyFieldListFilter),)
    search_fields = ("worker__pseudonym", "requester__username", "reason")
    list_select_related = ("worker", "requester")
    raw_id_fields = ("worker", "requester")
    readonly_fields = ("created_at",)

    @admin.display(description="reason")
    def short_reason(self, obj: WorkerBlock) -> str:
        return obj.reason if len(obj.reason) <= 80 else f"{obj.reason[:77]}…"


@admin.register(QualificationType)
class QualificationTypeAdmin(admin.ModelAdmin):
    list_display = ("name", "owner", "kind", "provider", "provider_qualification_id", "created_at")
    list_filter = ("kind", "provider")
    search_fields = ("name", "owner__username", "provider_qualification_id")
    list_select_related = ("owner",)
    raw_id_fields = ("owner",)
    # Set when the provider creates the type; a hand-edited id would point at another one.
    readonly_fields = ("provider_qualification_id", "created_at")


@admin.register(QualificationGrant)
class QualificationGrantAdmin(admin.ModelAdmin):
    list_display = ("qualification_type", "worker", "value", "source", "granted_at", "revoked_at")
    list_filter = ("qualification_type__kind", ("revoked_at", admin.EmptyFieldListFilter))
    search_fields = ("worker__pseudonym", "qualification_type__name")
    list_select_related = ("qualification_type", "worker")
    raw_id_fields = ("qualification_type", "worker")
    readonly_fields = ("granted_at",)


@admin.register(LedgerEntry)
class LedgerEntryAdmin(ViewOnlyMixin, admin.ModelAdmin):
    list_display = (
        "created_at",
        "campaign",
        "stage",
        "kind",
        "status",
        "amount",
        "currency",
        "worker",
        "key",
    )
    list_filter = ("kind", "status", "currency")
    search_fields = ("key", "memo", "campaign__name", "campaign__slug", "worker__pseudonym")
    list_select_related = ("campaign", "stage", "stage__campaign", "worker")
    date_hierarchy = "created_at"


@admin.register(ProviderOperation)
class ProviderOperationAdmin(ViewOnlyMixin, admin.ModelAdmin):
    list_display = (
        "created_at",
        "provider",
        "kind",
        "state",
        "idempotency_key",
        "campaign",
        "attempts",
        "next_attempt_at",
        "completed_at",
    )
    list_filter = ("state", "provider", "kind")
    search_fields = ("idempotency_key", "campaign__name", "campaign__slug", "last_error")
    list_select_related = ("campaign",)
    date_hierarchy = "created_at"


@admin.register(InviteLink)
class InviteLinkAdmin(ViewOnlyMixin, admin.ModelAdmin):
    # Created and revoked through campaigns.work.invites, which signs the URL's token.
    list_display = (
        "id",
        "campaign",
        "stage",
        "created_by",
        "created_at",
        "expires_at",
        "revoked_at",
        "use_count",
        "max_uses",
    )
    list_filter = (("revoked_at", admin.EmptyFieldListFilter),)
    search_fields = ("=id", "campaign__name", "campaign__slug")
    list_select_related = ("campaign", "stage", "stage__campaign", "created_by")


@admin.register(InviteRedemption)
class InviteRedemptionAdmin(ViewOnlyMixin, admin.ModelAdmin):
    list_display = ("worker", "invite", "created_at")
    search_fields = ("worker__pseudonym", "invite__campaign__slug")
    list_select_related = ("worker", "invite")


@admin.register(LocalGrant)
class LocalGrantAdmin(ViewOnlyMixin, admin.ModelAdmin):
    # Granted through campaigns.work.invites.local_grant_add, which checks the provider.
    list_display = ("user", "campaign", "granted_by", "created_at")
    search_fields = ("user__username", "campaign__name", "campaign__slug")
    list_select_related = ("user", "campaign", "granted_by")


@admin.register(DetachedAnswer)
class DetachedAnswerAdmin(ViewOnlyMixin, admin.ModelAdmin):
    # Anonymous answers: deliberately no worker, no assignment, no time of day.
    list_display = ("id", "stage", "submitted_on")
    list_filter = ("submitted_on",)
    list_select_related = ("stage",)


@admin.register(ProviderCredential)
class ProviderCredentialAdmin(ViewOnlyMixin, admin.ModelAdmin):
    # Set by the campaign owner (campaigns.platforms.credentials); the ciphertext stays out.
    list_display = ("campaign", "provider", "hints", "updated_by", "updated_at")
    fields = ("campaign", "provider", "hints", "updated_by", "updated_at")
    list_select_related = ("campaign", "updated_by")


@admin.register(ModelEndpoint)
class ModelEndpointAdmin(ViewOnlyMixin, admin.ModelAdmin):
    # Set by its owner (campaigns.assist.endpoints); the key's ciphertext stays out.
    list_display = ("name", "owner", "kind", "model", "key_hint", "timeout_seconds", "concurrency")
    fields = (
        "owner",
        "name",
        "kind",
        "base_url",
        "model",
        "key_hint",
        *ModelEndpoint.TUNING_FIELDS,
        "created_at",
        "updated_at",
    )
    list_select_related = ("owner",)


@admin.register(ModelCall)
class ModelCallAdmin(ViewOnlyMixin, admin.ModelAdmin):
    # Written by campaigns.assist.calls (model_call_request, the assist.model_call_run task).
    list_display = (
        "id",
        "endpoint",
        "campaign",
        "purpose",
        "status",
        "attempts",
        "model_id",
        "cost",
        "created_at",
    )
    list_filter = ("status", "purpose")
    raw_id_fields = ("campaign", "stage", "item", "assignment")
    list_select_related = ("endpoint", "campaign")


@admin.register(AdversarialTry)
class AdversarialTryAdmin(ViewOnlyMixin, admin.ModelAdmin):
    # Written by campaigns.assist.adversarial (tries, marks, verification) and judging.
    list_display = ("id", "stage", "try_number", "fooled", "verified", "judged_by", "created_at")
    list_filter = ("fooled", "verified", "judged_by", "model_unavailable")
    raw_id_fields = ("assignment", "item", "stage", "worker", "model_call")
    list_select_related = ("stage",)


@admin.register(StageAssignmentCount)
class StageAssignmentCountAdmin(ViewOnlyMixin, admin.ModelAdmin):
    # Kept by the database's triggers; rebuilt by ``manage.py counters_rebuild``.
    list_display = ("stage", "status", "n", "changes")
    list_filter = ("status",)
    raw_id_fields = ("stage",)
    list_select_related = ("stage",)

    def get_queryset(self, request: HttpRequest) -> Any:
        # Its default manager leaves the rows out of dumpdata; the admin shows them all.
        return StageAssignmentCount.objects.select_related("stage")


class _DeltasAdmin(ViewOnlyMixin, admin.ModelAdmin):
    """The dashboard's counters (migration 0018): append-only deltas, folded every minute
    (``campaigns.summaries_compact``); a group's value is the sum of its rows."""

    def get_queryset(self, request: HttpRequest) -> Any:
        # Their default manager leaves the trigger-kept rows out of dumpdata.
        return self.model.objects.all()


@admin.register(StageItemCount)
class StageItemCountAdmin(_DeltasAdmin):
    list_display = ("id", "stage", "status", "n")
    list_filter = ("status",)
    raw_id_fields = ("stage",)


@admin.register(StageHITCount)
class StageHITCountAdmin(_DeltasAdmin):
    list_display = ("id", "stage", "status", "n", "places", "free", "open", "free_reward")
    list_filter = ("status",)
    raw_id_fields = ("stage",)


@admin.register(StageHeldWork)
class StageHeldWorkAdmin(_DeltasAdmin):
    list_display = ("id", "stage", "n", "reward")
    raw_id_fields = ("stage",)


@admin.register(StageSubmissionMinute)
class StageSubmissionMinuteAdmin(_DeltasAdmin):
    list_display = ("id", "stage", "minute", "n")
    raw_id_fields = ("stage",)


@admin.register(StageWorkerCount)
class StageWorkerCountAdmin(_DeltasAdmin):
    list_display = ("id", "stage", "worker", "status", "n", "folded")
    list_filter = ("status", "folded")
    raw_id_fields = ("stage", "worker")


@admin.register(StageAssignmentJournal)
class StageAssignmentJournalAdmin(_DeltasAdmin):
    list_display = (
        "id",
        "stage",
        "worker",
        "old_status",
        "new_status",
        "held",
        "reward",
        "old_minute",
        "new_minute",
    )
    raw_id_fields = ("stage", "worker")


@admin.register(LedgerStageTotal)
class LedgerStageTotalAdmin(_DeltasAdmin):
    list_display = ("id", "campaign", "stage", "kind", "status", "n", "amount")
    list_filter = ("kind", "status")
    raw_id_fields = ("campaign", "stage")


@admin.register(LedgerWorkerTotal)
class LedgerWorkerTotalAdmin(_DeltasAdmin):
    list_display = ("id", "campaign", "worker", "kind", "status", "n", "amount")
    list_filter = ("kind", "status")
    raw_id_fields = ("campaign", "worker")


@admin.register(CampaignWorkerQuality)
class CampaignWorkerQualityAdmin(ViewOnlyMixin, admin.ModelAdmin):
    # A snapshot the workers table's reader schedules (campaigns.worker_quality_refresh).
    list_display = ("id", "campaign", "worker", "gold_accuracy", "agreement", "computed_at")
    raw_id_fields = ("campaign", "worker")


@admin.register(StageAssignmentCountDelta)
class StageAssignmentCountDeltaAdmin(ViewOnlyMixin, admin.ModelAdmin):
    # Appended by the database's triggers (PostgreSQL), folded into the counters by
    # campaigns.work.counts.stage_assignment_counts_compact; a count is both.
    list_display = ("stage", "status", "n", "changes")
    list_filter = ("status",)
    raw_id_fields = ("stage",)

    def get_queryset(self, request: HttpRequest) -> Any:
        return StageAssignmentCountDelta.objects.all()


@admin.register(IdempotencyRecord)
class IdempotencyRecordAdmin(ViewOnlyMixin, admin.ModelAdmin):
    # Written by the API's Idempotency-Key handling; purged after API_IDEMPOTENCY_TTL_HOURS.
    list_display = ("user", "method", "path", "response_status", "created_at")
    search_fields = ("user__username", "path")
    list_select_related = ("user",)


@admin.register(ExportAudit)
class ExportAuditAdmin(ViewOnlyMixin, admin.ModelAdmin):
    # Written by campaigns.exports.services for every export (before it starts when it
    # shows real worker ids; completed with what it contained).
    list_display = (
        "campaign",
        "export_format",
        "revealed_worker_ids",
        "dataset_version",
        "user",
        "via",
        "created_at",
        "completed_at",
    )
    list_filter = ("revealed_worker_ids", "export_format")
    search_fields = ("campaign__slug", "user__username", "checksum", "dataset_version")
    list_select_related = ("campaign", "user")


@admin.register(Datasheet)
class DatasheetAdmin(ViewOnlyMixin, admin.ModelAdmin):
    # Written by campaigns.exports.datasheet_edit from the campaign's datasheet page.
    list_display = ("campaign", "updated_by", "updated_at")
    search_fields = ("campaign__slug",)
    list_select_related = ("campaign", "updated_by")


@admin.register(ProviderSyncCursor)
class ProviderSyncCursorAdmin(ViewOnlyMixin, admin.ModelAdmin):
    # Written by the MTurk sync (campaigns.platforms.mturk.sync); where each HIT's read stands.
    list_display = ("provider", "scope", "updated_at")
    list_filter = ("provider",)
    search_fields = ("scope",)


@admin.register(Job)
class JobAdmin(ViewOnlyMixin, admin.ModelAdmin):
    # Background exports and uploads (campaigns.jobs): status, progress and what the
    # finished file holds (rows, bytes, SHA-256).
    list_display = ("id", "campaign", "kind", "export_format", "status", "rows_done", "created_at")
    list_filter = ("kind", "status", "export_format")
    search_fields = ("campaign__slug", "checksum")
    list_select_related = ("campaign",)
