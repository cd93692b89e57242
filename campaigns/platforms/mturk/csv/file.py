"""Reading a batch results CSV: bytes to header and rows, all problems by row and column.

Shared by the import (``campaigns.platforms.mturk.csv.results``) and the review from a file
(``campaigns.platforms.mturk.csv.review``).
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from django.conf import settings

from campaigns.platforms.mturk.csv.format import cell_restore
from qaportal.errors import UploadProblems, UploadRejected
from qaportal.jsonsafe import clip_message

ID_QUERY_CHUNK = 5000
UTF8_BOM = b"\xef\xbb\xbf"
NUMBERING = (
    "Rows are numbered by line in the file: the header is line 1, so the first data "
    "row is row 2 (a cell over several lines moves the rows after it)."
)


class CsvProblems(UploadProblems):
    """Problems of one file (``add``: row, column, message)."""

    def reject(self, *, filename: str, what: str) -> UploadRejected:
        ordered, listed = self.ordered()
        first = listed[0]
        where = f"row {first['row']}" if first["row"] else "the file"
        if first["field"]:
            where += f", column {first['field']}"
        message = (
            f"Nothing from {clip_message(repr(filename))} was {what}: "
            f"{len(ordered)} problem(s); first, at "
            f"{where}: {first['message']}. {NUMBERING}"
        )
        if len(ordered) > len(listed):
            message += f" The first {len(listed)} are listed."
        return UploadRejected(message, errors=listed)


def reject_one(message: str, *, row: int | None = None, column: str = "") -> UploadRejected:
    """A refusal with one problem."""
    return UploadRejected(message, errors=[{"row": row, "field": column, "message": message}])


@dataclass
class CsvRow:
    """One data row: the line it starts on and its cells by column name."""

    line: int
    cells: dict[str, str]

    def get(self, column: str) -> str:
        return self.cells.get(column, "")


def _decode(content: bytes) -> str:
    bom = len(UTF8_BOM) if content.startswith(UTF8_BOM) else 0
    try:
        text = content[bom:].decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = exc.start + bom
        line = content[:offset].count(b"\n") + 1
        raise reject_one(
            f"The file is not valid UTF-8 (byte 0x{content[offset]:02x} on line {line}); "
            "save it as UTF-8 and try again. Nothing was stored.",
            row=line,
        ) from None
    if "\x00" in text:
        raise reject_one("The file holds a NUL character; it is not a CSV text file.")
    return text


def csv_read(content: bytes, *, required: tuple[str, ...]) -> tuple[list[str], list[CsvRow]]:
    """Header and rows of the file; rows shorter than the header are padded with ''.

    Cells keep their text except a formula guard apostrophe added by our export
    (``cell_restore``). Raises ``UploadRejected`` for a damaged layout.
    """
    limit: int = settings.ITEM_UPLOAD_MAX_BYTES
    if len(content) > limit:
        raise reject_one(f"The file has {len(content)} bytes; the limit is {limit}.")
    text = _decode(content)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    header: list[str] | None = None
    rows: list[CsvRow] = []
    problems = CsvProblems()
    max_rows: int = settings.ITEM_UPLOAD_MAX_ROWS
    while True:
        line = reader.line_num + 1
        try:
            record = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise reject_one(
                f"Row {line} is not valid CSV ({exc}); nothing was stored.", row=line
            ) from None
        if not any(cell.strip() for cell in record):
            continue
        if header is None:
            header = [cell.strip() for cell in record]
            seen = Counter(header)
            for name, count in seen.items():
                if count > 1:
                    problems.add(1, name, f"the column {name!r} appears {count} times")
            for name in required:
                if name not in seen:
                    problems.add(1, name, f"the column {name!r} is missing")
            if problems:
                raise problems.reject(filename="the file", what="stored")
            continue
        if len(record) > len(header):
            extra = record[len(header) :]
            if any(cell.strip() for cell in extra):
                raise reject_one(
                    f"Row {line} has {len(record)} cells but the header only "
                    f"{len(header)} columns; nothing was stored.",
                    row=line,
                )
            record = record[: len(header)]
        record = record + [""] * (len(header) - len(record))
        rows.append(
            CsvRow(
                line=line, cells={h: cell_restore(c) for h, c in zip(header, record, strict=True)}
            )
        )
        if len(rows) > max_rows:
            raise reject_one(f"The file has more than {max_rows} rows, the upload limit.")
    if header is None:
        raise reject_one("The file is empty; nothing was stored.")
    if not rows:
        raise reject_one("The file has a header but no rows; nothing was stored.")
    return header, rows


def chunks(values: list[str]) -> Iterator[list[str]]:
    """``values`` in slices small enough for one ``__in`` query."""
    for start in range(0, len(values), ID_QUERY_CHUNK):
        yield values[start : start + ID_QUERY_CHUNK]
