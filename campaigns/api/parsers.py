"""Parsers for item files sent as the raw request body."""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.http import QueryDict
from django.utils.datastructures import MultiValueDict
from rest_framework import exceptions, serializers, status
from rest_framework.parsers import BaseParser, DataAndFiles


class PayloadTooLargeError(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The upload is larger than the item upload limit."
    default_code = "payload_too_large"


def upload_limit_exceeded(size: int) -> PayloadTooLargeError:
    limit: int = settings.ITEM_UPLOAD_MAX_BYTES
    return PayloadTooLargeError(f"The upload has {size} bytes or more; the limit is {limit}.")


def upload_read(serializer: serializers.Serializer, *, default_name: str) -> tuple[bytes, str]:
    """The content and name of the ``file`` of ``serializer`` (bound to the request's
    data) once it validates; ``PayloadTooLargeError`` over ``ITEM_UPLOAD_MAX_BYTES``."""
    serializer.is_valid(raise_exception=True)
    upload = serializer.validated_data["file"]
    if upload.size > settings.ITEM_UPLOAD_MAX_BYTES:
        raise upload_limit_exceeded(upload.size)
    return upload.read(), upload.name or default_name


class RawFileParser(BaseParser):
    """Presents a raw body as if it were the multipart field ``file``.

    So the view reads one shape whichever way the file came. Reads at most one
    byte past the limit: an oversized body is refused without holding all of it.
    """

    # The file name the items service sees; its extension tells the format.
    filename = "upload"

    def parse(
        self,
        stream: IO[Any],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> DataAndFiles[Any, Any]:
        limit: int = settings.ITEM_UPLOAD_MAX_BYTES
        content = stream.read(limit + 1) if stream is not None else b""
        if len(content) > limit:
            raise upload_limit_exceeded(len(content))
        upload = SimpleUploadedFile(self.filename, content, content_type=self.media_type)
        return DataAndFiles(QueryDict(), MultiValueDict({"file": [upload]}))


class CsvParser(RawFileParser):
    media_type = "text/csv"
    filename = "upload.csv"


class NdjsonParser(RawFileParser):
    media_type = "application/x-ndjson"
    filename = "upload.jsonl"


class JsonlParser(RawFileParser):
    media_type = "application/jsonl"
    filename = "upload.jsonl"


RAW_FILE_PARSERS: tuple[type[RawFileParser], ...] = (CsvParser, NdjsonParser, JsonlParser)
