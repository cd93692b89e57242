"""A campaign's own platform credentials: write-only through the API.

Answers never carry a value, only which fields are set and their last characters.
"""

from __future__ import annotations

from collections.abc import Mapping

from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from campaigns.api.common import BAD_INPUT, NOT_VISIBLE, campaign_or_404
from campaigns.design.platform import platforms_registered
from campaigns.platforms.credentials import (
    campaign_credentials_delete,
    campaign_credentials_set,
    campaign_credentials_summary,
)

OWNER_ONLY = OpenApiResponse(description="Only the owner or staff may change credentials.")

CredentialsOutput = inline_serializer(
    name="CredentialsOutput",
    fields={
        "provider": serializers.CharField(),
        "configured": serializers.BooleanField(),
        "source": serializers.ChoiceField(choices=["campaign", "environment", "none"]),
        "fields": serializers.ListField(child=serializers.CharField()),
        "hints": serializers.DictField(child=serializers.CharField()),
        "updated_at": serializers.DateTimeField(allow_null=True),
        "updated_by": serializers.CharField(allow_null=True),
    },
)


def _credential_fields() -> dict[str, serializers.Field]:
    """Every registered platform's credential fields (``Platform.credential_fields``),
    each documented with the platform's short name: a campaign sends its own platform's."""
    return {
        spec.name: serializers.CharField(
            required=False, help_text=platform.short_label or platform.label
        )
        for platform in platforms_registered()
        for spec in platform.credential_fields
    }


class CampaignCredentialsApi(APIView):
    """The campaign's own platform credentials, used instead of the environment's."""

    @extend_schema(responses={200: CredentialsOutput, 404: NOT_VISIBLE})
    def get(self, request: Request, slug: str) -> Response:
        campaign = campaign_or_404(request=request, slug=slug)
        return Response(campaign_credentials_summary(campaign=campaign))

    @extend_schema(
        request=inline_serializer(
            name="CredentialsInput",
            fields=_credential_fields(),
        ),
        responses={200: CredentialsOutput, 400: BAD_INPUT, 403: OWNER_ONLY, 404: NOT_VISIBLE},
    )
    def put(self, request: Request, slug: str) -> Response:
        campaign = campaign_or_404(request=request, slug=slug)
        data = request.data
        if not isinstance(data, Mapping):
            raise serializers.ValidationError({"detail": ["Send the credentials as an object."]})
        values = {name: data.get(name) for name in data.keys()}  # noqa: SIM118 - QueryDict too
        campaign_credentials_set(campaign=campaign, actor=request.user, values=values)
        return Response(campaign_credentials_summary(campaign=campaign))

    @extend_schema(responses={204: None, 403: OWNER_ONLY, 404: NOT_VISIBLE})
    def delete(self, request: Request, slug: str) -> Response:
        campaign = campaign_or_404(request=request, slug=slug)
        campaign_credentials_delete(campaign=campaign, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
