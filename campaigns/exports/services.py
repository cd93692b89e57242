"""Exporting a campaign's dataset: who may show real worker ids, and the audit kept
when they do. The formats themselves live in ``campaigns.exports``."""

from __future__ import annotations

from typing import IO, Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied

from campaigns.design.access import campaign_can_manage
from campaigns.exports import export_format_get, export_write
from campaigns.models import Campaign, ExportAudit


def export_reveal_check(
    *,
    campaign: Campaign,
    actor: AbstractBaseUser | AnonymousUser | None,
    export_format: str,
    via: str,
    reason: str = "",
) -> ExportAudit:
    """Allow an export of ``campaign`` with real worker ids and record it.

    Only the campaign's owner or staff may (``PermissionDenied`` otherwise); ``actor``
    None is an operator at the command line. The audit row is written before the
    export starts, so an interrupted export is still on record.
    """
    export_format_get(export_format)  # KeyError for an unknown format, before any audit
    if actor is not None and not campaign_can_manage(campaign=campaign, user=actor):
        raise PermissionDenied("Only the campaign's owner (or staff) may export real worker ids.")
    return ExportAudit.objects.create(
        campaign=campaign,
        user_id=actor.pk if isinstance(actor, AbstractBaseUser) else None,
        export_format=export_format,
        via=via,
        reason=reason,
    )


def campaign_export(
    *,
    campaign: Campaign,
    export_format: str,
    out: IO[str],
    reveal: bool = False,
    actor: AbstractBaseUser | AnonymousUser | None = None,
    via: str = "command",
    **options: Any,
) -> int:
    """Write ``campaign``'s ``export_format`` export to ``out``; rows written. Worker ids
    are pseudonyms unless ``reveal`` (checked and audited by ``export_reveal_check``)."""
    if reveal:
        export_reveal_check(campaign=campaign, actor=actor, export_format=export_format, via=via)
    return export_write(campaign=campaign, name=export_format, out=out, reveal=reveal, **options)
