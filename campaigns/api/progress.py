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
from campaigns.insights.adversarial import campaign_fooled_rates
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


class FooledRowSerializer(serializers.Serializer):
    key = serializers.CharField(help_text="Stage name, worker pseudonym, arm or ISO day.")
    tries = serializers.IntegerField()
    judged = serializers.IntegerField(help_text="Tries the app or the worker judged.")
    fooled = serializers.IntegerField()
    unavailable = serializers.IntegerField(help_text="Tries the model could not answer.")
    verified = serializers.IntegerField(help_text="Fools the validation stage confirmed.")
    verified_rejected = serializers.IntegerField()
    rate = serializers.FloatField(allow_null=True, help_text="fooled / judged")


class FooledRatesSerializer(serializers.Serializer):
    total = FooledRowSerializer()
    by_stage = FooledRowSerializer(many=True)
    by_worker = FooledRowSerializer(many=True)
    by_arm = FooledRowSerializer(many=True)
    by_day = FooledRowSerializer(many=True)


class CampaignProgressSerializer(serializers.Serializer):
    measured_at = serializers.DateTimeField()
    window_seconds = serializers.IntegerField(help_text="The window the rate is measured in.")
    done = serializers.IntegerField()
    remaining = serializers.IntegerField()
    percent = serializers.FloatField()
    eta_at = serializers.DateTimeField(allow_null=True)
    stages = StageProgressSerializer(many=True)
    fooled = FooledRatesSerializer(
        allow_null=True,
        required=False,
        help_text="Adversarial writing's fooled rates (null: no try yet).",
    )


class CampaignProgressApi(APIView):
    """Where the campaign stands: each stage's items, HITs and assignments by status,
    the share of its places done, the submission rate of the last hour and the
    estimated time to completion it gives."""

    @extend_schema(responses={200: CampaignProgressSerializer, 404: NOT_VISIBLE})
    def get(self, request: Request, slug: str) -> Response:
        campaign = campaign_or_404(request=request, slug=slug)
        progress = campaign_progress(campaign=campaign)
        fooled = campaign_fooled_rates(campaign=campaign)
        data = CampaignProgressSerializer(progress).data
        data["fooled"] = FooledRatesSerializer(fooled).data if fooled is not None else None
        return Response(data)


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
