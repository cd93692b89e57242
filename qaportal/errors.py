"""Errors the services raise: clear messages a requester can act on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from qaportal.jsonsafe import clip_message

MAX_LISTED_ERRORS = 100  # the problems an ``UploadRejected`` lists, at the most


class DomainError(Exception):
    """A request the domain refuses. ``errors`` holds field- or row-level details."""

    code = "invalid"

    def __init__(self, message: str, *, errors: Any = None) -> None:
        super().__init__(message)
        self.errors = errors


class IllegalTransition(DomainError):
    code = "illegal_transition"


class UploadRejected(DomainError):
    """An item upload with problems; nothing of it was stored."""

    code = "upload_rejected"


@dataclass
class UploadProblems:
    """Row-level problems of one upload, in the shape ``UploadRejected.errors`` carries;
    each reader words its own refusal from ``ordered``."""

    items: list[dict[str, Any]] = field(default_factory=list)

    def add(self, row: int | None, path: str, message: str) -> None:
        self.items.append(
            {"row": row, "field": clip_message(path), "message": clip_message(message)}
        )

    def __bool__(self) -> bool:
        return bool(self.items)

    def ordered(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Every problem in row order, and the first ``MAX_LISTED_ERRORS`` (those listed)."""
        ordered = sorted(self.items, key=lambda p: p["row"] or 0)
        return ordered, ordered[:MAX_LISTED_ERRORS]


class StateConflict(DomainError):
    """The campaign's current state forbids the change (the API answers 409)."""

    code = "state_conflict"


class StorageUnavailable(Exception):
    """The object store (job files) does not answer: try again shortly (the API answers
    503 with ``Retry-After``). Not a ``DomainError``: nothing is wrong with the request."""

    retry_after = 10


def storage_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` says the object store is unreachable or failing for now (a refused
    or timed-out connection, a 5xx), as opposed to a request it refuses for good."""
    try:
        from botocore.exceptions import BotoCoreError, ClientError
    except ImportError:  # pragma: no cover - boto3 is a dependency
        return False
    if isinstance(exc, ClientError):
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
        return int(status) >= 500 or exc.response.get("Error", {}).get("Code") in (
            "SlowDown",
            "RequestTimeout",
            "ServiceUnavailable",
        )
    # EndpointConnectionError, ConnectTimeoutError, ReadTimeoutError, ConnectionClosedError…
    return isinstance(exc, BotoCoreError) and type(exc).__name__ not in (
        "NoCredentialsError",
        "PartialCredentialsError",
        "ParamValidationError",
    )
