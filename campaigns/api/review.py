"""Review endpoints: a campaign's assignments with their rule verdicts; approving or
rejecting them, one at a time or in bulk; overriding a decision already made. The
entity-link review queue is in ``link_review``; stage quality and labels in ``quality``.

Approve/reject decide submitted (and held) assignments only and answer 409 for one
decided the other way: turning a decision over is the explicit ``override``
endpoint, with a reason, through ``validation.services.assignment_override``.

Everything hangs off a campaign the user may see (owner, collaborators, staff);
anything else answers 404, exactly as if it did not exist. Workers appear by
their pseudonym only, never by their external id.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import django_filters
from django.db.models import QuerySet
from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import generics, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from campaigns.api.common import (
    BAD_INPUT,
    NOT_VISIBLE,
    StrictInputSerializer,
    authenticated_user,
    campaign_or_404,
    campaign_stage_or_400,
    validated,
)
from campaigns.api.idempotency import IDEMPOTENCY_CONFLICT, IDEMPOTENCY_KEY, idempotent
from campaigns.models import Assignment, AssignmentStatus, Campaign
from campaigns.work.decisions import assignment_decide
from campaigns.work.selectors.review import (
    assignment_list_for_campaign,
    assignment_list_visible,
    hit_items_by_hit,
    telemetry_summary,
)
from campaigns.work.submission import DECIDED_STATES
from qaportal.errors import DomainError, StateConflict
from validation.services import assignment_override

MAX_BULK_IDS = 500

DECISION_CONFLICT = OpenApiResponse(
    description="The assignment is not submitted, or was already decided the other way "
    "(turn a decision over with the override endpoint)."
)


class ItemBriefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    external_id = serializers.CharField()

    def get_fields(self) -> dict[str, serializers.Field]:
        # Added here: a declared field named "data" would shadow ``Serializer.data``.
        fields = super().get_fields()
        fields["data"] = serializers.JSONField(help_text="The item's input, as uploaded.")
        return fields


class TelemetrySummarySerializer(serializers.Serializer):
    keystrokes = serializers.IntegerField(allow_null=True)
    paste_count = serializers.IntegerField(allow_null=True)
    pasted_chars = serializers.IntegerField(
        allow_null=True, help_text="Total length of all pastes."
    )
    focus_losses = serializers.IntegerField(allow_null=True)
    visibility_changes = serializers.IntegerField(allow_null=True)


class RuleVerdictSerializer(serializers.Serializer):
    rule = serializers.CharField()
    decision = serializers.CharField(help_text="approve, reject, hold or skip.")
    reason = serializers.CharField(allow_blank=True)
    numbers = serializers.DictField(help_text="What the rule measured, by name.")


class RuleReviewSerializer(serializers.Serializer):
    """``review_details["review"]``: the review rules' combined decision and verdicts."""

    decision = serializers.CharField(help_text="approve, reject, hold or none.")
    reason = serializers.CharField(allow_blank=True)
    at = serializers.CharField(allow_null=True, help_text="When the rules ran (ISO 8601).")
    applied = serializers.BooleanField(
        help_text="False: a proposal for a paid provider's review, not applied here."
    )
    rules = RuleVerdictSerializer(many=True)

    def get_fields(self) -> dict[str, serializers.Field]:
        # Added here: a declared field named "source" would shadow ``Field.source``.
        fields = super().get_fields()
        fields["source"] = serializers.CharField(
            allow_blank=True, help_text='"rule:<name>[+<name>…]".'
        )
        return fields


class OverrideRecordSerializer(serializers.Serializer):
    at = serializers.CharField()
    by = serializers.IntegerField(help_text="The deciding user's id.")
    decision = serializers.CharField()
    reason = serializers.CharField(allow_blank=True)
    replaced = serializers.DictField(help_text="status, source, reason, review of before.")


