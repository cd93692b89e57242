"""The campaign's progress: per stage counts by status, share done and the estimated
time to completion, thin over ``campaigns.insights.progress``. Polled by the campaign
page for its live progress bars; visible to the owner, collaborators and staff."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from campaigns.api.common import NOT_VISIBLE, campaign_or_404
from campaigns.insights.arms import campaign_arm_comparison
from campaigns.insights.progress import campaign_progress


class StageProgressSerializer(serializers.Serializer):
    stage_id = serializers.IntegerField()
    name = serializers.CharField()
    task_type = serializers.CharField()
    items = serializers.DictField(child=serializers.IntegerField(), help_text="By item status.")
    hits = serializers.DictField(child=serializers.IntegerField(), help_text="By HIT status.")
    hits_open = serializers.IntegerField(
        help_text="Published HITs with a place free (the campaign page's “Open HITs”)."
    )
    items_done = serializers.IntegerField(
        help_text="Items whose every place is done (the campaign page's “Items finished”)."
    )
    assignments = serializers.DictField(
        child=serializers.IntegerField(), help_text="By assignment status."
    )
    done = serializers.IntegerField(help_text="Assignments submitted, approved or rejected.")
    remaining = serializers.IntegerField(
        help_text="Places still to fill: free, in progress, unpublished HITs, pending items."
    )
    total = serializers.IntegerField()
    percent = serializers.FloatField()
    recent = serializers.IntegerField(help_text="Submissions within the rate window.")
    rate_per_hour = serializers.FloatField(allow_null=True)
    eta_seconds = serializers.IntegerField(
        allow_null=True, help_text="null: work is left but nothing was submitted recently."
    )
    eta_at = serializers.DateTimeField(allow_null=True)


class CampaignProgressSerializer(serializers.Serializer):
    measured_at = serializers.DateTimeField()
    window_seconds = serializers.IntegerField(help_text="The window the rate is measured in.")
    done = serializers.IntegerField()
    remaining = serializers.IntegerField()
    percent = serializers.FloatField()
    eta_at = serializers.DateTimeField(allow_null=True)
    stages = StageProgressSerializer(many=True)


class CampaignProgressApi(APIView):
    """Where the campaign stands: each stage's items, HITs and assignments by status,
    the share of its places done, the submission rate of the last hour and the
    estimated time to completion it gives."""

    @extend_schema(responses={200: CampaignProgressSerializer, 404: NOT_VISIBLE})
    def get(self, request: Request, slug: str) -> Response:
        campaign = campaign_or_404(request=request, slug=slug)
        return Response(CampaignProgressSerializer(campaign_progress(campaign=campaign)).data)


class ArmRowSerializer(serializers.Serializer):
    arm = serializers.CharField()
    stages = serializers.IntegerField()
    workers = serializers.IntegerField(help_text="Workers dealt this arm.")
    stored = serializers.IntegerField(help_text="Assignments submitted, approved or rejected.")
    accepted = serializers.IntegerField(help_text="Approved assignments.")
    alpha = serializers.FloatField(allow_null=True, help_text="Mean over the arm's stages.")
    percent_agreement = serializers.FloatField(allow_null=True)
    cost = serializers.DecimalField(max_digits=12, decimal_places=2, coerce_to_string=True)
    cost_per_accepted = serializers.DecimalField(
        max_digits=12, decimal_places=2, coerce_to_string=True, allow_null=True
    )
    mean_answer_chars = serializers.FloatField(allow_null=True)
    pasted_share = serializers.FloatField(allow_null=True)


class CampaignArmsApi(APIView):
    """The campaign's protocol arms side by side: workers, stored and accepted
    examples, agreement, cost per accepted example, answer length and pasted share.
    Empty for a campaign without arms."""

    @extend_schema(responses={200: ArmRowSerializer(many=True), 404: NOT_VISIBLE})
    def get(self, request: Request, slug: str) -> Response:
        campaign = campaign_or_404(request=request, slug=slug)
        rows = campaign_arm_comparison(campaign=campaign)
        return Response(ArmRowSerializer(rows, many=True).data)
