"""Money endpoints: the campaign's cost summary and its ledger, thin over
``campaigns.insights.money``. Visible to the owner, collaborators and staff; 404
to anyone else. Money is a decimal string, never a float."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import django_filters
from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from campaigns.api.common import NOT_VISIBLE, MoneyField, campaign_or_404, money_field, validated
from campaigns.insights.money import campaign_costs, ledger_list
from campaigns.models import LedgerEntry, LedgerKind, LedgerStatus


class StatusSumsSerializer(serializers.Serializer):
    planned = money_field()
    committed = money_field()
    paid = money_field()


class ByKindSerializer(serializers.Serializer):
    """Sums per ledger kind, each split by status."""

    reward = StatusSumsSerializer()
    platform_fee = StatusSumsSerializer()
    bonus = StatusSumsSerializer()
    bonus_fee = StatusSumsSerializer()
    quiz_payment = StatusSumsSerializer()


class StageCostsSerializer(serializers.Serializer):
    stage_id = serializers.IntegerField(
        allow_null=True, help_text="null: ledger entries of no stage."
    )
    stage_name = serializers.CharField(allow_blank=True)
    by_kind = ByKindSerializer()
    spent = money_field(help_text="Paid.")
    committed = money_field(help_text="Asked of the platform, not paid yet.")
    planned = money_field(help_text="Recorded, not asked of the platform yet.")
    held = money_field(help_text="Open places and undecided work at reward + fee.")
    estimated_assignments = serializers.IntegerField()
    published_places = serializers.IntegerField()
    remaining_assignments = serializers.IntegerField()
    forecast_remaining = money_field(help_text="Estimated cost of what is not published yet.")
    forecast_total = money_field()
    approved = serializers.IntegerField()
    cost_per_accepted = money_field(allow_null=True)
    reward = money_field(allow_null=True)
    median_work_seconds = serializers.FloatField(allow_null=True)
    hourly_wage = money_field(allow_null=True, help_text="Reward over the median work time.")
    below_wage_floor = serializers.BooleanField()


class CampaignCostsSerializer(serializers.Serializer):
    currency = serializers.CharField()
    provider = serializers.CharField()
    budget_cap = money_field(allow_null=True)
    wage_floor = money_field()
    by_kind = ByKindSerializer()
    spent = money_field()
    committed = money_field()
    planned = money_field()
    held = money_field()
    forecast_remaining = money_field()
    forecast_total = money_field()
    budget_used = money_field(help_text="What the budget check counts (committed, paid, held).")
    budget_left = money_field(allow_null=True)
    accepted_examples = serializers.IntegerField(
        help_text="Approved assignments of the last stage."
    )
    cost_per_accepted_example = money_field(allow_null=True)
    stages = StageCostsSerializer(many=True)


class CampaignCostsApi(APIView):
    """The campaign's costs: the ledger by stage, kind and status, the forecast to
    completion, the budget left, cost per accepted example and hourly wage per stage."""

    class CostsQuerySerializer(serializers.Serializer):
        wage_floor = MoneyField(
            max_digits=8,
            decimal_places=2,
            min_value=Decimal("0"),
            required=False,
            help_text="Hourly wage to mark stages under; default the WAGE_FLOOR setting.",
        )

    @extend_schema(
        parameters=[CostsQuerySerializer],
        responses={
            200: CampaignCostsSerializer,
            400: OpenApiResponse(description="Invalid query; field names map to messages."),
            404: NOT_VISIBLE,
        },
    )
    def get(self, request: Request, slug: str) -> Response:
        campaign = campaign_or_404(request=request, slug=slug)
        query = validated(self.CostsQuerySerializer, request.query_params)
        costs = campaign_costs(campaign=campaign, wage_floor=query.get("wage_floor"))
        return Response(CampaignCostsSerializer(costs).data)


class LedgerEntrySerializer(serializers.ModelSerializer):
    stage_name = serializers.CharField(source="stage.name", read_only=True, allow_null=True)
    worker = serializers.CharField(
        source="worker.pseudonym", read_only=True, allow_null=True, help_text="Pseudonym."
    )
    amount = money_field()

    class Meta:
        model = LedgerEntry
        fields = [
            "id",
            "stage",
            "stage_name",
            "kind",
            "status",
            "amount",
            "currency",
            "key",
            "assignment",
            "worker",
            "operation",
            "memo",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class LedgerFilter(django_filters.FilterSet):
    kind = django_filters.ChoiceFilter(choices=LedgerKind.choices)
    status = django_filters.ChoiceFilter(choices=LedgerStatus.choices)
    stage = django_filters.NumberFilter(field_name="stage_id")
    assignment = django_filters.NumberFilter(field_name="assignment_id")

    class Meta:
        model = LedgerEntry
        fields = ["kind", "status", "stage", "assignment"]


class CampaignLedgerApi(generics.ListAPIView):
    """The campaign's ledger entries, newest first; filter by kind, status, stage,
    assignment; order by ``created_at`` or ``amount`` (``-`` for descending)."""

    serializer_class = LedgerEntrySerializer
    filterset_class = LedgerFilter
    ordering_fields = ["created_at", "amount", "id"]
    ordering = ["-created_at", "-id"]

    def get_queryset(self) -> QuerySet[LedgerEntry]:
        if getattr(self, "swagger_fake_view", False):
            return LedgerEntry.objects.none()
        campaign = campaign_or_404(request=self.request, slug=self.kwargs["slug"])
        return ledger_list(campaign=campaign)

    @extend_schema(responses={200: LedgerEntrySerializer(many=True), 404: NOT_VISIBLE})
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)
