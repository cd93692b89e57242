"""The ``collection-metadata`` export: one CSV row per stored assignment (what WhyQA
released beside its corpus), the format a million-row background export is timed on.

Two writers, byte for byte the same file: on PostgreSQL the database formats every
cell (timestamps, reward, ids, the spreadsheet-formula guard) and Python only hands
the text tuples to ``csv.writer``, a C loop; elsewhere (SQLite) Python formats each
row from ``keyset_rows``. Both read in assignment id order, a keyset-paged chunk at a
time, so memory stays flat and no cursor is held open between chunks.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from django.db import connection
from django.db.models import F, QuerySet

from campaigns.exports.common import FORMULA_STARTS, Tally, csv_safe, iso, keyset_rows
from campaigns.models import HANDED_IN, Assignment, AssignmentStatus, Campaign
from qaportal.dbrouter import read_connection

METADATA_COLUMNS = (
    "worker",
    "hit_id",
    "assignment_id",
    "stage",
    "reward",
    "approval_status",
    "rejected",
    "upload_time",
    "accept_time",
    "submit_time",
    "work_time_seconds",
    "llm_flagged",
)
FIELDS = (
    "status",
    "provider_assignment_id",
    "hit_id",
    "hit__provider_hit_id",
    "hit__reward",
    "hit__published_at",
    "hit__created_at",
    "hit__stage__name",
    "worker__pseudonym",
    "worker__external_id",
    "accepted_at",
    "submitted_at",
    "work_seconds",
    "llm_flag",
)
# Rows per query on PostgreSQL: a few MB of text per chunk, few round trips.
PG_CHUNK = 20000


def _csv_text(rows: Iterable[Sequence[Any]]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer).writerows(rows)
    return buffer.getvalue()


def _queryset(campaign: Campaign) -> QuerySet[Assignment]:
    return Assignment.objects.filter(hit__stage__campaign=campaign, status__in=HANDED_IN)


def collection_metadata_stream(
    *, campaign: Campaign, reveal: bool = False, tally: Tally | None = None, **_: Any
) -> Iterator[str]:
    """Per stored assignment (submitted, approved or rejected; rejected ones marked):
    worker, HIT id, assignment id, stage, reward, approval status, upload time (the
    HIT's publication), accept and submit times, work time, whether the LLM flag is
    raised. CSV, in assignment id order;
    cells that a spreadsheet would run as formulas are neutralised (``csv_safe``)."""
    tally = tally or Tally()
    yield _csv_text([[csv_safe(v) for v in METADATA_COLUMNS]])
    if connection.vendor == "postgresql":
        yield from _pg_chunks(campaign=campaign, reveal=reveal, tally=tally)
    else:
        yield from _python_chunks(campaign=campaign, reveal=reveal, tally=tally)


def _python_chunks(*, campaign: Campaign, reveal: bool, tally: Tally) -> Iterator[str]:
    worker = "worker__external_id" if reveal else "worker__pseudonym"
    for rows in keyset_rows(_queryset(campaign), FIELDS):
        tally.rows += len(rows)
        yield _csv_text(
            [
                csv_safe(v)
                for v in (
                    str(r[worker]),
                    r["hit__provider_hit_id"] or r["hit_id"],
                    r["provider_assignment_id"] or r["id"],
                    r["hit__stage__name"],
                    f"{r['hit__reward']:.2f}",
                    r["status"],
                    "yes" if r["status"] == AssignmentStatus.REJECTED else "no",
                    iso(r["hit__published_at"] or r["hit__created_at"]),
                    iso(r["accepted_at"]),
                    iso(r["submitted_at"]),
                    r["work_seconds"] if r["work_seconds"] is not None else "",
                    _flagged(r["llm_flag"]),
                )
            ]
            for r in rows
        )


def _flagged(flag: Any) -> str:
    """``llm_flagged``: "yes" or "no" once the stage's model answered, empty before or
    when the stage does not ask (the evidence is in the jsonl, csv and hf exports)."""
    if not isinstance(flag, dict):
        return ""
    return "yes" if flag.get("flagged") is True else "no"


# --- PostgreSQL: the database writes the cells ------------------------------------------


# ``FORMULA_STARTS`` as SQL string literals (E'' for the tab and the carriage return).
_PG_FORMULA_STARTS = ", ".join(
    "E'" + c.replace("\t", "\\t").replace("\r", "\\r") + "'" for c in FORMULA_STARTS
)


def _pg_safe(text: str) -> str:
    """SQL for ``csv_safe`` of a text expression: a leading apostrophe before a
    character that starts a spreadsheet formula."""
    return (
        f"CASE WHEN left({text}, 1) IN ({_PG_FORMULA_STARTS}) THEN '''' || {text} ELSE {text} END"
    )


def _pg_iso(column: str) -> str:
    """SQL for ``iso`` of a timestamptz: ``datetime.isoformat()`` of the UTC value,
    microseconds only when there are any, NULL stays NULL (an empty cell)."""
    # ".000000+" can only be the zero microseconds before the offset.
    return (
        f"replace(to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"+00:00\"'),"
        " '.000000+', '+')"
    )


def _pg_select(*, reveal: bool) -> str:
    """The outer SELECT over the ORM's query (aliased columns ``c0``…): one text cell
    per CSV column, as ``_python_chunks`` writes it, then the id the next chunk starts
    after."""
    c = {name: f"q.c{n}" for n, name in enumerate(("id", *FIELDS))}
    worker = c["worker__external_id" if reveal else "worker__pseudonym"]
    cells = [
        _pg_safe(worker),
        _pg_safe(f"COALESCE(NULLIF({c['hit__provider_hit_id']}, ''), {c['hit_id']}::text)"),
        _pg_safe(f"COALESCE(NULLIF({c['provider_assignment_id']}, ''), {c['id']}::text)"),
        _pg_safe(c["hit__stage__name"]),
        # numeric(8, 2) prints two decimals, as f"{reward:.2f}" does.
        _pg_safe(f"{c['hit__reward']}::text"),
        _pg_safe(c["status"]),
        f"CASE WHEN {c['status']} = '{AssignmentStatus.REJECTED.value}' THEN 'yes' ELSE 'no' END",
        _pg_iso(f"COALESCE({c['hit__published_at']}, {c['hit__created_at']})"),
        _pg_iso(c["accepted_at"]),
        _pg_iso(c["submitted_at"]),
        c["work_seconds"],
        f"CASE WHEN jsonb_typeof({c['llm_flag']}) IS DISTINCT FROM 'object' THEN '' "
        f"WHEN {c['llm_flag']} -> 'flagged' = 'true'::jsonb THEN 'yes' ELSE 'no' END",
        c["id"],
    ]
    return "SELECT " + ", ".join(cells)


def _pg_chunks(*, campaign: Campaign, reveal: bool, tally: Tally) -> Iterator[str]:
    outer = _pg_select(reveal=reveal)
    columns = {f"c{n}": F(name) for n, name in enumerate(("id", *FIELDS))}
    queryset = _queryset(campaign).order_by("pk")
    last = 0
    while True:
        inner = queryset.filter(pk__gt=last).values(**columns)[:PG_CHUNK]
        sql, params = inner.query.sql_with_params()
        with read_connection(Assignment).cursor() as cursor:
            cursor.execute(f"{outer} FROM ({sql}) AS q ORDER BY q.c0", params)
            rows = cursor.fetchall()
        if not rows:
            return
        tally.rows += len(rows)
        last = rows[-1][-1]
        buffer = io.StringIO()
        csv.writer(buffer).writerows(row[:-1] for row in rows)
        yield buffer.getvalue()
