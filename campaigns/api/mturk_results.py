"""MTurk batch results CSV endpoints: download a campaign in MTurk's layout, import
MTurk's file into a campaign, and review from the file's Approve / Reject columns.

``GET  /campaigns/<slug>/mturk-results/``         the export, streamed (text/csv)
``POST /campaigns/<slug>/mturk-results/``         import (multipart ``file`` or raw text/csv)
``POST /campaigns/<slug>/mturk-results/review/``  approve / reject from the file

Visible campaigns only (owner, collaborators, staff); anything else is 404.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import renderers, serializers, status
from rest_framework.exceptions import PermissionDenied as DRFPermissionDenied
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from campaigns.api.common import NOT_VISIBLE, authenticated_user, campaign_or_404
from campaigns.api.exports import export_stream_check
from campaigns.api.idempotency import idempotent_action
from campaigns.api.parsers import CsvParser, upload_read
from campaigns.exports import export_format_get
from campaigns.exports.services import export_reveal_check
from campaigns.platforms.mturk.csv.results import mturk_import_stage, mturk_results_import
from campaigns.platforms.mturk.csv.review import mturk_results_review
from campaigns.platforms.mturk.csv.selectors import mturk_csv_rows

REJECTED_FILE = OpenApiResponse(
    description="A bad file (nothing stored / decided; `errors` lists row, field, message), "
    "or a campaign that is not on MTurk (import)."
)


class CsvRenderer(renderers.BaseRenderer):
    """Lets clients ask for ``text/csv``; errors still come as JSON text."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: Mapping[str, Any] | None = None,
    ) -> bytes:
        return json.dumps(data).encode() if data is not None else b""


class _Echo:
    """A file-like object whose ``write`` hands back what ``csv.writer`` writes."""

    def write(self, value: str) -> str:
        return value


class MTurkResultsUploadSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="An MTurk batch results CSV.")


class MTurkImportResultSerializer(serializers.Serializer):
    hits = serializers.IntegerField(help_text="HITs in the file.")
    assignments = serializers.IntegerField(help_text="Assignments in the file.")
    workers = serializers.IntegerField(help_text="Distinct workers in the file.")
    work_time_seconds = serializers.IntegerField(help_text="Sum of WorkTimeInSeconds.")
    created = serializers.IntegerField(help_text="Assignments this import added.")
    hits_created = serializers.IntegerField()
    items_created = serializers.IntegerField()
    workers_created = serializers.IntegerField()


class MTurkReviewRowSerializer(serializers.Serializer):
    row = serializers.IntegerField(help_text="Line of the file the row starts on.")
    assignment_id = serializers.CharField()
    decision = serializers.ChoiceField(choices=["approve", "reject"])
    result = serializers.ChoiceField(
        choices=["decided", "requested", "already_decided", "not_found", "refused"],
        help_text="requested: a paid decision asked of the platform, done when it answers.",
    )
    status = serializers.CharField(allow_null=True)
    detail = serializers.CharField(allow_blank=True)


class MTurkReviewResultSerializer(serializers.Serializer):
    counts = serializers.DictField(child=serializers.IntegerField(), help_text="Rows by result.")
    skipped = serializers.IntegerField(help_text="Rows with neither Approve nor Reject.")
    results = MTurkReviewRowSerializer(many=True)


def _upload(request: Request) -> tuple[bytes, str]:
    return upload_read(MTurkResultsUploadSerializer(data=request.data), default_name="upload.csv")


UPLOAD_REQUEST = {
    "multipart/form-data": MTurkResultsUploadSerializer,
    "text/csv": OpenApiTypes.STR,
}
# What an upload of MTurk's file can answer besides its result.
UPLOAD_ERRORS = {
    400: REJECTED_FILE,
    404: NOT_VISIBLE,
    413: OpenApiResponse(description="Larger than ITEM_UPLOAD_MAX_BYTES."),
}


class CampaignMTurkResultsApi(APIView):
    """The campaign as an MTurk batch results CSV (GET), or MTurk's file imported (POST)."""

    parser_classes = [MultiPartParser, CsvParser]
    renderer_classes = [renderers.JSONRenderer, CsvRenderer]

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "reveal_worker_ids",
                OpenApiTypes.BOOL,
                description="Write MTurk WorkerIds instead of pseudonyms (personal data).",
            )
        ],
        responses={
            (200, "text/csv"): OpenApiTypes.STR,
            403: OpenApiResponse(description="Real worker ids asked by someone not the owner."),
            404: NOT_VISIBLE,
            409: OpenApiResponse(description="Too large to stream: run mturk-csv as a job."),
        },
    )
    def get(self, request: Request, slug: str) -> StreamingHttpResponse:
        """Stream the export: one row per stored assignment, Approve / Reject left empty."""
        campaign = campaign_or_404(request=request, slug=slug)
        reveal = request.query_params.get("reveal_worker_ids", "").lower() in ("1", "true", "yes")
        if reveal:
            # Real worker ids are the owner's alone (and audited), as on every export.
            try:
                export_reveal_check(
                    campaign=campaign, actor=request.user, export_format="mturk-csv", via="api"
                )
            except DjangoPermissionDenied as exc:
                raise DRFPermissionDenied(str(exc)) from None
        export_stream_check(campaign=campaign, fmt=export_format_get("mturk-csv"), request=request)
        writer = csv.writer(_Echo())
        rows = mturk_csv_rows(campaign_id=campaign.pk, reveal_worker_ids=reveal)
        response = StreamingHttpResponse(
            (writer.writerow(row) for row in rows), content_type="text/csv; charset=utf-8"
        )
        response["Content-Disposition"] = (
            f'attachment; filename="{campaign.slug}_batch_results.csv"'
        )
        return response

    @idempotent_action(
        parameters=[
            OpenApiParameter(
                "stage",
                OpenApiTypes.INT,
                description="Position of the stage new HITs go to (default: the first).",
            ),
        ],
        request=UPLOAD_REQUEST,
        responses={201: MTurkImportResultSerializer, **UPLOAD_ERRORS},
    )
    def post(self, request: Request, slug: str) -> Response:
        """Import MTurk's batch results file, all or nothing; the same file again adds nothing."""
        campaign = campaign_or_404(request=request, slug=slug)
        position = request.query_params.get("stage", "")
        if position and not position.isdigit():
            raise serializers.ValidationError({"stage": ["A stage position (0, 1, …)."]})
        content, filename = _upload(request)
        stage = mturk_import_stage(campaign=campaign, position=int(position) if position else None)
        result = mturk_results_import(
            campaign=campaign, content=content, stage=stage, filename=filename
        )
        return Response(
            MTurkImportResultSerializer(result.as_dict()).data, status=status.HTTP_201_CREATED
        )


class CampaignMTurkResultsReviewApi(APIView):
    """Approve (``x`` in Approve) or reject (text in Reject) the assignments of a file.

    The file is checked whole first (a bad row decides nothing); then each row is
    decided on its own, paid ones through provider operations.
    """

    parser_classes = [MultiPartParser, CsvParser]

    @idempotent_action(
        request=UPLOAD_REQUEST,
        responses={200: MTurkReviewResultSerializer, **UPLOAD_ERRORS},
    )
    def post(self, request: Request, slug: str) -> Response:
        campaign = campaign_or_404(request=request, slug=slug)
        content, filename = _upload(request)
        result = mturk_results_review(
            campaign=campaign,
            content=content,
            decided_by=authenticated_user(request),
            filename=filename,
        )
        return Response(MTurkReviewResultSerializer(result.as_dict()).data)
