"""Dataset exports: a registry of formats, each streaming its text.

A format's ``stream`` is ``(*, campaign, reveal=False, tally=None, **options)`` yielding
text: it reads the campaign a chunk at a time and yields each chunk's text, so an
export of any size runs in flat memory, to a file (``export_write``) or as a streamed
HTTP response; ``tally.rows`` counts the rows produced. Worker ids appear as
pseudonyms unless ``reveal`` is set (``campaigns.exports.services`` checks who may and
keeps an audit).
Registering a format is one entry in ``FORMATS``.

``hf`` is a folder (``campaigns.exports.hf``): its ``stream`` yields the folder as zip
bytes for HTTP (``binary``); commands and background jobs write the folder itself with
``hf_folder_write``. ``croissant`` is that folder's ``croissant.json`` alone. Both tell
what they contained (``describes_contents``): their ``stream`` takes ``on_done``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from campaigns.exports.answer_agreement import answer_agreement_stream
from campaigns.exports.collection_metadata import collection_metadata_stream
from campaigns.exports.common import Tally
from campaigns.exports.graphquestions import graphquestions_stream
from campaigns.exports.hf import croissant_stream, hf_zip_stream
from campaigns.exports.mintaka import mintaka_stream
from campaigns.exports.provenance import csv_stream, jsonl_stream
from campaigns.models import Campaign
from campaigns.platforms.mturk.csv.selectors import mturk_csv_rows

Stream = Callable[..., Iterator[Any]]


def mturk_csv_stream(
    *, campaign: Any, reveal: bool = False, tally: Tally | None = None, **_: Any
) -> Iterator[str]:
    """MTurk's batch results layout (``campaigns.platforms.mturk.csv.selectors``), as text."""
    import csv
    import io

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
    binary: bool = False  # the stream yields bytes (a zip), not text
    describes_contents: bool = False  # the stream takes ``on_done(ExportContents)``


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
            "graphquestions",
            "GraphQuestions JSON Lines",
            "jsonl",
            "application/x-ndjson",
            graphquestions_stream,
            "One accepted paraphrase per line with its canonical question, graph query, "
            "SPARQL, answers and characteristics; train/test split grouped by graph query "
            "(Su et al. 2016 §7.2).",
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
        ExportFormat(
            "hf",
            "Hugging Face dataset (zip)",
            "zip",
            "application/zip",
            hf_zip_stream,
            "A folder that datasets.load_dataset loads: Parquet train/dev/test splits, "
            "a dataset card (README.md) with pay, agreement and workers, croissant.json "
            "and the datasheet; zipped for download.",
            binary=True,
            describes_contents=True,
        ),
        ExportFormat(
            "croissant",
            "Croissant 1.1 metadata",
            "json",
            "application/ld+json",
            croissant_stream,
            "The hf export's Croissant 1.1 JSON-LD: files with checksums, record sets, "
            "fields and the responsible-AI properties.",
            describes_contents=True,
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
    """Write the ``name`` export of ``campaign`` (a text format) to ``out``; rows written."""
    tally = Tally()
    fmt = export_format_get(name)
    if fmt.binary:
        raise ValueError(f"The {name} export is a folder; write it with hf_folder_write.")
    for text in fmt.stream(campaign=campaign, tally=tally, **options):
        out.write(text)
    return tally.rows


def export_filename(*, campaign: Campaign, name: str, split: str) -> str:
    """``<slug>-<format>[-<split>].<extension>``."""
    tail = f"-{split}" if name == "mintaka" and split != "all" else ""
    return f"{campaign.slug}-{name}{tail}.{export_format_get(name).extension}"
