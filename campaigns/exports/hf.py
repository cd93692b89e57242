"""The ``hf`` export: a folder that ``datasets.load_dataset(PATH)`` loads.

    README.md                      the dataset card (``campaigns.exports.card``)
    croissant.json                 Croissant 1.1 with responsible-AI fields
    datasheet.md                   the datasheet (also inside the card)
    data/train-00000-of-00001.parquet, data/dev-…, data/test-…

``hf_folder_write`` streams the campaign's rows (keyset pages, ``hf_rows``) into one
Parquet writer per split, a row group at a time, so memory stays flat whatever the
size; a background job calls it with a target folder and a ``progress`` callback. Over
HTTP the folder is sent as a zip (``hf_zip_stream``). ``pyarrow``, ``datasets`` and
``mlcroissant`` are imported inside the functions: the web process loads them only when
an export runs.
"""

from __future__ import annotations

import gc
import hashlib
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.utils import timezone

from campaigns.exports.card import ExportContents, card_markdown
from campaigns.exports.card_facts import campaign_facts
from campaigns.exports.common import Tally
from campaigns.exports.croissant import croissant_json, croissant_metadata
from campaigns.exports.datasheet import datasheet_text
from campaigns.exports.hf_rows import DatasetShape, dataset_rows, dataset_shape
from campaigns.exports.mintaka import DEFAULT_RATIOS, SPLITS, parse_ratios
from campaigns.models import Campaign

ROW_GROUP = 20_000
Progress = Callable[[int], None]

FIELD_NOTES = {
    "mintaka": {
        "id": "the example's id (stable across exports)",
        "question": "the question as written",
        "translations": "the question in Mintaka's eight languages, where the writer gave them",
        "questionEntity": "JSON objects: Wikidata entities linked in the question, with spans",
        "answer": "JSON object: answerType, answer (entities, number, boolean, date or text), "
        "mention, answerNum for counts",
        "category": "the topic",
        "complexityType": "the complexity type",
    },
    "examples": {
        "assignment": "qaportal's id of the approved assignment",
        "stage": "the stage's name",
        "task_type": "the stage's task type",
        "item_external_id": "the item's id",
        "item_data": "JSON: the item shown to the worker",
        "worker": "the worker's pseudonym",
        "answers": "JSON: the worker's answers",
        "submitted_at": "when the worker submitted (UTC)",
        "decided_at": "when it was approved (UTC)",
        "decision_source": "who or what approved it (requester, a rule)",
        "lineage": "the assignments whose output became this item, first stage first",
        "model_calls": "the model in the loop: each call made for this assignment (purpose, "
        "item, try, status, the model's id and version, its answer)",
        "llm_flag": "JSON: whether a language model may have written the answer, with the "
        "evidence (score, similarity and telemetry components, thresholds, the model's "
        "text); null when the stage did not ask",
    },
}


@dataclass(frozen=True)
class HFExportResult:
    folder: Path
    contents: ExportContents


def _file_name(split: str) -> str:
    return f"data/{split}-00000-of-00001.parquet"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def data_checksum(folder: Path, files: Sequence[str]) -> str:
    """``sha256:<hex>`` over the data files' own sha256 digests, in name order: equal
    for two exports exactly when their data files are byte for byte the same."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(f"{name} {_sha256(folder / name)}\n".encode())
    return f"sha256:{digest.hexdigest()}"


def _storage_type(t: Any, pa: Any) -> Any:
    """``t`` with every extension type replaced by its storage type, recursively."""
    if isinstance(t, pa.BaseExtensionType):
        return _storage_type(t.storage_type, pa)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(_storage_type(t.value_type, pa))
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_storage_type(f.type, pa)) for f in t])
    return t


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector paused while rows are made: they hold no cycles
    (reference counting frees them), yet the buffered row groups, alive across many
    allocations, made it run full collections over them and the whole heap, a fifth
    of the export's time. Resumed afterwards if it was on."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def parquet_write(
    *,
    campaign: Campaign,
    folder: Path,
    shape: DatasetShape,
    ratios: Sequence[Decimal],
    seed: int,
    reveal: bool = False,
    progress: Progress | None = None,
    tally: Tally | None = None,
) -> dict[str, int]:
    """Write the campaign's rows into ``folder/data/<split>-00000-of-00001.parquet``, a
    row group of ``ROW_GROUP`` rows at a time; rows per non-empty split (an empty split
    has no file: ``datasets`` cannot load one). ``progress(rows)`` is
    called after each row group with the rows written so far."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    features = shape.features()
    schema = features.arrow_schema
    # Rows are converted with extension types (JSON) as their storage, then cast.
    storage = pa.schema([f.with_type(_storage_type(f.type, pa)) for f in schema])
    (folder / "data").mkdir(parents=True, exist_ok=True)
    # A split's file is opened with its first rows: ``datasets`` refuses an empty split.
    writers: dict[str, Any] = {}
    for stale in SPLITS:
        (folder / _file_name(stale)).unlink(missing_ok=True)
    buffers: dict[str, list[dict[str, Any]]] = {s: [] for s in SPLITS}
    counts = dict.fromkeys(SPLITS, 0)
    tally = tally or Tally()

    def flush(split: str) -> None:
        rows = buffers[split]
        if rows:
            columns = {name: [r[name] for r in rows] for name in storage.names}
            table = pa.Table.from_pydict(columns, schema=storage).cast(schema)
            if split not in writers:
                writers[split] = pq.ParquetWriter(folder / _file_name(split), schema)
            writers[split].write_table(table)
            counts[split] += len(rows)
            tally.rows += len(rows)
            buffers[split] = []
            if progress is not None:
                progress(tally.rows)

    try:
        with _no_cycle_collection():
            for split, row in dataset_rows(
                campaign=campaign, ratios=ratios, seed=seed, reveal=reveal, shape=shape
            ):
                buffers[split].append(row)
                if len(buffers[split]) >= ROW_GROUP:
                    flush(split)
            for split in SPLITS:
                flush(split)
    finally:
        for writer in writers.values():
            writer.close()
    return {split: n for split, n in counts.items() if n}


