"""``Idempotency-Key`` for API actions: a decorator over an ``APIView`` method.

Without the header the view runs as always. With it, ``campaigns.api.idempotency_store``
runs the view once per (user, key) and replays the stored answer, marked with
``Idempotent-Replayed: true``; the same key with another body answers 422.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from django.core.files.uploadedfile import UploadedFile
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from campaigns.api.common import authenticated_user
from campaigns.api.idempotency_store import IdempotencyKeyReused, idempotent_call

IDEMPOTENCY_KEY = OpenApiParameter(
    name="Idempotency-Key",
    type=OpenApiTypes.STR,
    location=OpenApiParameter.HEADER,
    required=False,
    description="Any unique string (a UUID). Sent again with the same body, the first "
    "answer is returned and nothing is done twice; with another body the API answers 422. "
    "Remembered 24 hours per user.",
)
IDEMPOTENCY_CONFLICT = OpenApiResponse(
    description="The Idempotency-Key was already used with a different request."
)

ViewMethod = Callable[..., Response]


def _file_digest(upload: UploadedFile) -> dict[str, Any]:
    digest = hashlib.sha256()
    for chunk in upload.chunks():
        digest.update(chunk)
    upload.seek(0)
    return {"file": upload.name, "sha256": digest.hexdigest()}


def request_body(data: Any) -> Any:
    """The request's data as the idempotency hash sees it: uploads by name and SHA-256."""
    if hasattr(data, "lists"):  # QueryDict of a form or a multipart upload
        return {
            key: [_file_digest(v) if isinstance(v, UploadedFile) else v for v in values]
            for key, values in data.lists()
        }
    return data


def idempotent(method: ViewMethod) -> ViewMethod:
    """Make an ``APIView`` handler idempotent under the ``Idempotency-Key`` header."""

    @functools.wraps(method)
    def wrapper(view: Any, request: Request, *args: Any, **kwargs: Any) -> Response:
        key = request.headers.get("Idempotency-Key")
        if key is None:
            return method(view, request, *args, **kwargs)

        def run() -> tuple[int, Any]:
            response = method(view, request, *args, **kwargs)
            return response.status_code, response.data

        try:
            result = idempotent_call(
                user=authenticated_user(request),
                key=key.strip(),
                method=request.method or "POST",
                path=request.get_full_path(),
                body=request_body(request.data),
                run=run,
            )
        except IdempotencyKeyReused as exc:
            return Response(
                {"detail": str(exc), "code": exc.code, "errors": exc.errors},
                status=status.HTTP_422_UNPROCESSABLE_ENTITY,
            )
        headers = {"Idempotent-Replayed": "true"} if result.replayed else None
        return Response(result.body, status=result.status, headers=headers)

    return wrapper


def idempotent_action(
    *, request: Any, responses: Mapping[Any, Any], parameters: Sequence[Any] = ()
) -> Callable[[ViewMethod], ViewMethod]:
    """``idempotent`` with its schema: ``request`` and ``responses`` as ``extend_schema``
    takes them, the ``Idempotency-Key`` header before ``parameters`` and the 422 of a
    reused key after ``responses``."""

    def decorate(method: ViewMethod) -> ViewMethod:
        documented: ViewMethod = extend_schema(
            parameters=[IDEMPOTENCY_KEY, *parameters],
            request=request,
            responses={**responses, 422: IDEMPOTENCY_CONFLICT},
        )(idempotent(method))
        return documented

    return decorate
