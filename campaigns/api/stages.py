"""Stage endpoints: list and add stages of a campaign, read, edit and link a stage. Its
review run, quality numbers and final labels are in ``quality``."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from campaigns.api.common import (
    DurationSecondsField,
    MoneyField,
    StrictInputSerializer,
    campaign_or_404,
    stage_or_404,
    validated,
)
from campaigns.design.selectors import stage_list_visible, stage_list_with_counts
from campaigns.design.services import stage_add, stage_clone, stage_link, stage_update
from campaigns.models import Stage
from campaigns.payments.wages import stage_pilot_estimate_set
from campaigns.platforms.platform_rules import stage_platform_rules
from campaigns.tasktypes import task_type_names
from campaigns.workforce.unenforced import stage_unenforced_requirements

STAGE_ERRORS: dict[int, OpenApiResponse] = {
    400: OpenApiResponse(
        description="Invalid input, or the campaign is past pilot and its stages are frozen."
    ),
    404: OpenApiResponse(description="No such stage or campaign, or not visible to you."),
}


class StageOutputSerializer(serializers.ModelSerializer):
    campaign: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True
    )
    reward = serializers.DecimalField(max_digits=8, decimal_places=2, read_only=True)
    gold_ratio = serializers.DecimalField(max_digits=4, decimal_places=3, read_only=True)
    assignment_duration = DurationSecondsField(read_only=True)
    lifetime = DurationSecondsField(read_only=True)
    config = serializers.DictField(read_only=True)
    qualification_requirements = serializers.ListField(
        child=serializers.DictField(), read_only=True
    )
    escalation_rule = serializers.DictField(read_only=True)
    review_rules = serializers.ListField(child=serializers.DictField(), read_only=True)
    bonus_rules = serializers.ListField(child=serializers.DictField(), read_only=True)
    handoff = serializers.DictField(read_only=True)
    next_stage: serializers.PrimaryKeyRelatedField[Any] = serializers.PrimaryKeyRelatedField(
        read_only=True, allow_null=True
    )
    unenforced_requirements = serializers.SerializerMethodField(
        help_text="Platform requirements the campaign's workforce cannot check "
        "(all of them on the local workforce): kind, requirement, text."
    )
    item_count = serializers.IntegerField(read_only=True)
    hit_count = serializers.IntegerField(read_only=True)
    assignment_count = serializers.IntegerField(read_only=True)
    platform_rules = serializers.SerializerMethodField(
        help_text=(
            "The stage on its campaign's platform: each requirement as the platform applies "
            "it (filter, note, refused), the reward per hour against the platform's minimum, "
            "and the problems publishing would refuse."
        )
    )

    def get_platform_rules(self, stage: Stage) -> dict[str, Any]:
        return stage_platform_rules(stage=stage)

    def get_unenforced_requirements(self, stage: Stage) -> list[dict[str, Any]]:
        return [dict(r) for r in stage_unenforced_requirements(stage=stage)]

    class Meta:
        model = Stage
        fields = [
            "id",
            "campaign",
            "name",
            "position",
            "task_type",
            "instructions",
            "config",
            "reward",
            "assignments_per_hit",
            "items_per_hit",
            "assignment_duration",
            "lifetime",
            "gold_ratio",
            "qualification_requirements",
            "unenforced_requirements",
            "escalation_rule",
            "review_rules",
            "bonus_rules",
            "show_reward_to_local_workers",
            "publish_added",
            "next_stage",
            "handoff",
            "item_count",
            "hit_count",
            "assignment_count",
            "platform_rules",
            "created_at",
        ]
        read_only_fields = fields


class StageEditInputSerializer(StrictInputSerializer):
    """Every field optional; what is sent is changed. The task type is fixed at creation."""

    name = serializers.CharField(max_length=120, required=False)
    instructions = serializers.CharField(required=False, allow_blank=True)
    config = serializers.DictField(required=False, help_text="Validated by the task type.")
    reward = MoneyField(
        max_digits=8, decimal_places=2, min_value=0, required=False, help_text="Per assignment."
    )
    assignments_per_hit = serializers.IntegerField(min_value=1, max_value=1000, required=False)
    items_per_hit = serializers.IntegerField(min_value=1, max_value=1000, required=False)
    assignment_duration = DurationSecondsField(
        required=False, help_text="Time a worker has for one assignment, in seconds."
    )
    lifetime = DurationSecondsField(
        required=False, help_text="How long a HIT stays available, in seconds."
    )
    gold_ratio = MoneyField(
        max_digits=4, decimal_places=3, min_value=0, max_value=1, required=False
    )
    qualification_requirements = serializers.ListField(
        child=serializers.DictField(), required=False
    )
    escalation_rule = serializers.DictField(required=False)
    review_rules = serializers.ListField(child=serializers.DictField(), required=False)
    bonus_rules = serializers.ListField(child=serializers.DictField(), required=False)
    show_reward_to_local_workers = serializers.BooleanField(
        required=False,
        help_text="Local workforce only: show workers the reward line (paid outside qaportal).",
    )
    publish_added = serializers.BooleanField(
        required=False,
        help_text="Items added in pilot or live are published at once (default); "
        "false: they wait for a publish.",
    )


class StageCreateInputSerializer(StageEditInputSerializer):
    name = serializers.CharField(max_length=120)
    task_type = serializers.ChoiceField(choices=task_type_names())


def _stage_out(stage: Stage) -> dict[str, Any]:
    # Re-read with the counts the list shows, so list and detail have one shape.
    counted = stage_list_with_counts(campaign=stage.campaign).select_related("campaign")
    return dict(StageOutputSerializer(counted.get(pk=stage.pk)).data)


class CampaignStageListCreateApi(generics.ListAPIView):
    """A campaign's stages in pipeline order, with item, HIT and assignment counts."""

    serializer_class = StageOutputSerializer
    filter_backends: list[Any] = []

    def get_queryset(self) -> Any:
        if getattr(self, "swagger_fake_view", False):
            return Stage.objects.none()
        campaign = campaign_or_404(request=self.request, slug=self.kwargs["slug"])
        return stage_list_with_counts(campaign=campaign).select_related("campaign")

    @extend_schema(
        operation_id="campaigns_stages_create",
        request=StageCreateInputSerializer,
        responses={201: StageOutputSerializer, **STAGE_ERRORS},
    )
    def post(self, request: Request, slug: str) -> Response:
        """Append a stage; only while the campaign is a draft or a pilot."""
        campaign = campaign_or_404(request=request, slug=slug)
        data = validated(StageCreateInputSerializer, request.data)
        stage = stage_add(campaign=campaign, actor=request.user, **data)
        return Response(_stage_out(stage), status=status.HTTP_201_CREATED)