def rule_review(details: Any) -> dict[str, Any] | None:
    """``review_details["review"]`` in the documented shape; None before any rule ran."""
    review = details.get("review") if isinstance(details, Mapping) else None
    if not isinstance(review, Mapping):
        return None
    return {
        "decision": str(review.get("decision", "")),
        "source": str(review.get("source", "")),
        "reason": str(review.get("reason", "")),
        "at": review.get("at"),
        "applied": bool(review.get("applied", True)),
        "rules": [
            {
                "rule": str(v.get("rule", "")),
                "decision": str(v.get("decision", "")),
                "reason": str(v.get("reason", "")),
                "numbers": dict(v.get("numbers") or {}),
            }
            for v in review.get("rules") or []
            if isinstance(v, Mapping)
        ],
    }


class AssignmentOutputSerializer(serializers.ModelSerializer):
    """An assignment as a reviewer sees it. ``worker`` is the pseudonym, never the external id."""

    stage = serializers.IntegerField(source="hit.stage_id", read_only=True)
    stage_name = serializers.CharField(source="hit.stage.name", read_only=True)
    hit = serializers.IntegerField(source="hit_id", read_only=True)
    worker = serializers.CharField(source="worker.pseudonym", read_only=True)
    answers = serializers.JSONField(read_only=True)
    telemetry = serializers.DictField(read_only=True, help_text="Sanitised page telemetry.")
    telemetry_summary = serializers.SerializerMethodField()
    llm_flag = serializers.JSONField(
        read_only=True,
        allow_null=True,
        help_text="Whether a language model may have written the answer, with the evidence "
        "(score, components, thresholds, the model's text per item); null until the stage's "
        "model answered, or when the stage does not ask (stage config llm_flag).",
    )
    items = serializers.SerializerMethodField()
    decided_by = serializers.CharField(
        source="decided_by.username", read_only=True, allow_null=True
    )
    held = serializers.SerializerMethodField(
        help_text="Submitted, and a review rule said hold: awaiting the requester."
    )
    review = serializers.SerializerMethodField()
    overrides = serializers.SerializerMethodField()

    class Meta:
        model = Assignment
        fields = [
            "id",
            "stage",
            "stage_name",
            "hit",
            "worker",
            "status",
            "items",
            "answers",
            "telemetry",
            "telemetry_summary",
            "llm_flag",
            "accepted_at",
            "deadline",
            "submitted_at",
            "work_seconds",
            "decided_at",
            "decided_by",
            "decision_source",
            "decision_reason",
            "feedback",
            "held",
            "review",
            "overrides",
        ]
        read_only_fields = fields

    def get_held(self, assignment: Assignment) -> bool:
        review = rule_review(assignment.review_details)
        return (
            assignment.status == AssignmentStatus.SUBMITTED
            and review is not None
            and review["decision"] == "hold"
        )

    @extend_schema_field(RuleReviewSerializer(allow_null=True))
    def get_review(self, assignment: Assignment) -> dict[str, Any] | None:
        return rule_review(assignment.review_details)

    @extend_schema_field(OverrideRecordSerializer(many=True))
    def get_overrides(self, assignment: Assignment) -> list[dict[str, Any]]:
        details = assignment.review_details
        found = details.get("overrides") if isinstance(details, Mapping) else None
        return [dict(o) for o in found or [] if isinstance(o, Mapping)]

    @extend_schema_field(TelemetrySummarySerializer)
    def get_telemetry_summary(self, assignment: Assignment) -> dict[str, int | None]:
        return telemetry_summary(assignment.telemetry)

    @extend_schema_field(ItemBriefSerializer(many=True))
    def get_items(self, assignment: Assignment) -> list[dict[str, Any]]:
        by_hit: dict[int, list[dict[str, Any]]] | None = self.context.get("items_by_hit")
        if by_hit is None:
            by_hit = hit_items_by_hit(hit_ids=[assignment.hit_id])
        return by_hit.get(assignment.hit_id, [])


def _assignment_out(assignment: Assignment) -> dict[str, Any]:
    fresh = (
        Assignment.objects.select_related("worker", "hit__stage", "decided_by")
        .filter(pk=assignment.pk)
        .get()
    )
    return dict(AssignmentOutputSerializer(fresh).data)


