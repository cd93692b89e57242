"""A campaign's own platform credentials: validated, encrypted at rest, never shown.

A campaign normally uses the platform account configured in the environment
(``PROLIFIC_API_TOKEN``, ``MTURK_ACCESS_KEY_ID`` …). Its owner can store other
credentials for it (a lab's own Prolific workspace, a grant's MTurk account);
the providers then act with those (``Platform.provider``). Which fields a platform
takes is its own (``Platform.credential_fields``, in its folder).

Encryption: Fernet (AES-128-CBC + HMAC-SHA256) from ``cryptography``, under the
keys of ``CREDENTIALS_KEYS`` (comma-separated; the first encrypts, every one
decrypts, so a key can be rotated in), or, when that is unset, one key derived
from ``SECRET_KEY`` with HKDF. The clear values exist only in memory, on their
way to a platform client; no log line, page, API answer or repr carries them.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import ImproperlyConfigured, PermissionDenied
from django.db import transaction

from campaigns.design.access import campaign_can_manage
from campaigns.design.platform import CredentialField, platform_for
from campaigns.models import Campaign, ProviderCredential
from qaportal.errors import DomainError


def _fields(provider: str) -> tuple[CredentialField, ...]:
    """What ``provider`` takes (``Platform.credential_fields``, in the platform's folder)."""
    try:
        return platform_for(provider).credential_fields
    except ValueError:  # not a registered platform
        return ()


class CredentialsUnreadable(ImproperlyConfigured):
    """Stored credentials that none of the configured keys decrypts."""


def _fernet() -> MultiFernet:
    configured = [k.strip() for k in getattr(settings, "CREDENTIALS_KEYS", "").split(",")]
    keys = [k for k in configured if k]
    if not keys:
        derived = HKDF(
            algorithm=hashes.SHA256(), length=32, salt=None, info=b"qaportal credentials"
        ).derive(settings.SECRET_KEY.encode())
        keys = [base64.urlsafe_b64encode(derived).decode()]
    try:
        return MultiFernet([Fernet(k.encode()) for k in keys])
    except ValueError as exc:
        raise ImproperlyConfigured(
            "CREDENTIALS_KEYS must hold Fernet keys (32 url-safe base64-encoded bytes), "
            "comma-separated."
        ) from exc


def credentials_encrypt(values: dict[str, str]) -> str:
    """The Fernet token of ``values`` under the first configured key."""
    return _fernet().encrypt(json.dumps(values, sort_keys=True).encode()).decode()


def credentials_decrypt(ciphertext: str) -> dict[str, str]:
    """The values of a token; ``CredentialsUnreadable`` when no configured key opens it."""
    try:
        data: dict[str, str] = json.loads(_fernet().decrypt(ciphertext.encode()))
    except InvalidToken as exc:
        raise CredentialsUnreadable(
            "Stored platform credentials cannot be decrypted with CREDENTIALS_KEYS "
            "(was the key, or SECRET_KEY, changed without keeping the old one?). "
            "Store them again."
        ) from exc
    return data


def _hint(value: str) -> str:
    return "…" + value[-4:] if len(value) >= 12 else "…"


def credentials_validate(*, provider: str, values: dict[str, Any]) -> dict[str, str]:
    """The cleaned values for ``provider``; ``DomainError`` naming each bad field.

    The messages never repeat a value: they may be shown and logged.
    """
    fields = _fields(provider)
    if not fields:
        raise DomainError(
            f"The {provider!r} provider takes no credentials.", errors={"provider": ["none"]}
        )
    known = {f.name for f in fields}
    errors: dict[str, list[str]] = {
        name: ["Unknown field."] for name in sorted(set(values) - known)
    }
    cleaned: dict[str, str] = {}
    for field in fields:
        value = values.get(field.name, "")
        if not isinstance(value, str):
            errors[field.name] = ["Must be a string."]
            continue
        value = value.strip()
        if not value:
            if field.required:
                errors[field.name] = [f"{field.help} is required."]
            continue
        if not re.fullmatch(field.pattern, value):
            errors[field.name] = [f"This does not look like a {field.help}."]
            continue
        cleaned[field.name] = value
    if errors:
        raise DomainError("Invalid platform credentials.", errors=errors)
    return cleaned


def campaign_credentials_set(
    *, campaign: Campaign, actor: AbstractBaseUser | AnonymousUser, values: dict[str, Any]
) -> ProviderCredential:
    """Store (or replace) the campaign's credentials for its provider, encrypted.

    Owner or staff only (``PermissionDenied`` for collaborators): credentials decide
    whose money a campaign spends. Locking: one row per (campaign, provider), written
    with ``update_or_create`` under the unique constraint.
    """
    if not campaign_can_manage(campaign=campaign, user=actor):
        raise PermissionDenied("Only the owner can set a campaign's platform credentials.")
    cleaned = credentials_validate(provider=campaign.provider, values=values)
    with transaction.atomic():
        credential, _ = ProviderCredential.objects.update_or_create(
            campaign=campaign,
            provider=campaign.provider,
            defaults={
                "ciphertext": credentials_encrypt(cleaned),
                "hints": {name: _hint(value) for name, value in cleaned.items()},
                "updated_by": actor if isinstance(actor, get_user_model()) else None,
            },
        )
    return credential


def campaign_credentials_delete(
    *, campaign: Campaign, actor: AbstractBaseUser | AnonymousUser
) -> bool:
    """Forget the campaign's own credentials (back to the environment's); whether any were."""
    if not campaign_can_manage(campaign=campaign, user=actor):
        raise PermissionDenied("Only the owner can remove a campaign's platform credentials.")
    deleted, _ = ProviderCredential.objects.filter(campaign=campaign).delete()
    return deleted > 0


def campaign_credentials_for(*, campaign_id: int | None, provider: str) -> dict[str, str] | None:
    """The clear credentials a campaign has stored for ``provider``, or None.

    Only ``Platform.provider`` should call this: the result goes
    straight into a platform client and nowhere else.
    """
    if campaign_id is None:
        return None
    ciphertext = (
        ProviderCredential.objects.filter(campaign_id=campaign_id, provider=provider)
        .values_list("ciphertext", flat=True)
        .first()
    )
    return None if ciphertext is None else credentials_decrypt(ciphertext)


def campaign_credentials_summary(*, campaign: Campaign) -> dict[str, Any]:
    """What may be shown of a campaign's credentials: which account, hints, never a value."""
    own = ProviderCredential.objects.filter(
        campaign=campaign, provider=campaign.provider
    ).select_related("updated_by")
    credential = own.first()
    fields = [f.name for f in _fields(campaign.provider)]
    return {
        "provider": campaign.provider,
        "configured": credential is not None,
        "source": "campaign" if credential is not None else ("environment" if fields else "none"),
        "fields": fields,
        "hints": credential.hints if credential else {},
        "updated_at": credential.updated_at if credential else None,
        "updated_by": (
            credential.updated_by.get_username()
            if credential is not None and credential.updated_by is not None
            else None
        ),
    }
