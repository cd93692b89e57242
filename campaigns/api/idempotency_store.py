"""Idempotency keys of the REST API: a repeated request gets the first answer again.

A client sends ``Idempotency-Key: <key>`` with a review action, a bonus or a
message. The first request with that key runs and its answer (status and body) is
stored with a hash of the request; the same key with the same request later gets
the stored answer and nothing happens again; the same key with another request is
refused (``IdempotencyKeyReused``, 422). Keys are per user and expire after
``settings.API_IDEMPOTENCY_TTL_HOURS``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.serializers.json import DjangoJSONEncoder
from django.db import IntegrityError, transaction
from django.utils import timezone

from campaigns.models import IdempotencyRecord
from qaportal.errors import DomainError

MAX_KEY_LENGTH = 200
IN_PROGRESS = 0  # response_status of a record whose request is still running


class IdempotencyKeyReused(DomainError):
    """The key was used before with a different request."""

    code = "idempotency_key_reused"


@dataclass(frozen=True)
class IdempotentResult:
    status: int
    body: Any
    replayed: bool


def idempotency_request_hash(*, method: str, path: str, body: Any) -> str:
    """SHA-256 of the method, the full path and the body in canonical JSON."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), cls=DjangoJSONEncoder)
    return hashlib.sha256(f"{method.upper()}\n{path}\n{canonical}".encode()).hexdigest()


def idempotent_call(
    *,
    user: AbstractBaseUser,
    key: str,
    method: str,
    path: str,
    body: Any,
    run: Callable[[], tuple[int, Any]],
) -> IdempotentResult:
    """Run ``run`` once per (``user``, ``key``); answer later calls with its stored result.

    ``run`` returns ``(status, body)``. Only a 2xx answer is stored: after a
    refusal (4xx) or an exception nothing is kept, so the client may correct the
    request and send it again with the same key.

    Locking: a placeholder row for (user, key) is inserted before ``run`` in the
    caller's new transaction; a concurrent request with the same key waits on the
    unique index until this one commits, then gets the stored answer. ``run`` runs
    inside that transaction, so its own ``on_commit`` work starts after the record
    is stored.
    """
    if not key or len(key) > MAX_KEY_LENGTH:
        raise DomainError(
            f"An Idempotency-Key is 1 to {MAX_KEY_LENGTH} characters.",
            errors={"Idempotency-Key": ["1 to 200 characters"]},
        )
    request_hash = idempotency_request_hash(method=method, path=path, body=body)
    expired_before = timezone.now() - timedelta(hours=settings.API_IDEMPOTENCY_TTL_HOURS)
    with transaction.atomic():
        IdempotencyRecord.objects.filter(
            user_id=user.pk, key=key, created_at__lt=expired_before
        ).delete()
        try:
            with transaction.atomic():
                record = IdempotencyRecord.objects.create(
                    user_id=user.pk,
                    key=key,
                    request_hash=request_hash,
                    method=method.upper()[:8],
                    path=path[:500],
                    response_status=IN_PROGRESS,
                    created_at=timezone.now(),
                )
        except IntegrityError:
            stored = IdempotencyRecord.objects.select_for_update().get(user_id=user.pk, key=key)
            if stored.request_hash != request_hash:
                raise IdempotencyKeyReused(
                    f"The Idempotency-Key {key!r} was already used with a different request "
                    f"({stored.method} {stored.path}); use a new key for a new request.",
                    errors={"Idempotency-Key": ["already used with a different request"]},
                ) from None
            return IdempotentResult(stored.response_status, stored.response_body, replayed=True)
        status, response_body = run()
        if 200 <= status < 300:
            record.response_status = status
            record.response_body = response_body
            record.save(update_fields=["response_status", "response_body"])
        else:
            record.delete()
    return IdempotentResult(status, response_body, replayed=False)


def idempotency_records_purge(*, now: Any = None) -> int:
    """Delete records older than the time to live; returns how many went."""
    cutoff = (now or timezone.now()) - timedelta(hours=settings.API_IDEMPOTENCY_TTL_HOURS)
    deleted, _ = IdempotencyRecord.objects.filter(created_at__lt=cutoff).delete()
    return deleted