class AssignmentFilter(django_filters.FilterSet):
    """Filters beside status, stage and held (which answer 400 for an unknown stage)."""

    worker = django_filters.CharFilter(field_name="worker__pseudonym", help_text="Pseudonym.")
    submitted_after = django_filters.IsoDateTimeFilter(
        field_name="submitted_at", lookup_expr="gte", help_text="ISO 8601, inclusive."
    )
    submitted_before = django_filters.IsoDateTimeFilter(
        field_name="submitted_at", lookup_expr="lt", help_text="ISO 8601, exclusive."
    )
    hit = django_filters.NumberFilter(field_name="hit_id")

    class Meta:
        model = Assignment
        fields = ["worker", "submitted_after", "submitted_before", "hit"]


class CampaignAssignmentListApi(generics.ListAPIView):
    """The campaign's assignments, oldest submission first; filter by status, stage,
    held, worker pseudonym, HIT and submission time; order by ``submitted_at``,
    ``accepted_at``, ``decided_at``, ``work_seconds``, ``id`` (``-`` for descending)."""

    serializer_class = AssignmentOutputSerializer
    filterset_class = AssignmentFilter
    ordering_fields = ["submitted_at", "accepted_at", "decided_at", "work_seconds", "id"]

    class AssignmentFilterSerializer(serializers.Serializer):
        status = serializers.ChoiceField(
            choices=AssignmentStatus.choices, required=False, help_text="e.g. submitted"
        )
        stage = serializers.IntegerField(required=False, help_text="A stage of this campaign.")
        held = serializers.BooleanField(
            required=False,
            allow_null=True,
            default=None,
            help_text="true: only submitted assignments a rule held; false: none of those.",
        )

    def get_queryset(self) -> QuerySet[Assignment]:
        if getattr(self, "swagger_fake_view", False):
            return Assignment.objects.none()
        campaign = campaign_or_404(request=self.request, slug=self.kwargs["slug"])
        filters = validated(self.AssignmentFilterSerializer, self.request.query_params)
        stage = campaign_stage_or_400(campaign=campaign, stage_id=filters.get("stage"))
        assignments = assignment_list_for_campaign(
            campaign=campaign, status=filters.get("status"), stage=stage
        )
        held = filters.get("held")
        hold = {"status": AssignmentStatus.SUBMITTED, "review_details__review__decision": "hold"}
        if held is True:
            assignments = assignments.filter(**hold)
        elif held is False:
            assignments = assignments.exclude(**hold)
        return assignments

    @extend_schema(parameters=[AssignmentFilterSerializer])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        queryset = self.filter_queryset(self.get_queryset())
        page = self.paginate_queryset(queryset)
        rows = list(page if page is not None else queryset)
        context = {
            **self.get_serializer_context(),
            "items_by_hit": hit_items_by_hit(hit_ids=[a.hit_id for a in rows]),
        }
        data = AssignmentOutputSerializer(rows, many=True, context=context).data
        return self.get_paginated_response(data) if page is not None else Response(data)


def _assignment_or_404(request: Request, assignment_id: int) -> Assignment:
    assignment = assignment_list_visible(user=request.user).filter(pk=assignment_id).first()
    if assignment is None:
        raise Http404("No assignment with this id.")
    return assignment


def _decide(
    *, assignment: Assignment, decision: str, request: Request, reason: str, feedback: str
) -> bool:
    """Apply one decision; True if it changed something, False if it was already so.

    ``StateConflict`` (409) when the assignment is not submitted or was decided
    the other way. The services lock the row; this first read only words the answer.
    """
    target = AssignmentStatus.APPROVED if decision == "approve" else AssignmentStatus.REJECTED
    if assignment.status == target:
        return False
    if assignment.status != AssignmentStatus.SUBMITTED:
        raise StateConflict(
            f"Assignment {assignment.pk} is {assignment.status}; only a submitted "
            "assignment can be decided.",
            errors={"status": [assignment.status]},
        )
    user = authenticated_user(request)
    try:
        assignment_decide(
            assignment=assignment,
            approve=decision == "approve",
            decided_by=user,
            source="requester",
            reason=reason,
            feedback=feedback if decision != "approve" else "",
        )
    except DomainError as exc:
        # Decided by someone else between our read and the service's lock.
        if isinstance(exc.errors, dict) and "status" in exc.errors:
            raise StateConflict(str(exc), errors=exc.errors) from exc
        raise
    return True


