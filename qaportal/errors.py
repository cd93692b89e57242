"""Errors the services raise: clear messages a requester can act on."""

from __future__ import annotations

from typing import Any


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


class StateConflict(DomainError):
    """The campaign's current state forbids the change (the API answers 409)."""

    code = "state_conflict"
