"""Provenance exports: ``jsonl`` and ``csv``, one row per accepted example with its stage
lineage (``collection-metadata``, one row per stored assignment, is
``campaigns.exports.collection_metadata``).

An accepted example is an approved assignment: what a worker produced and the requester
(or a rule) accepted. Its lineage is the chain of assignments whose output became the
item it worked on, up to an uploaded item: ``lineage`` lists them from the first stage
down, as ``{"stage", "assignment", "worker"}``. The model in the loop goes with each
example: ``model_calls`` (the model's id, version and answer per call,
``campaigns.exports.model_loop``) and ``llm_flag`` (the flag with its evidence, or null).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from typing import Any

from campaigns.exports.common import CHUNK, Tally, csv_safe, iso, keyset_rows
from campaigns.exports.model_loop import model_calls_by_assignment
from campaigns.models import Assignment, AssignmentStatus, Campaign, HITItem

EXAMPLE_FIELDS = (
    "hit_id",
    "hit__stage_id",
    "hit__stage__name",
    "hit__stage__task_type",
    "hit__provider_hit_id",
    "provider_assignment_id",
    "worker__pseudonym",
    "worker__external_id",
    "answers",
    "submitted_at",
    "decided_at",
    "decision_source",
    "llm_flag",
)
CSV_COLUMNS = (
    "assignment",
    "stage",
    "task_type",
    "item",
    "item_external_id",
    "worker",
    "submitted_at",
    "decided_at",
    "decision_source",
    "item_data",
    "answers",
    "lineage",
    "model_calls",
    "llm_flag",
)


def _worker(row: Any, reveal: bool) -> str:
    return str(row["worker__external_id"] if reveal else row["worker__pseudonym"])


def _first_items(hit_ids: Iterable[int]) -> dict[int, Any]:
    """The first item of each HIT (id, external id, data, producing assignment)."""
    out: dict[int, Any] = {}
    for link in (
        HITItem.objects.filter(hit_id__in=set(hit_ids))
        .order_by("hit_id", "position")
        .values(
            "hit_id", "item_id", "item__external_id", "item__data", "item__source_assignment_id"
        )
    ):
        out.setdefault(link["hit_id"], link)
    return out


def _lineages(sources: dict[int, int | None], reveal: bool) -> dict[int, list[dict[str, Any]]]:
    """For each assignment id, the producing chain above the item it worked on (first
    stage first), from ``sources`` = {assignment id: producing assignment id of its
    item}. One query per pipeline level for the whole chunk."""
    chains: dict[int, list[dict[str, Any]]] = {a: [] for a in sources}
    frontier = {a: s for a, s in sources.items() if s is not None}
    for _ in range(12):  # pipelines are a few stages deep; a guard, not a limit met
        if not frontier:
            break
        wanted = set(frontier.values())
        producers = {
            r["id"]: r
            for r in Assignment.objects.filter(pk__in=wanted).values(
                "id", "hit_id", "hit__stage_id", "worker__pseudonym", "worker__external_id"
            )
        }
        above = {
            h: link["item__source_assignment_id"]
            for h, link in _first_items(r["hit_id"] for r in producers.values()).items()
        }
        nxt: dict[int, int | None] = {}
        for start, producer_id in frontier.items():
            producer = producers.get(producer_id)
            if producer is None:
                continue
            chains[start].insert(
                0,
                {
                    "stage": producer["hit__stage_id"],
                    "assignment": producer_id,
                    "worker": _worker(producer, reveal),
                },
            )
            parent = above.get(producer["hit_id"])
            if parent is not None:
                nxt[start] = parent
        frontier = {a: s for a, s in nxt.items() if s is not None}
    return chains


def accepted_examples(*, campaign: Campaign, reveal: bool = False) -> Iterable[dict[str, Any]]:
    """Every approved assignment of ``campaign`` with its item and lineage, in id order,
    read a chunk at a time (a bounded number of queries per chunk)."""
    queryset = Assignment.objects.filter(
        hit__stage__campaign=campaign, status=AssignmentStatus.APPROVED
    )
    for rows in keyset_rows(queryset, EXAMPLE_FIELDS):
        items = _first_items(r["hit_id"] for r in rows)
        sources = {
            r["id"]: (items.get(r["hit_id"]) or {}).get("item__source_assignment_id") for r in rows
        }
        lineages = _lineages(sources, reveal)
        calls = model_calls_by_assignment(r["id"] for r in rows)
        for r in rows:
            item = items.get(r["hit_id"]) or {}
            yield {
                "assignment": r["id"],
                "provider_assignment_id": r["provider_assignment_id"],
                "hit": r["hit__provider_hit_id"] or r["hit_id"],
                "stage": r["hit__stage_id"],
                "stage_name": r["hit__stage__name"],
                "task_type": r["hit__stage__task_type"],
                "item": item.get("item_id"),
                "item_external_id": item.get("item__external_id"),
                "item_data": item.get("item__data"),
                "worker": _worker(r, reveal),
                "answers": r["answers"],
                "submitted_at": iso(r["submitted_at"]),
                "decided_at": iso(r["decided_at"]),
                "decision_source": r["decision_source"],
                "lineage": lineages.get(r["id"], []),
                "model_calls": calls.get(r["id"], []),
                "llm_flag": r["llm_flag"],
            }


def _csv_text(rows: list[list[Any]]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer).writerows([[csv_safe(v) for v in row] for row in rows])
    return buffer.getvalue()


def jsonl_stream(
    *, campaign: Campaign, reveal: bool = False, tally: Tally | None = None, **_: Any
) -> Iterator[str]:
    """One JSON object per line per accepted example, yielded a chunk of lines at a time."""
    tally = tally or Tally()
    lines: list[str] = []
    for example in accepted_examples(campaign=campaign, reveal=reveal):
        lines.append(json.dumps(example, ensure_ascii=False, sort_keys=True) + "\n")
        if len(lines) >= CHUNK:
            tally.rows += len(lines)
            yield "".join(lines)
            lines = []
    tally.rows += len(lines)
    if lines:
        yield "".join(lines)


def csv_stream(
    *, campaign: Campaign, reveal: bool = False, tally: Tally | None = None, **_: Any
) -> Iterator[str]:
    """The accepted examples as CSV; JSON columns hold JSON text (keys in the order
    PostgreSQL's jsonb keeps them, the same on every export), cells that would run as
    spreadsheet formulas are neutralised."""
    tally = tally or Tally()
    yield _csv_text([list(CSV_COLUMNS)])
    rows: list[list[Any]] = []
    for e in accepted_examples(campaign=campaign, reveal=reveal):
        rows.append(
            [
                e["assignment"],
                e["stage_name"],
                e["task_type"],
                e["item"],
                e["item_external_id"],
                e["worker"],
                e["submitted_at"],
                e["decided_at"],
                e["decision_source"],
                json.dumps(e["item_data"], ensure_ascii=False),
                json.dumps(e["answers"], ensure_ascii=False),
                json.dumps(e["lineage"], ensure_ascii=False),
                json.dumps(e["model_calls"], ensure_ascii=False),
                json.dumps(e["llm_flag"], ensure_ascii=False),
            ]
        )
        if len(rows) >= CHUNK:
            tally.rows += len(rows)
            yield _csv_text(rows)
            rows = []
    tally.rows += len(rows)
    if rows:
        yield _csv_text(rows)