def hf_folder_write(
    *,
    campaign: Campaign,
    target: Path,
    ratios: Sequence[Decimal] | str = DEFAULT_RATIOS,
    seed: int = 0,
    reveal: bool = False,
    version: str = "",
    license: str = "unknown",
    languages: Sequence[str] = ("en",),
    url: str = "",
    progress: Progress | None = None,
    tally: Tally | None = None,
) -> HFExportResult:
    """Write the campaign's ``hf`` folder into ``target`` (created if missing; files of
    an earlier export there are replaced). ``version`` defaults to the data checksum's
    first 12 hex digits, so the same data gets the same version; ``url`` is where it will
    be published, if known. ``ratios`` may be given as text (``"0.7,0.1,0.2"``, as
    the API and a background job keep it). Returns what the export contained, for its
    audit."""
    if isinstance(ratios, str):
        ratios = parse_ratios(ratios)
    target.mkdir(parents=True, exist_ok=True)
    shape = dataset_shape(campaign=campaign)
    counts = parquet_write(
        campaign=campaign,
        folder=target,
        shape=shape,
        ratios=ratios,
        seed=seed,
        reveal=reveal,
        progress=progress,
        tally=tally,
    )
    files = {_file_name(s): s for s in counts}
    checksum = data_checksum(target, list(files))
    contents = ExportContents(
        shape=shape.name,
        split_rows=counts,
        files=files,
        checksum=checksum,
        version=version or checksum.removeprefix("sha256:")[:12],
        campaign_state=campaign.state,
        ratios=tuple(ratios),
        seed=seed,
        generated_at=timezone.now().isoformat(timespec="seconds"),
        license=license,
        languages=tuple(languages),
        url=url,
    )
    facts = campaign_facts(campaign=campaign, shipped_rows=sum(counts.values()))
    datasheet = datasheet_text(campaign=campaign, facts=facts)
    features = shape.features()
    notes = FIELD_NOTES[shape.name]
    (target / "datasheet.md").write_text(datasheet, encoding="utf-8")
    (target / "README.md").write_text(
        card_markdown(
            facts=facts,
            contents=contents,
            features=features,
            datasheet=datasheet,
            field_notes=notes,
        ),
        encoding="utf-8",
    )
    (target / "croissant.json").write_text(
        croissant_json(
            croissant_metadata(
                facts=facts,
                contents=contents,
                features=features,
                field_notes=notes,
                file_digests={name: _sha256(target / name) for name in files},
            )
        ),
        encoding="utf-8",
    )
    return HFExportResult(folder=target, contents=contents)


@contextmanager
def _hf_folder_temporary(
    *,
    prefix: str,
    campaign: Campaign,
    tally: Tally | None,
    on_done: Callable[[ExportContents], None] | None,
    options: dict[str, Any],
) -> Iterator[Path]:
    """The campaign's ``hf`` folder written into a new temporary directory (as
    ``<dir>/<slug>``, the directory free for what is made from it), removed with all in
    it on leaving; ``on_done`` gets what the export contained once the folder is written."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        folder = work / campaign.slug
        result = hf_folder_write(campaign=campaign, target=folder, tally=tally, **options)
        if on_done is not None:
            on_done(result.contents)
        yield folder
    finally:
        shutil.rmtree(work, ignore_errors=True)


def hf_zip_stream(
    *,
    campaign: Campaign,
    split: str = "all",  # the folder holds every split: a one-split query changes nothing
    tally: Tally | None = None,
    on_done: Callable[[ExportContents], None] | None = None,
    **options: Any,
) -> Iterator[bytes]:
    """The ``hf`` folder as a zip, streamed from a temporary file a block at a time
    (the folder and the zip are removed afterwards). ``on_done`` gets what the export
    contained once the folder is written."""
    with _hf_folder_temporary(
        prefix="qaportal-hf-", campaign=campaign, tally=tally, on_done=on_done, options=options
    ) as folder:
        archive = folder.parent / "export.zip"
        with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for path in sorted(folder.rglob("*")):
                if path.is_file():
                    zf.write(path, f"{campaign.slug}/{path.relative_to(folder)}")
        with archive.open("rb") as f:
            yield from iter(lambda: f.read(256 * 1024), b"")


def croissant_stream(
    *,
    campaign: Campaign,
    split: str = "all",  # the folder holds every split: a one-split query changes nothing
    tally: Tally | None = None,
    on_done: Callable[[ExportContents], None] | None = None,
    **options: Any,
) -> Iterator[str]:
    """The ``croissant.json`` of the ``hf`` export alone: the folder is built in a
    temporary place (the file names the data files' checksums), then removed."""
    with _hf_folder_temporary(
        prefix="qaportal-croissant-",
        campaign=campaign,
        tally=tally,
        on_done=on_done,
        options=options,
    ) as folder:
        yield (folder / "croissant.json").read_text(encoding="utf-8")
