"""Custom qualification types a requester defines (quiz, round, gold accuracy, manual).

System requirements (approval rate, locale, masters, …) are the platforms' own and are
set on a stage's ``qualification_requirements``, not created here.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction

from campaigns.models import QualificationKind, QualificationType
from campaigns.models.choices import SYSTEM_QUALIFICATION_KINDS
from qaportal.errors import DomainError

CUSTOM_QUALIFICATION_KINDS = tuple(
    k for k in QualificationKind.values if k not in SYSTEM_QUALIFICATION_KINDS
)


def qualification_type_create(
    *,
    owner: AbstractBaseUser,
    name: str,
    kind: str,
    description: str = "",
    config: dict[str, Any] | None = None,
) -> QualificationType:
    """Create a custom qualification type of ``owner``; names are unique per owner.

    Published on a platform only when first granted there (``platforms.workers``).
    """
    name = name.strip()
    if not name:
        raise DomainError("A qualification type needs a name.", errors={"name": ["required"]})
    if kind not in CUSTOM_QUALIFICATION_KINDS:
        raise DomainError(
            f"{kind!r} is not a custom qualification kind.",
            errors={"kind": [f"one of {', '.join(CUSTOM_QUALIFICATION_KINDS)}"]},
        )
    if config is not None and not isinstance(config, dict):
        raise DomainError("config is a JSON object.", errors={"config": ["a JSON object"]})
    try:
        with transaction.atomic():
            return QualificationType.objects.create(
                owner_id=owner.pk,
                name=name,
                kind=kind,
                description=description,
                config=config or {},
            )
    except IntegrityError:
        raise DomainError(
            f"You already have a qualification type named {name!r}.",
            errors={"name": ["already exists"]},
        ) from None