class _AssignmentDecisionApi(APIView):
    """Approve or reject (``decision``) a submitted local assignment from the input
    ``input_serializer`` reads: ``reason`` and, for a rejection, ``feedback``."""

    decision: str
    input_serializer: type[StrictInputSerializer]

    def decide(self, request: Request, assignment_id: int) -> Response:
        assignment = _assignment_or_404(request, assignment_id)
        data = validated(self.input_serializer, request.data)
        _decide(
            assignment=assignment,
            decision=self.decision,
            request=request,
            reason=data["reason"],
            feedback=data.get("feedback", ""),
        )
        return Response(_assignment_out(assignment))


# What approving or rejecting one assignment answers.
DECISION_RESPONSES = {
    200: AssignmentOutputSerializer,
    400: BAD_INPUT,
    404: NOT_VISIBLE,
    422: IDEMPOTENCY_CONFLICT,
    409: DECISION_CONFLICT,
}


class AssignmentApproveApi(_AssignmentDecisionApi):
    """Approve a submitted local assignment; its answer is handed on to the next stage.

    Idempotent: approving an approved assignment answers 200 and changes nothing.
    """

    class ApproveInputSerializer(StrictInputSerializer):
        reason = serializers.CharField(allow_blank=True, default="", max_length=5000)

    decision = "approve"
    input_serializer = ApproveInputSerializer

    @extend_schema(
        parameters=[IDEMPOTENCY_KEY],
        request=ApproveInputSerializer,
        responses=DECISION_RESPONSES,
    )
    @idempotent
    def post(self, request: Request, assignment_id: int) -> Response:
        return self.decide(request, assignment_id)


class AssignmentRejectApi(_AssignmentDecisionApi):
    """Reject a submitted local assignment; ``feedback`` is what the worker is shown.

    Idempotent: rejecting a rejected assignment answers 200 and changes nothing.
    """

    class RejectInputSerializer(StrictInputSerializer):
        reason = serializers.CharField(max_length=5000, help_text="Why; kept with the decision.")
        feedback = serializers.CharField(
            allow_blank=True, default="", max_length=5000, help_text="Shown to the worker."
        )

    decision = "reject"
    input_serializer = RejectInputSerializer

    @extend_schema(
        parameters=[IDEMPOTENCY_KEY],
        request=RejectInputSerializer,
        responses=DECISION_RESPONSES,
    )
    @idempotent
    def post(self, request: Request, assignment_id: int) -> Response:
        return self.decide(request, assignment_id)


class BulkReviewResultSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    result = serializers.ChoiceField(
        choices=["decided", "already_decided", "not_found", "refused"],
        help_text="refused: not submitted, or the service refused (see detail).",
    )
    status = serializers.CharField(allow_null=True, help_text="The assignment's status now.")
    detail = serializers.CharField(allow_blank=True)


class BulkReviewOutputSerializer(serializers.Serializer):
    results = BulkReviewResultSerializer(many=True)


