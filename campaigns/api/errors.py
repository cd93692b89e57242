"""API errors as JSON with field names; domain errors become 400/409, an unavailable
file store 503."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ObjectDoesNotExist
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DataError
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from qaportal.errors import DomainError, IllegalTransition, StateConflict, StorageUnavailable

# Refusals because of the state the campaign is in, not because of the input.
CONFLICT_ERRORS = (IllegalTransition, StateConflict)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, DomainError):
        body: dict[str, Any] = {"detail": str(exc), "code": exc.code}
        if exc.errors:
            body["errors"] = exc.errors
        conflict = isinstance(exc, CONFLICT_ERRORS)
        return Response(
            body, status=status.HTTP_409_CONFLICT if conflict else status.HTTP_400_BAD_REQUEST
        )
    if isinstance(exc, StorageUnavailable):
        # The object store is down: nothing was recorded; the same request may be sent again.
        return Response(
            {"detail": str(exc), "code": "storage_unavailable"},
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": str(exc.retry_after)},
        )
    if isinstance(exc, DataError):
        # A value the database cannot hold (an integer out of range, a too-long text
        # a serializer did not bound): the request's fault, not the server's.
        return Response(
            {"detail": "A value is out of the range the database can store; nothing was saved."},
            status=status.HTTP_400_BAD_REQUEST,
        )
    if isinstance(exc, ObjectDoesNotExist):
        # A row the view found was deleted by a concurrent request before the
        # service locked it (e.g. PATCH racing a DELETE of the same campaign).
        return Response(
            {"detail": "Not found: it was deleted while this request ran.", "code": "not_found"},
            status=status.HTTP_404_NOT_FOUND,
        )
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(
            exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages}
        )
    return drf_exception_handler(exc, context)