class StageDetailApi(APIView):
    """One stage; owner, collaborators and staff may edit it while the campaign is editable."""

    @extend_schema(responses={200: StageOutputSerializer, 404: STAGE_ERRORS[404]})
    def get(self, request: Request, stage_id: int) -> Response:
        return Response(_stage_out(stage_or_404(request=request, stage_id=stage_id)))

    @extend_schema(
        request=StageEditInputSerializer,
        responses={200: StageOutputSerializer, **STAGE_ERRORS},
    )
    def patch(self, request: Request, stage_id: int) -> Response:
        stage = stage_or_404(request=request, stage_id=stage_id)
        data = validated(StageEditInputSerializer, request.data)
        stage = stage_update(stage=stage, actor=request.user, **data)
        return Response(_stage_out(stage))


class StageCloneApi(APIView):
    """Append a copy of this stage's settings (no items, HITs or links) to its campaign."""

    class StageCloneInputSerializer(StrictInputSerializer):
        name = serializers.CharField(
            max_length=120, required=False, help_text='Default: "<name> (copy)".'
        )

    @extend_schema(
        request=StageCloneInputSerializer,
        responses={201: StageOutputSerializer, **STAGE_ERRORS},
    )
    def post(self, request: Request, stage_id: int) -> Response:
        stage = stage_or_404(request=request, stage_id=stage_id)
        data = validated(self.StageCloneInputSerializer, request.data)
        copy = stage_clone(stage=stage, name=data.get("name"))
        return Response(_stage_out(copy), status=status.HTTP_201_CREATED)


class StageLinkApi(APIView):
    """Make accepted output of this stage become items of ``next_stage`` (null unlinks)."""

    class StageLinkInputSerializer(StrictInputSerializer):
        next_stage = serializers.IntegerField(
            allow_null=True, help_text="Id of a stage of the same campaign, or null to unlink."
        )
        handoff = serializers.DictField(
            default=dict,
            help_text="Which accepted outputs become items of the next stage, and how.",
        )

    @extend_schema(
        request=StageLinkInputSerializer, responses={200: StageOutputSerializer, **STAGE_ERRORS}
    )
    def post(self, request: Request, stage_id: int) -> Response:
        stage = stage_or_404(request=request, stage_id=stage_id)
        data = validated(self.StageLinkInputSerializer, request.data)
        next_id = data["next_stage"]
        next_stage = None
        if next_id is not None:
            # Only stages of the same campaign are candidates, so an id from
            # someone else's campaign gets the same answer as one that does not exist.
            next_stage = (
                stage_list_visible(user=request.user)
                .filter(campaign_id=stage.campaign_id, pk=next_id)
                .first()
            )
            if next_stage is None:
                raise serializers.ValidationError(
                    {"next_stage": ["No stage with this id in this campaign."]}
                )
        stage = stage_link(stage=stage, next_stage=next_stage, handoff=data["handoff"])
        return Response(_stage_out(stage))


class PilotEstimateSerializer(serializers.Serializer):
    estimated_minutes = serializers.IntegerField()
    median_seconds = serializers.FloatField()
    assignments = serializers.IntegerField()
    currency = serializers.CharField()
    reward = serializers.DecimalField(max_digits=10, decimal_places=2)
    hourly_rate = serializers.DecimalField(max_digits=12, decimal_places=2, allow_null=True)
    minimum_hourly = serializers.DecimalField(max_digits=12, decimal_places=2, allow_null=True)
    meets_minimum = serializers.BooleanField()
    problem = serializers.CharField(allow_blank=True)


class StageEstimateFromPilotApi(APIView):
    """Set the stage's ``estimated_minutes`` to its pilot's median measured time
    (``stage_pilot_estimate_set``); says whether the reward still meets the platform's
    hourly minimum at that time. 409 when too few assignments measured their time."""

    @extend_schema(
        request=None,
        responses={
            200: PilotEstimateSerializer,
            **STAGE_ERRORS,
            409: OpenApiResponse(description="Too few pilot assignments measured their time."),
        },
    )
    def post(self, request: Request, stage_id: int) -> Response:
        stage = stage_or_404(request=request, stage_id=stage_id)
        estimate = stage_pilot_estimate_set(stage=stage)
        return Response(
            {
                "estimate": PilotEstimateSerializer(estimate).data,
                "stage": _stage_out(Stage.objects.get(pk=stage.pk)),
            }
        )
