"""Test participants of a campaign's platform: a pilot with real people at no cost."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from campaigns.api.common import StrictInputSerializer, campaign_or_404, validated
from campaigns.platforms.testing import campaign_test_participant_add


class CampaignTestParticipantApi(APIView):
    """Create a test participant on the campaign's platform (Prolific: a participant
    account that bypasses onboarding and cannot cash out). Then move the campaign into
    pilot with ``{"state": "pilot", "test_study": true}``: the pending work goes to the
    test participants only, and approving it costs nothing."""

    class TestParticipantInputSerializer(StrictInputSerializer):
        email = serializers.EmailField(help_text="Not the researcher account's own email.")

    @extend_schema(
        request=TestParticipantInputSerializer,
        responses={
            201: inline_serializer("TestParticipant", {"participant_id": serializers.CharField()}),
            400: OpenApiResponse(description="Invalid email, or the platform refused."),
            404: OpenApiResponse(description="No such campaign, or not visible to you."),
        },
    )
    def post(self, request: Request, slug: str) -> Response:
        campaign = campaign_or_404(request=request, slug=slug)
        data = validated(self.TestParticipantInputSerializer, request.data)
        participant = campaign_test_participant_add(campaign=campaign, email=data["email"])
        return Response({"participant_id": participant}, status=status.HTTP_201_CREATED)
