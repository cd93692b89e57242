"""Dataset exports: a registry of formats, each streaming its text.

A format's ``stream`` is ``(*, campaign, reveal=False, tally=None, **options)`` yielding
text: it reads the campaign a chunk at a time and yields each chunk's text, so an
export of any size runs in flat memory, to a file (``export_write``) or as a streamed
HTTP response; ``tally.rows`` counts the rows produced. Worker ids appear as
pseudonyms unless ``reveal`` is set (``campaigns.services.exports`` checks who may and
keeps an audit).
Registering a format is one entry in ``FORMATS``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from campaigns.exports.answer_agreement import answer_agreement_stream
from campaigns.exports.common import Tally
from campaigns.exports.mintaka import mintaka_stream
from campaigns.exports.provenance import (
    collection_metadata_stream,
    csv_stream,
    jsonl_stream,
)

Stream = Callable[..., Iterator[str]]


def mturk_csv_stream(
    *, campaign: Any, reveal: bool = False, tally: Tally | None = None, **_: Any
) -> Iterator[str]:
    """MTurk's batch results layout (``campaigns.selectors_mturk_csv``), as text."""
    import csv
    import io

    from campaigns.selectors_mturk_csv import mturk_csv_rows

    tally = tally or Tally()
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    first = True
    for row in mturk_csv_rows(campaign_id=campaign.pk, reveal_worker_ids=reveal):
        writer.writerow(row)
        if first:
            first = False
        else:
            tally.rows += 1
        if buffer.tell() > 256 * 1024:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    if buffer.tell():
        yield buffer.getvalue()


@dataclass(frozen=True)
class ExportFormat:
    name: str
    title: str
    extension: str
    content_type: str
    stream: Stream
    description: str


FORMATS: dict[str, ExportFormat] = {
    f.name: f
    for f in (
        ExportFormat(
            "mintaka",
            "Mintaka JSON",
            "json",
            "application/json",
            mintaka_stream,
            "Mintaka's schema: question, answer with answerType and linked entities, "
            "questionEntity with spans, category, complexityType; one split or all.",
        ),
        ExportFormat(
            "jsonl",
            "JSON Lines",
            "jsonl",
            "application/x-ndjson",
            jsonl_stream,
            "One accepted example per line with its item, answers and stage lineage.",
        ),
        ExportFormat(
            "csv",
            "CSV",
            "csv",
            "text/csv",
            csv_stream,
            "The accepted examples as CSV; JSON columns hold JSON text.",
        ),
        ExportFormat(
            "collection-metadata",
            "Collection metadata",
            "csv",
            "text/csv",
            collection_metadata_stream,
            "Per stored assignment: worker, HIT, assignment, reward, approval status, "
            "upload, accept and submit times, work time; rejected work marked.",
        ),
        ExportFormat(
            "answer-agreement",
            "Answer agreement (WhyQA)",
            "csv",
            "text/csv",
            answer_agreement_stream,
            "Per sentence-selection stage: sentence-id Total Avg and Best Match, ROUGE-1, "
            "-2, -SU4, -L with and without No-Answer, and the random baseline (WhyQA §3.2).",
        ),
        ExportFormat(
            "mturk-csv",
            "MTurk batch results CSV",
            "csv",
            "text/csv",
            mturk_csv_stream,
            "MTurk's Batch_*_batch_results.csv layout (Input.*, Answer.*, Approve, Reject); "
            "fill Approve/Reject and upload it back for bulk review.",
        ),
    )
}


def export_format_get(name: str) -> ExportFormat:
    """The format called ``name``; ``KeyError`` with the known names otherwise."""
    try:
        return FORMATS[name]
    except KeyError:
        raise KeyError(
            f"Unknown export format {name!r}; use one of {', '.join(FORMATS)}."
        ) from None


def export_write(*, campaign: Any, name: str, out: IO[str], **options: Any) -> int:
    """Write the ``name`` export of ``campaign`` to ``out``; rows written."""
    tally = Tally()
    for text in export_format_get(name).stream(campaign=campaign, tally=tally, **options):
        out.write(text)
    return tally.rows
