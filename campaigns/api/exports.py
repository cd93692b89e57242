"""Dataset exports over the API: the formats, and one export streamed as a download
(``campaigns.exports``). Worker ids are pseudonyms unless the owner asks for real ids
with ``reveal_worker_ids=true`` and ``confirm=<the campaign's slug>`` (audited)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.exceptions import PermissionDenied as DRFPermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from campaigns.api.common import NOT_VISIBLE, campaign_or_404, validated
from campaigns.exports import FORMATS, ExportFormat, export_filename, export_format_get
from campaigns.exports.mintaka import SPLITS, parse_ratios
from campaigns.exports.services import export_stream_audited
from campaigns.jobs import export_rows_estimate
from campaigns.models import Campaign


class ExportFormatSerializer(serializers.Serializer):
    name = serializers.CharField()
    title = serializers.CharField()
    extension = serializers.CharField()
    content_type = serializers.CharField()
    description = serializers.CharField()
    url = serializers.CharField(help_text="Where to download this campaign's export.")
    job_url = serializers.CharField(help_text="Where to POST to run it as a background job.")


class CampaignExportListApi(APIView):
    """The export formats, each with the URL of this campaign's export."""

    @extend_schema(responses={200: ExportFormatSerializer(many=True), 404: NOT_VISIBLE})
    def get(self, request: Request, slug: str) -> Response:
        campaign = campaign_or_404(request=request, slug=slug)
        rows = [
            {
                "name": f.name,
                "title": f.title,
                "extension": f.extension,
                "content_type": f.content_type,
                "description": f.description,
                "url": reverse(
                    "api-campaign-export",
                    kwargs={"slug": campaign.slug, "export_format": f.name},
                    request=request,
                ),
                "job_url": reverse(
                    "api-campaign-export-job",
                    kwargs={"slug": campaign.slug, "export_format": f.name},
                    request=request,
                ),
            }
            for f in FORMATS.values()
        ]
        return Response(ExportFormatSerializer(rows, many=True).data)


class ExportQuerySerializer(serializers.Serializer):
    split = serializers.ChoiceField(
        choices=["all", *SPLITS], default="all", help_text="mintaka: one split, or all."
    )
    ratios = serializers.CharField(
        default="0.7,0.1,0.2",
        help_text="mintaka, hf, croissant: train,dev,test ratios summing to 1.",
    )
    seed = serializers.IntegerField(
        default=0, help_text="mintaka, hf, croissant: the split's seed."
    )
    reveal_worker_ids = serializers.BooleanField(
        default=False, help_text="Real platform worker ids instead of pseudonyms (owner only)."
    )
    confirm = serializers.CharField(
        required=False, allow_blank=True, help_text="With reveal_worker_ids: the slug again."
    )
    version = serializers.RegexField(
        r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,39}$",
        required=False,
        help_text="hf, croissant: the dataset version (default: from the data's checksum).",
    )
    license = serializers.RegexField(
        r"^[a-z0-9][a-z0-9.+-]{0,39}$",
        default="unknown",
        help_text="hf, croissant: the license id the Hub knows, e.g. cc-by-4.0.",
    )

    def validate_ratios(self, value: str) -> Any:
        try:
            return parse_ratios(value)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None


def export_options(*, campaign: Campaign, data: Any) -> tuple[dict[str, Any], bool]:
    """The export options in ``data`` (``ExportQuerySerializer``; a 400 when invalid) and
    whether they reveal real worker ids, which needs ``confirm`` set to the campaign's slug."""
    query = validated(ExportQuerySerializer, data)
    options = dict(query)
    reveal = options.pop("reveal_worker_ids")
    confirm = options.pop("confirm", "")
    if reveal and confirm != campaign.slug:
        raise ValidationError(
            {"confirm": ["Set confirm to the campaign's slug to export real worker ids."]}
        )
    return options, reveal


class ExportTooLargeToStream(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "export_too_large_to_stream"


def export_stream_check(*, campaign: Campaign, fmt: ExportFormat, request: Request) -> None:
    """Refuse to stream an export of more than ``EXPORT_STREAM_MAX_ROWS`` rows (a long
    response is cut by the server's timeout and looks complete): those run as jobs."""
    rows = export_rows_estimate(campaign=campaign, fmt=fmt, at_most=settings.EXPORT_STREAM_MAX_ROWS)
    limit: int = settings.EXPORT_STREAM_MAX_ROWS
    if rows > limit:
        url = reverse(
            "api-campaign-export-job",
            kwargs={"slug": campaign.slug, "export_format": fmt.name},
            request=request,
        )
        raise ExportTooLargeToStream(
            f"This export has more than {limit} rows, the most that are streamed; "
            f"start it as a job with POST {url} and download the file when it is done "
            "(its row count and checksum are named)."
        )


class CampaignExportApi(APIView):
    """One export of the campaign, streamed as a file download (flat memory whatever
    its size). ``mintaka`` takes ``split``, ``ratios`` and ``seed``; ``hf`` (the folder
    as a zip) and ``croissant`` take ``ratios``, ``seed``, ``version`` and ``license``;
    every export is recorded in the export audit. Every format takes
    ``reveal_worker_ids`` with ``confirm`` set to the campaign's slug (owner or staff;
    recorded in the export audit)."""

    @extend_schema(
        parameters=[ExportQuerySerializer],
        responses={
            (200, "application/octet-stream"): OpenApiTypes.BINARY,
            400: OpenApiResponse(description="Invalid query; field names map to messages."),
            403: OpenApiResponse(description="Real worker ids asked by someone not the owner."),
            404: NOT_VISIBLE,
            409: OpenApiResponse(description="Too large to stream: start it as a job."),
        },
    )
    def get(self, request: Request, slug: str, export_format: str) -> StreamingHttpResponse:
        campaign = campaign_or_404(request=request, slug=slug)
        if export_format not in FORMATS:
            raise Http404(f"Unknown export format; use one of {', '.join(FORMATS)}.")
        options, reveal = export_options(campaign=campaign, data=request.query_params)
        fmt = export_format_get(export_format)
        export_stream_check(campaign=campaign, fmt=fmt, request=request)
        try:
            stream = export_stream_audited(
                campaign=campaign,
                export_format=export_format,
                actor=request.user,
                via="api",
                reveal=reveal,
                **options,
            )
        except DjangoPermissionDenied as exc:
            raise DRFPermissionDenied(str(exc)) from None
        response = StreamingHttpResponse(
            stream,
            content_type=fmt.content_type if fmt.binary else f"{fmt.content_type}; charset=utf-8",
        )
        filename = export_filename(campaign=campaign, name=export_format, split=options["split"])
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response
