"""Exporting a campaign's dataset: who may show real worker ids, and the audit kept of
every export (who, what, when, through what, and what it contained: dataset version,
campaign state, row counts, checksum). The formats themselves live in
``campaigns.exports``."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.utils import timezone

from campaigns.design.access import campaign_can_manage
from campaigns.exports import export_format_get
from campaigns.exports.card import ExportContents
from campaigns.exports.common import Tally
from campaigns.exports.hf import HFExportResult, Progress, hf_folder_write
from campaigns.models import Campaign, ExportAudit

Actor = AbstractBaseUser | AnonymousUser | None


def _user_id(actor: Actor) -> int | None:
    return actor.pk if isinstance(actor, AbstractBaseUser) else None


def export_reveal_check(
    *,
    campaign: Campaign,
    actor: Actor,
    export_format: str,
    via: str,
    reason: str = "",
) -> ExportAudit:
    """Allow an export of ``campaign`` with real worker ids and record it.

    Only the campaign's owner or staff may (``PermissionDenied`` otherwise); ``actor``
    None is an operator at the command line. The audit row is written before the
    export starts, so an interrupted export is still on record; ``export_audit_finish``
    adds what it contained once it is done.
    """
    export_format_get(export_format)  # KeyError for an unknown format, before any audit
    if actor is not None and not campaign_can_manage(campaign=campaign, user=actor):
        raise PermissionDenied("Only the campaign's owner (or staff) may export real worker ids.")
    return ExportAudit.objects.create(
        campaign=campaign,
        user_id=_user_id(actor),
        export_format=export_format,
        via=via,
        reason=reason,
        revealed_worker_ids=True,
        campaign_state=campaign.state,
    )


def export_audit_start(
    *, campaign: Campaign, actor: Actor, export_format: str, via: str, reveal: bool = False
) -> ExportAudit:
    """The audit row of an export about to run: ``export_reveal_check``'s (which may
    refuse) when real worker ids are asked, a plain one otherwise."""
    if reveal:
        return export_reveal_check(
            campaign=campaign, actor=actor, export_format=export_format, via=via
        )
    export_format_get(export_format)
    return ExportAudit.objects.create(
        campaign=campaign,
        user_id=_user_id(actor),
        export_format=export_format,
        via=via,
        campaign_state=campaign.state,
    )


def export_audit_finish(
    *, audit: ExportAudit, row_counts: dict[str, int], checksum: str, version: str = ""
) -> ExportAudit:
    """Record what the export of ``audit`` contained, once it has been written."""
    audit.row_counts = row_counts
    audit.checksum = checksum
    audit.dataset_version = version[:40]
    audit.completed_at = timezone.now()
    audit.save(update_fields=["row_counts", "checksum", "dataset_version", "completed_at"])
    return audit


def _finish_with_contents(audit: ExportAudit, contents: ExportContents) -> None:
    export_audit_finish(
        audit=audit,
        row_counts=dict(contents.split_rows),
        checksum=contents.checksum,
        version=contents.version,
    )


def export_stream_audited(
    *,
    campaign: Campaign,
    export_format: str,
    actor: Actor,
    via: str,
    reveal: bool = False,
    tally: Tally | None = None,
    **options: Any,
) -> Iterator[str | bytes]:
    """The ``export_format`` export of ``campaign`` as it streams, recorded in the audit:
    the row is written before the first byte (refused with ``PermissionDenied`` for real
    worker ids asked by someone not the owner), and completed with row counts and a
    checksum when the last byte has gone out. For ``hf`` and ``croissant`` the counts
    are per split and the checksum is the data files'; for the text formats it is the
    sha256 of the text."""
    fmt = export_format_get(export_format)
    audit = export_audit_start(
        campaign=campaign, actor=actor, export_format=export_format, via=via, reveal=reveal
    )
    return _audited(fmt, audit, campaign=campaign, reveal=reveal, tally=tally or Tally(), **options)


def _audited(
    fmt: Any,
    audit: ExportAudit,
    *,
    campaign: Campaign,
    reveal: bool,
    tally: Tally,
    **options: Any,
) -> Iterator[str | bytes]:
    if fmt.describes_contents:
        yield from fmt.stream(
            campaign=campaign,
            reveal=reveal,
            tally=tally,
            on_done=lambda contents: _finish_with_contents(audit, contents),
            **options,
        )
        return
    digest = hashlib.sha256()
    for chunk in fmt.stream(campaign=campaign, reveal=reveal, tally=tally, **options):
        digest.update(chunk.encode("utf-8") if isinstance(chunk, str) else chunk)
        yield chunk
    export_audit_finish(
        audit=audit,
        row_counts={options.get("split", "all"): tally.rows},
        checksum=f"sha256:{digest.hexdigest()}",
    )


def campaign_export(
    *,
    campaign: Campaign,
    export_format: str,
    out: IO[str],
    reveal: bool = False,
    actor: Actor = None,
    via: str = "command",
    progress: Progress | None = None,
    **options: Any,
) -> int:
    """Write ``campaign``'s ``export_format`` export (a text format) to ``out``; rows
    written. Worker ids are pseudonyms unless ``reveal`` (checked and audited by
    ``export_reveal_check``); every export is recorded (``export_stream_audited``).
    ``progress(rows)`` is called after each chunk written."""
    tally = Tally()
    fmt = export_format_get(export_format)
    if fmt.binary:
        raise ValueError(f"The {export_format} format is not text; use campaign_hf_export.")
    for text in export_stream_audited(
        campaign=campaign,
        export_format=export_format,
        actor=actor,
        via=via,
        reveal=reveal,
        tally=tally,
        **options,
    ):
        out.write(str(text))
        if progress is not None:
            progress(tally.rows)
    return tally.rows


def campaign_hf_export(
    *,
    campaign: Campaign,
    target: Path,
    actor: Actor = None,
    via: str = "command",
    reveal: bool = False,
    progress: Progress | None = None,
    **options: Any,
) -> HFExportResult:
    """Write ``campaign``'s ``hf`` folder into ``target`` (``campaigns.exports.hf``) and
    record it in the audit with its version, the campaign's state, rows per split and
    the data checksum. For a background job: ``progress(rows)`` is called as it goes."""
    audit = export_audit_start(
        campaign=campaign, actor=actor, export_format="hf", via=via, reveal=reveal
    )
    result = hf_folder_write(
        campaign=campaign, target=target, reveal=reveal, progress=progress, **options
    )
    _finish_with_contents(audit, result.contents)
    return result
