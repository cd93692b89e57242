"""What every export format shares: keyset-paged reads with flat memory, worker ids as
pseudonyms, CSV cells that a spreadsheet will not run as formulas."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from django.db.models import QuerySet

from campaigns.models import Assignment, HITItem
from qaportal.dbrouter import read_connection

CHUNK = 5000
# Ids per ``__in`` query where no array parameter is at hand (SQLite takes at most
# 32,766 parameters in one statement).
IN_BATCH = 5000
# A cell starting with one of these is a formula to Excel, LibreOffice and Sheets.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


class Tally:
    """Rows a streaming writer has produced so far (a writer yields text, not rows)."""

    def __init__(self) -> None:
        self.rows = 0


def csv_safe(value: Any) -> Any:
    """``value`` for a CSV cell: text that a spreadsheet would run as a formula gets a
    leading apostrophe (OWASP's advice on CSV injection); numbers stay numbers."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def keyset_rows(
    queryset: QuerySet[Any], fields: Sequence[str], *, chunk: int = CHUNK
) -> Iterator[list[dict[str, Any]]]:
    """``queryset``'s rows as dicts of ``fields`` (plus ``id``), in id order, one chunk
    at a time: each chunk is its own ``WHERE id > last LIMIT chunk`` query, so memory
    stays flat whatever the size and no cursor is held open between chunks."""
    return _keyset_pages(queryset.values("id", *fields), key=lambda row: row["id"], chunk=chunk)


def keyset_tuples(
    queryset: QuerySet[Any], fields: Sequence[str], *, chunk: int = CHUNK
) -> Iterator[list[tuple[Any, ...]]]:
    """``keyset_rows`` as tuples: each row's ``pk`` then its ``fields``."""
    return _keyset_pages(queryset.values_list("pk", *fields), key=lambda row: row[0], chunk=chunk)


def _keyset_pages(
    queryset: QuerySet[Any], *, key: Callable[[Any], Any], chunk: int
) -> Iterator[list[Any]]:
    last = 0
    while True:
        page = list(queryset.filter(pk__gt=last).order_by("pk")[:chunk])
        if not page:
            return
        yield page
        last = key(page[-1])


def keyset_sql_pages(
    sql: str, params: Sequence[Any], *, chunk: int = CHUNK
) -> Iterator[list[tuple[Any, ...]]]:
    """``keyset_rows`` for raw SQL: ``sql`` takes ``params`` then the last key seen and
    the page size (``… WHERE key > %s ORDER BY key LIMIT %s``) and returns rows whose
    first column is that key; one page at a time, no cursor held between pages. On the
    connection an ORM read of assignments would use here (the replica in an export job)."""
    last = 0
    while True:
        with read_connection(Assignment).cursor() as cursor:
            cursor.execute(sql, [*params, last, chunk])
            page = cursor.fetchall()
        if not page:
            return
        yield page
        last = page[-1][0]


def first_items(hit_ids: Sequence[int], *fields: str) -> dict[int, tuple[Any, ...]]:
    """HIT id -> ``fields`` (of ``HITItem``, e.g. ``item__external_id``) of its first
    item by position; on any database, ``IN_BATCH`` HITs per query (SQLite takes at
    most 32,766 parameters)."""
    out: dict[int, tuple[Any, ...]] = {}
    for start in range(0, len(hit_ids), IN_BATCH):
        for hit_id, *values in (
            HITItem.objects.filter(hit_id__in=hit_ids[start : start + IN_BATCH])
            .order_by("hit_id", "position", "id")
            .values_list("hit_id", *fields)
        ):
            out.setdefault(hit_id, tuple(values))
    return out


def iso(value: Any) -> str | None:
    """A datetime as ISO 8601 (UTC as the database gives it), None stays None."""
    return value.isoformat() if value is not None else None
