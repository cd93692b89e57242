"""The campaign's datasheet: the requester's Markdown, saved with the campaign and put
in every ``hf`` export (``campaigns.exports.datasheet`` pre-fills it)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import transaction

from campaigns.models import Campaign, Datasheet
from campaigns.services.errors import DomainError

MAX_DATASHEET_CHARS = 100_000


def datasheet_save(
    *, campaign: Campaign, actor: AbstractBaseUser | AnonymousUser | None, text: str
) -> Datasheet:
    """Keep ``text`` as the campaign's datasheet (replacing the saved one, if any).

    Line endings are normalised; empty text or more than ``MAX_DATASHEET_CHARS`` is a
    ``DomainError`` naming the field ``text``. One row per campaign, updated in place
    under a row lock, so two saves at once leave the later one.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    if not text:
        message = "Write the datasheet, or reset it to the pre-filled text."
        raise DomainError(message, errors={"text": [message]})
    if len(text) > MAX_DATASHEET_CHARS:
        message = f"Keep the datasheet under {MAX_DATASHEET_CHARS:,} characters."
        raise DomainError(message, errors={"text": [message]})
    user_id = actor.pk if isinstance(actor, AbstractBaseUser) else None
    with transaction.atomic():
        sheet, _ = Datasheet.objects.select_for_update().update_or_create(
            campaign=campaign, defaults={"text": text + "\n", "updated_by_id": user_id}
        )
    return sheet


def datasheet_reset(*, campaign: Campaign) -> bool:
    """Forget the saved datasheet: exports use the pre-filled text again. Whether one
    was saved."""
    deleted, _ = Datasheet.objects.filter(campaign=campaign).delete()
    return bool(deleted)
