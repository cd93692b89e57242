"""Campaign endpoints: list, create, read, edit, delete, transition, cost estimate."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from campaigns.api.common import (
    MoneyField,
    StrictInputSerializer,
    authenticated_user,
    campaign_or_404,
    money_field,
    validated,
)
from campaigns.design.access import campaign_delete, campaign_update
from campaigns.design.platform import platform_for
from campaigns.design.selectors import campaign_list_visible
from campaigns.models import Campaign, CampaignState, Provider
from campaigns.models.choices import provider_choices
from campaigns.payments.costs import campaign_cost_estimate
from campaigns.platforms.publishing import campaign_start
from campaigns.recipes import recipe_names
from campaigns.recipes.base import PILOT, SCALES
from campaigns.recipes.services import campaign_create_with_recipe

ERROR_RESPONSES: dict[int, OpenApiResponse] = {
    400: OpenApiResponse(description="Invalid input; field names map to messages."),
    404: OpenApiResponse(description="No such campaign, or not visible to you."),
}


# Longest campaign description taken (the page shows it whole).
DESCRIPTION_MAX_LENGTH = 10_000


class CampaignOutputSerializer(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.username", read_only=True)
    collaborators = serializers.ManyRelatedField(
        child_relation=serializers.SlugRelatedField(read_only=True, slug_field="username"),
        read_only=True,
    )
    budget_cap = serializers.DecimalField(
        max_digits=12, decimal_places=2, coerce_to_string=True, allow_null=True, read_only=True
    )
    bonus_max = serializers.DecimalField(
        max_digits=8, decimal_places=2, coerce_to_string=True, allow_null=True, read_only=True
    )
    real_money = serializers.SerializerMethodField(
        help_text="Whether the platform pays real money: false only in a platform's sandbox "
        "(MTurk's). Prolific has no sandbox: its pilots use test participants instead."
    )
    test_participants = serializers.SerializerMethodField(
        help_text="The platform offers test participants: a pilot can be published to them "
        'at no cost (POST …/transition/ with {"state": "pilot", "test_study": true}).'
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
            "real_money",
            "test_participants",
            "budget_cap",
            "bonus_max",
            "currency",
            "state",
            "state_changed_at",
            "recipe",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_real_money(self, campaign: Campaign) -> bool:
        platform = platform_for(campaign.provider)
        return platform.moves_money and not (campaign.sandbox and platform.has_sandbox)

    def get_test_participants(self, campaign: Campaign) -> bool:
        return bool(platform_for(campaign.provider).rules().test_participants)


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
        description = serializers.CharField(
            allow_blank=True, default="", max_length=DESCRIPTION_MAX_LENGTH
        )
        provider = serializers.ChoiceField(choices=provider_choices(), default=Provider.LOCAL)
        sandbox = serializers.BooleanField(
            default=True,
            help_text="Use the platform's sandbox where it has one (MTurk's). Prolific has "
            "none: every study pays; pilot with its test participants (test_study).",
        )
        budget_cap = MoneyField(
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
        usd_rate = MoneyField(
            max_digits=12,
            decimal_places=6,
            min_value=Decimal("0.000001"),
            required=False,
            help_text=(
                "With a recipe on a platform paying in another currency than USD: units of "
                "that currency per US dollar, to convert the recipe's USD prices (default: "
                "the USD_EXCHANGE_RATES setting). Recorded as config.priced_in on each stage."
            ),
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
        data = validated(self.CampaignCreateInputSerializer, request.data)
        campaign = campaign_create_with_recipe(owner=authenticated_user(request), **data)
        return Response(_campaign_out(campaign), status=status.HTTP_201_CREATED)


class CampaignDetailApi(APIView):
    """One campaign. Collaborators may edit it; only the owner (or staff) may share or delete."""

    class CampaignEditInputSerializer(StrictInputSerializer):
        name = serializers.CharField(max_length=200, required=False)
        description = serializers.CharField(
            required=False, allow_blank=True, max_length=DESCRIPTION_MAX_LENGTH
        )
        budget_cap = MoneyField(
            max_digits=12, decimal_places=2, min_value=0, required=False, allow_null=True
        )
        bonus_max = MoneyField(
            max_digits=8,
            decimal_places=2,
            min_value=Decimal("0.01"),
            required=False,
            allow_null=True,
            help_text="Largest single bonus; null: the server's default (BONUS_MAX_DEFAULT).",
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
        data = validated(self.CampaignEditInputSerializer, request.data)
        campaign = campaign_update(campaign=campaign, actor=request.user, **data)
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
        test_study = serializers.BooleanField(
            default=False,
            help_text=(
                "Into pilot on a platform with test participants (Prolific): publish the "
                "pending work as a test study that only the workspace's test participants "
                "see, at no cost. Refused elsewhere."
            ),
        )

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
        data = validated(self.CampaignTransitionInputSerializer, request.data)
        campaign = campaign_start(
            campaign=campaign,
            to_state=data["state"],
            test_study=data["test_study"],
        )
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
    estimated_minutes = serializers.IntegerField(allow_null=True)
    hourly_rate = money_field(allow_null=True)
    minimum_hourly = money_field(
        allow_null=True, help_text="The platform's minimum reward per hour in this currency."
    )
    pay_warning = serializers.CharField(help_text="Empty when the reward meets the minimum.")


class CostEstimateSerializer(serializers.Serializer):
    currency = serializers.CharField()
    provider = serializers.CharField()
    stages = StageCostSerializer(many=True)
    total_rewards = money_field()
    total_fees = money_field()
    total = money_field()
    budget_cap = money_field(allow_null=True)
    within_budget = serializers.BooleanField()
    fee_rate = serializers.DecimalField(max_digits=6, decimal_places=4, allow_null=True)
    fee_note = serializers.CharField()
    conversions = serializers.DictField(
        child=serializers.DictField(), help_text="Stage name -> USD conversion applied."
    )


class CampaignCostEstimateApi(APIView):
    """What the campaign's items would cost: rewards plus platform fees, per stage."""

    @extend_schema(responses={200: CostEstimateSerializer, 404: ERROR_RESPONSES[404]})
    def get(self, request: Request, slug: str) -> Response:
        campaign = campaign_or_404(request=request, slug=slug)
        estimate = campaign_cost_estimate(campaign=campaign)
        return Response(CostEstimateSerializer(estimate).data)