class CampaignBulkReviewApi(APIView):
    """One decision for several assignments of the campaign, reported per id.

    Each assignment is decided on its own (no all-or-nothing): ``decided``,
    ``already_decided`` (either way; nothing changed), ``not_found`` (not an
    assignment of this campaign) or ``refused`` (not submitted, or not local).
    """

    class BulkReviewInputSerializer(StrictInputSerializer):
        ids = serializers.ListField(
            child=serializers.IntegerField(min_value=1), min_length=1, max_length=MAX_BULK_IDS
        )
        decision = serializers.ChoiceField(choices=["approve", "reject"])
        reason = serializers.CharField(
            allow_blank=True, default="", max_length=5000, help_text="Required to reject."
        )
        feedback = serializers.CharField(
            allow_blank=True, default="", max_length=5000, help_text="Shown to rejected workers."
        )

        def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
            if attrs["decision"] == "reject" and not attrs["reason"].strip():
                raise serializers.ValidationError({"reason": ["A rejection needs a reason."]})
            return attrs

    @extend_schema(
        parameters=[IDEMPOTENCY_KEY],
        request=BulkReviewInputSerializer,
        responses={
            200: BulkReviewOutputSerializer,
            400: BAD_INPUT,
            404: NOT_VISIBLE,
            422: IDEMPOTENCY_CONFLICT,
        },
    )
    @idempotent
    def post(self, request: Request, slug: str) -> Response:
        campaign: Campaign = campaign_or_404(request=request, slug=slug)
        data = validated(self.BulkReviewInputSerializer, request.data)
        ids = list(dict.fromkeys(data["ids"]))
        found = {
            a.pk: a for a in assignment_list_for_campaign(campaign=campaign).filter(pk__in=ids)
        }
        results = []
        for assignment_id in ids:
            assignment = found.get(assignment_id)
            if assignment is None:
                results.append(
                    {"id": assignment_id, "result": "not_found", "status": None, "detail": ""}
                )
                continue
            try:
                changed = _decide(
                    assignment=assignment,
                    decision=data["decision"],
                    request=request,
                    reason=data["reason"],
                    feedback=data["feedback"],
                )
            except StateConflict as exc:
                assignment.refresh_from_db(fields=["status"])
                result = "already_decided" if assignment.status in DECIDED_STATES else "refused"
                results.append(
                    {
                        "id": assignment_id,
                        "result": result,
                        "status": assignment.status,
                        "detail": str(exc),
                    }
                )
                continue
            except DomainError as exc:
                results.append(
                    {
                        "id": assignment_id,
                        "result": "refused",
                        "status": assignment.status,
                        "detail": str(exc),
                    }
                )
                continue
            assignment.refresh_from_db(fields=["status"])
            results.append(
                {
                    "id": assignment_id,
                    "result": "decided" if changed else "already_decided",
                    "status": assignment.status,
                    "detail": "",
                }
            )
        return Response(BulkReviewOutputSerializer({"results": results}).data)


class AssignmentOverrideApi(APIView):
    """Approve or reject an assignment whatever decided it before (a rule, a hold, a
    requester); the requester is recorded as the decider and the override is appended
    to ``overrides``. A reason is required. Local assignments only."""

    class OverrideInputSerializer(StrictInputSerializer):
        decision = serializers.ChoiceField(choices=["approve", "reject"])
        reason = serializers.CharField(max_length=5000, help_text="Why; kept with the decision.")
        feedback = serializers.CharField(
            allow_blank=True, default="", max_length=5000, help_text="Shown to a rejected worker."
        )

    @extend_schema(
        parameters=[IDEMPOTENCY_KEY],
        request=OverrideInputSerializer,
        responses={
            200: AssignmentOutputSerializer,
            400: OpenApiResponse(
                description="Invalid input, a paid provider's assignment, or one that is not "
                "submitted or decided."
            ),
            404: NOT_VISIBLE,
            422: IDEMPOTENCY_CONFLICT,
        },
    )
    @idempotent
    def post(self, request: Request, assignment_id: int) -> Response:
        assignment = _assignment_or_404(request, assignment_id)
        data = validated(self.OverrideInputSerializer, request.data)
        assignment_override(
            assignment=assignment,
            decision=data["decision"],
            decided_by=authenticated_user(request),
            reason=data["reason"],
            feedback=data["feedback"] if data["decision"] == "reject" else "",
        )
        return Response(_assignment_out(assignment))
