"""An item's history across stages (``campaigns.work.lineage``): the items above
and below it in the pipeline, each with the assignments on it, their workers (by
pseudonym), answers and decisions. Visible to the owner, collaborators and staff."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from campaigns.api.common import NOT_VISIBLE, campaign_or_404
from campaigns.models import Item
from campaigns.work.lineage import item_history


class LineageAssignmentSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="assignment.pk")
    worker = serializers.CharField(source="assignment.worker.pseudonym", help_text="Pseudonym.")
    status = serializers.CharField(source="assignment.status")
    answers = serializers.JSONField(source="assignment.answers", allow_null=True)
    accepted_at = serializers.DateTimeField(source="assignment.accepted_at")
    submitted_at = serializers.DateTimeField(source="assignment.submitted_at", allow_null=True)
    work_seconds = serializers.IntegerField(source="assignment.work_seconds", allow_null=True)
    decided_at = serializers.DateTimeField(source="assignment.decided_at", allow_null=True)
    decided_by = serializers.CharField(
        source="assignment.decided_by.username", allow_null=True, default=None
    )
    decision_source = serializers.CharField(source="assignment.decision_source")
    decision_reason = serializers.CharField(source="assignment.decision_reason")
    produced = serializers.ListField(
        child=serializers.IntegerField(), help_text="Ids of the items this work handed on."
    )


class LineageStepSerializer(serializers.Serializer):
    depth = serializers.IntegerField(
        help_text="0 for the item asked about; negative above it, positive below."
    )
    item = serializers.IntegerField(source="item.pk")
    external_id = serializers.CharField(source="item.external_id")
    stage = serializers.IntegerField(source="item.stage_id")
    stage_name = serializers.CharField(source="item.stage.name")
    origin = serializers.CharField(
        source="item.source", help_text="uploaded, produced (by an earlier stage) or generated."
    )
    source_assignment = serializers.IntegerField(
        source="item.source_assignment_id", allow_null=True
    )
    status = serializers.CharField(source="item.status")
    item_data = serializers.JSONField(source="item.data")
    assignments = LineageAssignmentSerializer(many=True)


class ItemHistoryApi(APIView):
    """The item's whole history across stages, in pipeline order: who wrote it, who
    linked and validated it, each decision, and the items it was handed on as."""

    @extend_schema(responses={200: LineageStepSerializer(many=True), 404: NOT_VISIBLE})
    def get(self, request: Request, slug: str, item_id: int) -> Response:
        campaign = campaign_or_404(request=request, slug=slug)
        try:
            steps = item_history(campaign=campaign, item_id=item_id)
        except Item.DoesNotExist:
            raise Http404("No item with this id in this campaign.") from None
        return Response(LineageStepSerializer(steps, many=True).data)
