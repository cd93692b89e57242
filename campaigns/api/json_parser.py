"""The API's JSON parser: DRF's, refusing (400) bodies nested deeper than
``MAX_JSON_DEPTH`` before parsing them, and text that ``jsonb`` cannot store."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from qaportal.jsonsafe import MAX_JSON_DEPTH, json_depth_exceeds, unstorable_path


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


class SafeJSONParser(JSONParser):
    def parse(
        self,
        stream: IO[Any],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        limit: int = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise ParseError(f"The JSON body is larger than {limit} bytes.")
        if json_depth_exceeds(raw):
            raise ParseError(
                f"The JSON body is nested more than {MAX_JSON_DEPTH} levels deep; "
                "nothing qaportal takes is that deep."
            )
        try:
            data = json.loads(
                raw.decode((parser_context or {}).get("encoding") or "utf-8"),
                parse_constant=_refuse_constant,
            )
        except (ValueError, RecursionError) as exc:
            raise ParseError(f"JSON parse error - {str(exc)[:200]}") from None
        found = unstorable_path(data)
        if found is not None:
            where, reason = found
            raise ParseError(f"The value at {where or 'the top'!r} {reason}.")
        return data
