"""Campaign endpoints: list, create, read, edit, delete, transition, cost estimate."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from campaigns.api.common import (
    StrictInputSerializer,
    authenticated_user,
    campaign_or_404,
    money_field,
)
from campaigns.models import Campaign, CampaignState, Provider
from campaigns.recipes import recipe_names
from campaigns.recipes.base import PILOT, SCALES
from campaigns.selectors import campaign_list_visible
from campaigns.services.campaign_edit import campaign_delete, campaign_update
from campaigns.services.costs import campaign_cost_estimate
from campaigns.services.recipes import campaign_create_with_recipe
from campaigns.services.work import campaign_start

ERROR_RESPONSES: dict[int, OpenApiResponse] = {
    400: OpenApiResponse(description="Invalid input; field names map to messages."),
    404: OpenApiResponse(description="No such campaign, or not visible to you."),
}


class CampaignOutputSerializer(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.username", read_only=True)
    collaborators = serializers.ManyRelatedField(
        child_relation=serializers.SlugRelatedField(read_only=True, slug_field="username"),
        read_only=True,
    )
    budget_cap = serializers.DecimalField(
        max_digits=12, decimal_places=2, coerce_to_string=True, allow_null=True, read_only=True
    )

    class Meta:
        model = Campaign
        fields = [
            "slug",
            "name",
            "description",
            "owner",
            "collaborators",
            "provider",
            "sandbox",
            "budget_cap",
            "currency",
            "state",
            "state_changed_at",
            "recipe",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


def _campaign_out(campaign: Campaign) -> dict[str, Any]:
    return dict(CampaignOutputSerializer(campaign).data)


class CampaignListCreateApi(generics.ListAPIView):
    """Campaigns you own or collaborate on; staff see all."""

    serializer_class = CampaignOutputSerializer
    filterset_fields = ["state", "provider"]
    ordering_fields = ["created_at", "updated_at", "name", "slug", "state"]
    ordering = ["-created_at", "-id"]

    class CampaignCreateInputSerializer(StrictInputSerializer):
        name = serializers.CharField(max_length=200)
        slug = serializers.SlugField(
            max_length=80, required=False, help_text="Derived from the name when left out."
        )
        description = serializers.CharField(allow_blank=True, default="")
        provider = serializers.ChoiceField(choices=Provider.choices, default=Provider.LOCAL)
        sandbox = serializers.BooleanField(default=True)
        budget_cap = serializers.DecimalField(
            max_digits=12, decimal_places=2, min_value=0, required=False, allow_null=True
        )
        recipe = serializers.ChoiceField(
            choices=recipe_names(),
            required=False,
            help_text="Start from a published protocol's stages (GET /api/v1/recipes/).",
        )
        sample = serializers.BooleanField(
            default=True, help_text="With a recipe: load its sample items too."
        )
        scale = serializers.ChoiceField(
            choices=SCALES,
            default=PILOT,
            help_text="With a recipe: a small pilot (default; its cost is the recipe's "
            "pilot_cost) or the paper's sizes (paper_cost).",
        )

    def get_queryset(self) -> Any:
        return campaign_list_visible(user=self.request.user).prefetch_related("collaborators")

    @extend_schema(
        operation_id="campaigns_create",
        request=CampaignCreateInputSerializer,
        responses={201: CampaignOutputSerializer, 400: ERROR_RESPONSES[400]},
    )
    def post(self, request: Request) -> Response:
        """Create a draft campaign owned by you."""
        serializer = self.CampaignCreateInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        campaign = campaign_create_with_recipe(
            owner=authenticated_user(request), **serializer.validated_data
        )
        return Response(_campaign_out(campaign), status=status.HTTP_201_CREATED)


class CampaignDetailApi(APIView):
    """One campaign. Collaborators may edit it; only the owner (or staff) may share or delete."""

    class CampaignEditInputSerializer(StrictInputSerializer):
        name = serializers.CharField(max_length=200, required=False)
        description = serializers.CharField(required=False, allow_blank=True)
        budget_cap = serializers.DecimalField(
            max_digits=12, decimal_places=2, min_value=0, required=False, allow_null=True
        )
        sandbox = serializers.BooleanField(
            required=False, help_text="Can change only while the campaign is a draft."
        )
        collaborators = serializers.ListField(
            child=serializers.CharField(max_length=150),
            required=False,
            help_text="Usernames; replaces the current list. Owner or staff only.",
        )

    @extend_schema(responses={200: CampaignOutputSerializer, 404: ERROR_RESPONSES[404]})
    def get(self, request: Request, slug: str) -> Response:
        return Response(_campaign_out(campaign_or_404(request=request, slug=slug)))

    @extend_schema(
        request=CampaignEditInputSerializer,
        responses={
            200: CampaignOutputSerializer,
            **ERROR_RESPONSES,
            403: OpenApiResponse(description="Only the owner or staff may change collaborators."),
            409: OpenApiResponse(description="The sandbox flag changes only in draft."),
        },
    )
    def patch(self, request: Request, slug: str) -> Response:
        campaign = campaign_or_404(request=request, slug=slug)
        serializer = self.CampaignEditInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        campaign = campaign_update(
            campaign=campaign, actor=request.user, **serializer.validated_data
        )
        return Response(_campaign_out(campaign))

    @extend_schema(
        responses={
            204: None,
            404: ERROR_RESPONSES[404],
            403: OpenApiResponse(description="Only the owner or staff may delete."),
            409: OpenApiResponse(description="Only draft campaigns can be deleted."),
        }
    )
    def delete(self, request: Request, slug: str) -> Response:
        campaign_delete(campaign=campaign_or_404(request=request, slug=slug), actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class CampaignTransitionApi(APIView):
    """Move the campaign through draft → pilot → live → paused → completed."""

    class CampaignTransitionInputSerializer(StrictInputSerializer):
        state = serializers.ChoiceField(choices=CampaignState.choices)

    @extend_schema(
        request=CampaignTransitionInputSerializer,
        responses={
            200: CampaignOutputSerializer,
            **ERROR_RESPONSES,
            409: OpenApiResponse(description="The transition is not allowed; `detail` says why."),
        },
    )
    def post(self, request: Request, slug: str) -> Response:
        campaign = campaign_or_404(request=request, slug=slug)
        serializer = self.CampaignTransitionInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        campaign = campaign_start(campaign=campaign, to_state=serializer.validated_data["state"])
        return Response(_campaign_out(campaign))


class StageCostSerializer(serializers.Serializer):
    stage_id = serializers.IntegerField()
    stage_name = serializers.CharField()
    items = serializers.IntegerField()
    hits = serializers.IntegerField()
    assignments = serializers.IntegerField()
    reward_per_assignment = money_field()
    fee_per_assignment = money_field()
    rewards = money_field()
    fees = money_field()
    total = money_field()


class CostEstimateSerializer(serializers.Serializer):
    currency = serializers.CharField()
    provider = serializers.CharField()
    stages = StageCostSerializer(many=True)
    total_rewards = money_field()
    total_fees = money_field()
    total = money_field()
    budget_cap = money_field(allow_null=True)
    within_budget = serializers.BooleanField()


class CampaignCostEstimateApi(APIView):
    """What the campaign's items would cost: rewards plus platform fees, per stage."""

    @extend_schema(responses={200: CostEstimateSerializer, 404: ERROR_RESPONSES[404]})
    def get(self, request: Request, slug: str) -> Response:
        campaign = campaign_or_404(request=request, slug=slug)
        estimate = campaign_cost_estimate(campaign=campaign)
        return Response(CostEstimateSerializer(estimate).data)
