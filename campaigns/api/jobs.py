"""Background jobs over the API: an export started as a job, a job's status and
progress, and the finished file, which names its row count and SHA-256 checksum
(``X-Row-Count``, ``X-Checksum-SHA256``, ``Repr-Digest``) so a cut download shows.

``POST /campaigns/<slug>/exports/<format>/jobs/``  start an export (202 + the job)
``GET  /jobs/<id>/``                              status, progress, rows, checksum
``GET  /jobs/<id>/download/``                     the file, once the job is done

A job is its creator's (or staff's): others get 404.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import FileResponse, Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied as DRFPermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from campaigns.api.common import NOT_VISIBLE, authenticated_user, campaign_or_404
from campaigns.api.exports import ExportQuerySerializer, export_options
from campaigns.exports import FORMATS, export_filename
from campaigns.jobs import job_as_dict, job_download_response, job_export_start, job_or_404


class JobSerializer(serializers.Serializer):
    """A job as the API shows it; ``errors`` (a field named like ``Serializer.errors``)
    is declared in ``get_fields``: an upload's row errors, as ``UploadRejected`` lists."""

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        fields["errors"] = serializers.ListField(child=serializers.DictField())
        return fields

    id = serializers.UUIDField()
    kind = serializers.CharField(help_text="export or upload")
    status = serializers.CharField(help_text="queued, running, done or failed")
    phase = serializers.CharField(help_text="What a running job is doing now.")
    export_format = serializers.CharField()
    rows_done = serializers.IntegerField(help_text="Rows handled so far.")
    rows_total = serializers.IntegerField(allow_null=True, help_text="Expected rows (estimate).")
    progress = serializers.FloatField(help_text="0 to 1.")
    row_count = serializers.IntegerField(allow_null=True, help_text="Rows in the finished file.")
    byte_count = serializers.IntegerField(allow_null=True)
    checksum_sha256 = serializers.CharField(help_text="Of the file (export) or input (upload).")
    result = serializers.DictField(help_text="Upload: created, batch.")
    error = serializers.CharField()
    attempt = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    url = serializers.CharField()
    download_url = serializers.CharField(allow_null=True)


class CampaignExportJobApi(APIView):
    """Start an export as a background job: the file is written to storage by a worker,
    then downloaded whole, its row count and checksum named. Takes the export's
    options as query parameters or a JSON body."""

    @extend_schema(
        parameters=[ExportQuerySerializer],
        request=None,
        responses={
            202: JobSerializer,
            400: OpenApiResponse(description="Invalid options; field names map to messages."),
            403: OpenApiResponse(description="Real worker ids asked by someone not the owner."),
            404: NOT_VISIBLE,
        },
    )
    def post(self, request: Request, slug: str, export_format: str) -> Response:
        campaign = campaign_or_404(request=request, slug=slug)
        if export_format not in FORMATS:
            raise Http404(f"Unknown export format; use one of {', '.join(FORMATS)}.")
        data = {**request.query_params.dict()}
        if isinstance(request.data, dict):
            data.update({k: v for k, v in request.data.items() if isinstance(k, str)})
        options, reveal = export_options(campaign=campaign, data=data)
        split = options["split"]
        ratios = options.pop("ratios")
        try:
            job = job_export_start(
                campaign=campaign,
                export_format=export_format,
                actor=authenticated_user(request),
                download_name=export_filename(campaign=campaign, name=export_format, split=split),
                reveal=reveal,
                ratios=",".join(str(r) for r in ratios),
                **options,
            )
        except DjangoPermissionDenied as exc:
            raise DRFPermissionDenied(str(exc)) from None
        job.refresh_from_db()
        response = Response(JobSerializer(job_as_dict(job, request)).data, status=202)
        response["Location"] = reverse("api-job", kwargs={"job_id": job.id}, request=request)
        return response


class JobApi(APIView):
    """A job's status and progress; ``download_url`` once an export is done."""

    @extend_schema(responses={200: JobSerializer, 404: OpenApiResponse(description="No job.")})
    def get(self, request: Request, job_id: str) -> Response:
        job = job_or_404(user=authenticated_user(request), job_id=job_id)
        return Response(JobSerializer(job_as_dict(job, request)).data)


class JobDownloadApi(APIView):
    """The finished export's file. ``X-Row-Count`` and ``X-Checksum-SHA256`` (also as
    ``Repr-Digest``) name what a whole download holds; ``Content-Length`` its size."""

    @extend_schema(
        responses={
            (200, "application/octet-stream"): OpenApiTypes.BINARY,
            404: OpenApiResponse(description="No job, or it is not done."),
        }
    )
    def get(self, request: Request, job_id: str) -> FileResponse:
        job = job_or_404(user=authenticated_user(request), job_id=job_id)
        return job_download_response(job)


__all__ = ["CampaignExportJobApi", "JobApi", "JobDownloadApi", "status"]
