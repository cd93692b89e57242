"""Qualification types and grants, seen from a campaign: the campaign owner's custom
types (list, create) and who holds them. Visible to the owner, collaborators and
staff; creating a type is the owner's (or staff's): collaborators get 403."""

from __future__ import annotations

from typing import Any

import django_filters
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from campaigns.api.common import (
    NOT_VISIBLE,
    StrictInputSerializer,
    authenticated_user,
    campaign_or_404,
    validated,
)
from campaigns.design.access import campaign_can_manage
from campaigns.models import (
    Assignment,
    CampaignWorker,
    QualificationGrant,
    QualificationKind,
    QualificationType,
)
from campaigns.workforce.qualifications import (
    CUSTOM_QUALIFICATION_KINDS,
    qualification_type_create,
)

BAD_INPUT = OpenApiResponse(description="Invalid input; field names map to messages.")


class QualificationTypeSerializer(serializers.ModelSerializer):
    active_grants = serializers.IntegerField(read_only=True)

    class Meta:
        model = QualificationType
        fields = [
            "id",
            "name",
            "description",
            "kind",
            "config",
            "provider",
            "provider_qualification_id",
            "active_grants",
            "created_at",
        ]
        read_only_fields = fields


class QualificationTypeFilter(django_filters.FilterSet):
    kind = django_filters.ChoiceFilter(choices=QualificationKind.choices)

    class Meta:
        model = QualificationType
        fields = ["kind"]


class CampaignQualificationListCreateApi(generics.ListAPIView):
    """The campaign owner's qualification types with their active grants; create one."""

    serializer_class = QualificationTypeSerializer
    filterset_class = QualificationTypeFilter
    ordering_fields = ["name", "created_at", "id"]

    class QualificationTypeInputSerializer(StrictInputSerializer):
        name = serializers.CharField(max_length=120)
        description = serializers.CharField(allow_blank=True, default="", max_length=5000)
        kind = serializers.ChoiceField(choices=list(CUSTOM_QUALIFICATION_KINDS))
        config = serializers.DictField(
            required=False, default=dict, help_text="Answer key and scoring rule, thresholds."
        )

    def get_queryset(self) -> QuerySet[QualificationType]:
        if getattr(self, "swagger_fake_view", False):
            return QualificationType.objects.none()
        campaign = campaign_or_404(request=self.request, slug=self.kwargs["slug"])
        return (
            QualificationType.objects.filter(owner_id=campaign.owner_id)
            .annotate(active_grants=Count("grants", filter=Q(grants__revoked_at__isnull=True)))
            .order_by("name")
        )

    @extend_schema(
        responses={200: QualificationTypeSerializer(many=True), 400: BAD_INPUT, 404: NOT_VISIBLE}
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    @extend_schema(
        request=QualificationTypeInputSerializer,
        responses={
            201: QualificationTypeSerializer,
            400: BAD_INPUT,
            403: OpenApiResponse(description="Only the owner (or staff) may create types."),
            404: NOT_VISIBLE,
        },
    )
    def post(self, request: Request, slug: str) -> Response:
        campaign = campaign_or_404(request=request, slug=slug)
        user = authenticated_user(request)
        if not campaign_can_manage(campaign=campaign, user=user):
            raise PermissionDenied("Only the campaign's owner (or staff) may create types.")
        values = validated(self.QualificationTypeInputSerializer, request.data)
        created = qualification_type_create(owner=campaign.owner, **values)
        out = self.get_queryset().get(pk=created.pk)
        return Response(QualificationTypeSerializer(out).data, status=status.HTTP_201_CREATED)


class QualificationGrantSerializer(serializers.ModelSerializer):
    qualification_type_name = serializers.CharField(
        source="qualification_type.name", read_only=True
    )
    worker = serializers.CharField(source="worker.pseudonym", read_only=True)
    active = serializers.SerializerMethodField()

    class Meta:
        model = QualificationGrant
        fields = [
            "id",
            "qualification_type",
            "qualification_type_name",
            "worker",
            "value",
            "source",
            "granted_at",
            "revoked_at",
            "active",
        ]
        read_only_fields = fields

    def get_active(self, grant: QualificationGrant) -> bool:
        return grant.revoked_at is None


class GrantFilter(django_filters.FilterSet):
    qualification_type = django_filters.NumberFilter(field_name="qualification_type_id")
    worker = django_filters.CharFilter(field_name="worker__pseudonym", help_text="Pseudonym.")
    active = django_filters.BooleanFilter(field_name="revoked_at", lookup_expr="isnull")

    class Meta:
        model = QualificationGrant
        fields = ["qualification_type", "worker", "active"]


class CampaignQualificationGrantListApi(generics.ListAPIView):
    """Grants of the campaign owner's qualification types to workers of this campaign,
    newest first; filter by type,
    worker pseudonym and ``active``; order by ``granted_at``, ``value``."""

    serializer_class = QualificationGrantSerializer
    filterset_class = GrantFilter
    ordering_fields = ["granted_at", "value", "id"]

    def get_queryset(self) -> QuerySet[QualificationGrant]:
        if getattr(self, "swagger_fake_view", False):
            return QualificationGrant.objects.none()
        campaign = campaign_or_404(request=self.request, slug=self.kwargs["slug"])
        # Only workers of this campaign: a collaborator here sees nobody from the owner's
        # other campaigns.
        in_campaign = Exists(
            Assignment.objects.filter(worker=OuterRef("worker_id"), hit__stage__campaign=campaign)
        ) | Exists(CampaignWorker.objects.filter(worker=OuterRef("worker_id"), campaign=campaign))
        return (
            QualificationGrant.objects.filter(qualification_type__owner_id=campaign.owner_id)
            .filter(in_campaign)
            .select_related("qualification_type", "worker")
            .order_by("-granted_at", "-id")
        )

    @extend_schema(
        responses={200: QualificationGrantSerializer(many=True), 400: BAD_INPUT, 404: NOT_VISIBLE}
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)
