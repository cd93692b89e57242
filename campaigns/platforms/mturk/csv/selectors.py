"""Export any campaign as an MTurk batch results CSV (the layout requesters know from
MTurk's "Download CSV"), streamed: memory stays bounded whatever the campaign's size.

One row per stored assignment (submitted, approved, rejected), one row with empty
assignment cells for a HIT without any. ``Input.*`` holds the HIT's first item
(``Input.id`` its external id, then its data), ``Answer.*`` the answer's top-level
fields (anything but text as JSON); ``Approve`` and ``Reject`` are left empty for
the requester to fill and send back
(``campaigns.platforms.mturk.csv.results.mturk_results_review``).
Workers appear by pseudonym unless ``reveal_worker_ids``; every cell a spreadsheet
would run as a formula gets a leading apostrophe (the import removes it again).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from typing import Any, TextIO

from django.db import connection
from django.db.models import Prefetch

from campaigns.models import HANDED_IN, HIT, Assignment, AssignmentStatus, HITItem, Item
from campaigns.platforms.mturk.csv.format import (
    ANSWER_PREFIX,
    INPUT_PREFIX,
    LOCAL_ASSIGNMENT_PREFIX,
    LOCAL_GROUP_PREFIX,
    LOCAL_HIT_PREFIX,
    REVIEW_COLUMNS,
    STANDARD_COLUMNS,
    STATUS_TO_MTURK,
    cell_neutralise,
    mturk_reward_format,
    mturk_time_format,
)
from campaigns.tasktypes.instructions import stage_instructions

CHUNK_SIZE = 500

# Per-campaign cost: from the campaign's stages to their HITs (indexed), then each HIT's
# first item by (hit, position) (the unique index, LIMIT 1). A correlated MIN(position)
# over a join started from the items made PostgreSQL read every HIT item of every
# campaign (2 s over 450k items, minutes with stale statistics).
_INPUT_KEYS_SQL = """
SELECT DISTINCT jsonb_object_keys(i.data::jsonb) AS k
FROM campaigns_stage s
INNER JOIN campaigns_hit h ON h.stage_id = s.id
CROSS JOIN LATERAL (
  SELECT hi.item_id FROM campaigns_hititem hi
  WHERE hi.hit_id = h.id ORDER BY hi.position LIMIT 1
) first_item
INNER JOIN campaigns_item i ON i.id = first_item.item_id
WHERE s.campaign_id = %s AND jsonb_typeof(i.data::jsonb) = 'object'
"""
_ANSWER_KEYS_SQL = """
SELECT DISTINCT jsonb_object_keys(a.answers::jsonb)
FROM campaigns_assignment a
INNER JOIN campaigns_hit h ON h.id = a.hit_id
INNER JOIN campaigns_stage s ON s.id = h.stage_id
WHERE s.campaign_id = %s AND a.status = ANY(%s) AND jsonb_typeof(a.answers::jsonb) = 'object'
"""


def _keys_sql(sql: str, params: list[Any]) -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return {row[0] for row in cursor.fetchall()}


def mturk_csv_columns(*, campaign_id: int) -> list[str]:
    """The header of the campaign's export: MTurk's columns, ``Input.*``, ``Answer.*``,
    ``Approve``, ``Reject``. Two queries on PostgreSQL (the key sets are computed there)."""
    if connection.vendor == "postgresql":
        inputs = _keys_sql(_INPUT_KEYS_SQL, [campaign_id])
        answers = _keys_sql(_ANSWER_KEYS_SQL, [campaign_id, [str(s) for s in HANDED_IN]])
    else:  # the embedded SQLite default: walk the rows, keeping only the keys
        inputs = set()
        for data in (
            Item.objects.filter(hits__stage__campaign_id=campaign_id)
            .values_list("data", flat=True)
            .iterator(chunk_size=CHUNK_SIZE)
        ):
            if isinstance(data, dict):
                inputs.update(data)
        answers = set()
        for answer in (
            Assignment.objects.filter(hit__stage__campaign_id=campaign_id, status__in=HANDED_IN)
            .values_list("answers", flat=True)
            .iterator(chunk_size=CHUNK_SIZE)
        ):
            if isinstance(answer, dict):
                answers.update(answer)
    inputs.discard("id")
    return [
        *STANDARD_COLUMNS,
        f"{INPUT_PREFIX}id",
        *(f"{INPUT_PREFIX}{k}" for k in sorted(inputs)),
        *(f"{ANSWER_PREFIX}{k}" for k in sorted(answers)),
        *REVIEW_COLUMNS,
    ]


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _hits(campaign_id: int) -> Iterator[HIT]:
    return (
        HIT.objects.filter(stage__campaign_id=campaign_id)
        .select_related("stage")
        .prefetch_related(
            Prefetch(
                "hititem_set",
                queryset=HITItem.objects.select_related("item").order_by("position"),
                to_attr="ordered_items",
            ),
            Prefetch(
                "assignments",
                queryset=Assignment.objects.filter(status__in=HANDED_IN)
                .select_related("worker")
                .order_by("id"),
                to_attr="stored_assignments",
            ),
        )
        .order_by("stage__position", "id")
        .iterator(chunk_size=CHUNK_SIZE)
    )


def _hit_cells(hit: HIT) -> dict[str, str]:
    stage = hit.stage
    return {
        "HITId": hit.provider_hit_id or f"{LOCAL_HIT_PREFIX}{hit.pk}",
        "HITTypeId": hit.provider_group_id or f"{LOCAL_GROUP_PREFIX}{stage.pk}",
        "Title": stage.name,
        "Description": stage_instructions(stage),
        "Keywords": "",
        "Reward": mturk_reward_format(hit.reward),
        "CreationTime": mturk_time_format(hit.published_at or hit.created_at),
        "MaxAssignments": str(hit.max_assignments),
        "RequesterAnnotation": "",
        "AssignmentDurationInSeconds": str(int(stage.assignment_duration.total_seconds())),
        "AutoApprovalDelayInSeconds": "",
        "Expiration": mturk_time_format(hit.expires_at),
        "NumberOfSimilarHITs": "",
        "LifetimeInSeconds": str(int(stage.lifetime.total_seconds())),
    }


def _input_cells(hit: HIT) -> dict[str, str]:
    ordered: list[HITItem] = getattr(hit, "ordered_items", [])
    if not ordered:
        return {}
    item = ordered[0].item
    cells = {f"{INPUT_PREFIX}id": item.external_id}
    if isinstance(item.data, dict):
        cells.update({f"{INPUT_PREFIX}{k}": _text(v) for k, v in item.data.items() if k != "id"})
    return cells


def _assignment_cells(assignment: Assignment, *, reveal_worker_ids: bool) -> dict[str, str]:
    kept = (assignment.review_details or {}).get("mturk") or {}
    decided = assignment.decided_at
    worker = assignment.worker
    cells = {
        "AssignmentId": assignment.provider_assignment_id
        or f"{LOCAL_ASSIGNMENT_PREFIX}{assignment.pk}",
        "WorkerId": worker.external_id if reveal_worker_ids else worker.pseudonym,
        "AssignmentStatus": STATUS_TO_MTURK[assignment.status],
        "AcceptTime": mturk_time_format(assignment.accepted_at),
        "SubmitTime": mturk_time_format(assignment.submitted_at),
        "ApprovalTime": mturk_time_format(decided)
        if assignment.status == AssignmentStatus.APPROVED
        else "",
        "RejectionTime": mturk_time_format(decided)
        if assignment.status == AssignmentStatus.REJECTED
        else "",
        "RequesterFeedback": assignment.feedback,
        "WorkTimeInSeconds": ""
        if assignment.work_seconds is None
        else str(assignment.work_seconds),
    }
    for column in (
        "AutoApprovalTime",
        "AutoApprovalDelayInSeconds",
        "LifetimeApprovalRate",
        "Last30DaysApprovalRate",
        "Last7DaysApprovalRate",
    ):
        if isinstance(kept.get(column), str):
            cells[column] = kept[column]
    answers = assignment.answers
    if isinstance(answers, dict):
        cells.update({f"{ANSWER_PREFIX}{k}": _text(v) for k, v in answers.items()})
    return cells


def mturk_csv_rows(
    *, campaign_id: int, reveal_worker_ids: bool = False, header: bool = True
) -> Iterator[list[str]]:
    """The campaign's export as CSV rows (header first unless ``header=False``).

    Streams: HITs are read ``CHUNK_SIZE`` at a time with their items and stored
    assignments prefetched per chunk (three queries a chunk, none per row), after two
    queries for the header. Cells are formula-neutralised.
    """
    columns = mturk_csv_columns(campaign_id=campaign_id)
    if header:
        yield columns
    for hit in _hits(campaign_id):
        base = {**_hit_cells(hit), **_input_cells(hit)}
        assignments: list[Assignment | None] = getattr(hit, "stored_assignments", [])
        for assignment in assignments or [None]:
            cells = dict(base)
            if assignment is not None:
                cells.update(_assignment_cells(assignment, reveal_worker_ids=reveal_worker_ids))
            yield [cell_neutralise(cells.get(c, "")) for c in columns]


def mturk_csv_write(*, campaign_id: int, out: TextIO, reveal_worker_ids: bool = False) -> int:
    """Write the campaign's export to ``out`` (header and rows); returns the rows written,
    not counting the header. Worker ids are pseudonyms unless ``reveal_worker_ids``."""
    writer = csv.writer(out)
    written = -1
    for row in mturk_csv_rows(campaign_id=campaign_id, reveal_worker_ids=reveal_worker_ids):
        writer.writerow(row)
        written += 1
    return max(written, 0)
