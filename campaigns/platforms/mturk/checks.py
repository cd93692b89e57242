"""What MTurk accepts and botocore does not check: id shapes, money, text lengths.

Each check raises ``PermanentProviderError`` with a message a requester can act
on, before any call is made. Worker ids are personal data: messages show them
shortened (``short_worker``).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from decimal import Decimal, InvalidOperation

from campaigns.platforms.base import PermanentProviderError

_ID = re.compile(r"^[A-Z0-9]+$")
_WORKER_ID = re.compile(r"^A[A-Z0-9]+$")
_MONEY = re.compile(r"^\d{1,6}\.\d{2}$")
# C0 controls but tab and newline (which a feedback may hold), DEL, and C1 controls.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
FEEDBACK_MAX = 1024
REASON_MAX = 1024
SUBJECT_MAX = 200
MESSAGE_MAX = 4096
NOTIFY_CHUNK = 100
TOKEN_MAX = 64
ANNOTATION_MAX = 255
ANNOTATION_PREFIX = "qaportal:"


def short_worker(worker_id: str) -> str:
    """A WorkerId fit for logs and messages: personal data, so never in full."""
    return f"{worker_id[:4]}…" if worker_id else "?"


def check_id(value: object, what: str) -> str:
    """An MTurk id (HIT, assignment, HIT type, qualification type): ``^[A-Z0-9]+$``."""
    text = str(value or "")
    if not _ID.match(text) or len(text) > 64:
        raise PermanentProviderError(f"{what} {text[:70]!r} is not an MTurk id ([A-Z0-9]+).")
    return text


def check_worker_id(value: object) -> str:
    """An MTurk WorkerId: ``A`` then capitals and digits."""
    text = str(value or "")
    if not _WORKER_ID.match(text) or len(text) > 64:
        raise PermanentProviderError(
            f"Worker id {short_worker(text)!r} is not an MTurk WorkerId (A[A-Z0-9]+)."
        )
    return text


def check_money(value: object, what: str = "Amount") -> str:
    """A positive USD amount in MTurk's format ``"0.00"`` (whole cents)."""
    try:
        amount = Decimal(str(value))
    except (InvalidOperation, ValueError):
        raise PermanentProviderError(f"{what} {value!r} is not a number.") from None
    if amount != amount.quantize(Decimal("0.01")):
        raise PermanentProviderError(f"{what} {value} is not in whole cents.")
    text = f"{amount:.2f}"
    if amount <= 0 or not _MONEY.match(text):
        raise PermanentProviderError(f"{what} {text} must be more than 0.00 USD.")
    return text


def check_text(
    value: object, what: str, *, maximum: int, required: bool = True, newlines: bool = True
) -> str:
    """Text MTurk takes: no control characters, at most ``maximum`` characters."""
    text = str(value or "").strip()
    if not newlines:
        text = re.sub(r"[\t\r\n]+", " ", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if required and not text:
        raise PermanentProviderError(f"{what} is required by MTurk.")
    if _CONTROL.search(text):
        raise PermanentProviderError(f"{what} holds control characters, which MTurk refuses.")
    if len(text) > maximum:
        raise PermanentProviderError(
            f"{what} has {len(text)} characters; MTurk takes at most {maximum}."
        )
    return text


def deployment_tag() -> str:
    """A short tag of this deployment (keyed by ``SECRET_KEY``): two qaportal sites
    sharing one MTurk account never take each other's tokens or HITs for their own."""
    from django.conf import settings

    digest = hmac.new(settings.SECRET_KEY.encode(), b"qaportal-mturk", hashlib.sha256)
    return digest.hexdigest()[:8]


def request_token(key: str, *parts: object) -> str:
    """MTurk's ``UniqueRequestToken`` for operation ``key`` (and a part, say a HIT):
    the same on every attempt, at most 64 characters."""
    raw = ":".join([deployment_tag(), key, *(str(p) for p in parts)])
    return "qa-" + hashlib.sha256(raw.encode()).hexdigest()[: TOKEN_MAX - 3]


def annotation(key: str, *parts: object) -> str:
    """``RequesterAnnotation`` marking what an operation made (found again by it)."""
    raw = ":".join([ANNOTATION_PREFIX + deployment_tag(), key, *(str(p) for p in parts)])
    if len(raw) <= ANNOTATION_MAX:
        return raw
    return f"{ANNOTATION_PREFIX}{deployment_tag()}:" + hashlib.sha256(raw.encode()).hexdigest()
