"""Item endpoints: list a stage's items, upload a CSV or JSON Lines file of items."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from campaigns.api.common import stage_or_404
from campaigns.api.jobs import JobSerializer
from campaigns.api.parsers import RAW_FILE_PARSERS, upload_read
from campaigns.design.items import items_upload, items_upload_check
from campaigns.design.selectors import item_list_visible
from campaigns.jobs import job_as_dict, job_upload_start
from campaigns.models import Item


class ItemOutputSerializer(serializers.ModelSerializer):
    source_assignment: serializers.PrimaryKeyRelatedField[Any] = serializers.PrimaryKeyRelatedField(
        read_only=True, allow_null=True
    )

    class Meta:
        model = Item
        fields = [
            "id",
            "external_id",
            "data",
            "gold",
            "source",
            "source_assignment",
            "upload_batch",
            "status",
            "created_at",
        ]
        read_only_fields = fields


class StageItemListApi(generics.ListAPIView):
    """Items of a stage, oldest first; filter by status, source or upload batch."""

    serializer_class = ItemOutputSerializer
    filterset_fields = ["status", "source", "upload_batch"]
    ordering_fields = ["id", "created_at", "external_id"]
    ordering = ["id"]

    def get_queryset(self) -> Any:
        if getattr(self, "swagger_fake_view", False):
            return Item.objects.none()
        stage = stage_or_404(request=self.request, stage_id=self.kwargs["stage_id"])
        return item_list_visible(user=self.request.user).filter(stage_id=stage.pk)


class ItemUploadMultipartSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="A .csv, .jsonl or .ndjson file of items.")


class ItemUploadResultSerializer(serializers.Serializer):
    created = serializers.IntegerField(help_text="Number of items stored.")
    batch = serializers.UUIDField(help_text="Upload batch id; filter items by `upload_batch`.")


class StageItemUploadApi(APIView):
    """Add items to a stage from a file: multipart field ``file``, or the raw body.

    A raw body needs ``Content-Type: text/csv``, ``application/x-ndjson`` or
    ``application/jsonl``. The upload is all or nothing: with any bad row,
    nothing is stored and ``errors`` lists each problem by row and field.
    """

    parser_classes = [MultiPartParser, *RAW_FILE_PARSERS]

    @extend_schema(
        request={
            "multipart/form-data": ItemUploadMultipartSerializer,
            "text/csv": OpenApiTypes.STR,
            "application/x-ndjson": OpenApiTypes.STR,
            "application/jsonl": OpenApiTypes.STR,
        },
        responses={
            201: ItemUploadResultSerializer,
            202: OpenApiResponse(
                JobSerializer,
                description="A file over ITEM_UPLOAD_INLINE_MAX_BYTES: stored by a background "
                "job; follow its url (status, progress, then result or errors).",
            ),
            400: OpenApiResponse(
                description="Rejected upload; `errors` lists row, field, message."
            ),
            404: OpenApiResponse(description="No such stage, or not visible to you."),
            413: OpenApiResponse(description="Larger than ITEM_UPLOAD_MAX_BYTES."),
            415: OpenApiResponse(description="Unsupported Content-Type."),
        },
    )
    def post(self, request: Request, stage_id: int) -> Response:
        # Visibility before the body is parsed: a hidden stage is 404, whatever was sent.
        stage = stage_or_404(request=request, stage_id=stage_id)
        content, filename = upload_read(
            ItemUploadMultipartSerializer(data=request.data), default_name="upload"
        )
        if len(content) > settings.ITEM_UPLOAD_INLINE_MAX_BYTES:
            # Large files are stored by a worker (all or nothing still): follow the job.
            items_upload_check(stage=stage)
            job = job_upload_start(
                stage=stage, content=content, filename=filename, actor=request.user
            )
            job.refresh_from_db()
            response = Response(JobSerializer(job_as_dict(job, request)).data, status=202)
            response["Location"] = response.data["url"]
            return response
        result = items_upload(stage=stage, content=content, filename=filename)
        return Response(ItemUploadResultSerializer(result).data, status=status.HTTP_201_CREATED)
