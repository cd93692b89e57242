"""Nangia et al.'s 10-way validation subset of a validation stage: pick it (raise a
random sample of each arm's HITs to ten validators) and read the human-performance
estimate it gives (ACL 2021, §4-5.1)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from campaigns.api.common import stage_or_404
from validation.selectors.ten_way import stage_ten_way
from validation.ten_way import TenWayEstimate
from validation.ten_way_subset import ten_way_subset_select


class TenWayOutput(serializers.Serializer):
    settings = serializers.DictField()
    overall = serializers.DictField(help_text="accuracy, items, scored, discarded")
    arms = serializers.DictField(help_text="Per protocol arm, as overall.")


class TenWaySelectOutput(serializers.Serializer):
    per_arm = serializers.DictField(help_text="HITs in the subset per arm.")
    items = serializers.DictField(help_text="Examples in the subset per arm.")
    raised = serializers.IntegerField(help_text="HITs given more places by this call.")


def _estimate(e: TenWayEstimate) -> dict[str, Any]:
    return {
        "accuracy": e.accuracy,
        "items": e.items,
        "scored": e.scored,
        "discarded": e.discarded,
    }


class StageTenWayApi(APIView):
    """GET: human performance on the 10-way subset (majority of the six held-out
    validators against the gold of four validators plus the writer), overall and per
    arm. POST: pick the subset (idempotent)."""

    @extend_schema(responses={200: TenWayOutput})
    def get(self, request: Request, stage_id: int) -> Response:
        stage = stage_or_404(request=request, stage_id=stage_id)
        report = stage_ten_way(stage=stage)
        if report is None:
            raise ValidationError({"config": ["This stage has no ten_way option."]})
        return Response(
            {
                "settings": report.settings,
                "overall": _estimate(report.overall),
                "arms": {arm: _estimate(e) for arm, e in report.arms.items()},
            }
        )

    @extend_schema(request=None, responses={200: TenWaySelectOutput})
    def post(self, request: Request, stage_id: int) -> Response:
        stage = stage_or_404(request=request, stage_id=stage_id)
        picked = ten_way_subset_select(stage=stage)
        return Response({"per_arm": picked.per_arm, "items": picked.items, "raised": picked.raised})
