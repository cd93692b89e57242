"""The next HIT for a worker: open HITs, exclusive keys, a worker's own work, the
current assignment; as the pages' previews read it and ``assignment_accept`` picks it.

The thank-you page's and stage page's next HIT is one hand-written statement
(``_NEXT_HIT_SQL``) in the simple case: no exclusive keys, nobody kept from their
own work.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    HITStatus,
    Stage,
    Worker,
)
from campaigns.models.choices import ASSIGNMENT_HOLDING_STATES
from campaigns.tasktypes import TaskType, task_type_get
from campaigns.work.selectors.access import WORKABLE_STATES
from qaportal import prepared

# The worker's accepted, unexpired assignment in a stage, as ``assignment_current``.
# Parameters: stage id, "accepted", now.
CURRENT_ASSIGNMENT_SQL = """(SELECT a.id FROM campaigns_assignment a
   INNER JOIN campaigns_hit h ON h.id = a.hit_id
   WHERE h.stage_id = %s AND a.worker_id = w.id AND a.status = %s
     AND (a.deadline IS NULL OR a.deadline > %s)
   ORDER BY a.accepted_at, a.id LIMIT 1)"""

# The holding states written out: the statements are prepared, and a generic plan can use
# the partial unique index of a worker's place on a HIT (``assignment_one_per_worker_per_hit``,
# on exactly these states) only when the statement itself names them. With them as
# parameters, the generic plan probed each HIT through a bitmap AND of the HIT's and the
# worker's (status) indexes, reading all the worker's assignments in every stage once per
# HIT of the stage: the dry run's buffers per call grew from 169 to 1,144 with the
# workers' histories.
_HOLDING = "(" + ", ".join(f"'{state.value}'" for state in ASSIGNMENT_HOLDING_STATES) + ")"

# "The worker ``{worker}`` holds no place on the HIT ``{hit}``" (columns or placeholders):
# a scalar subquery that stops at its first row, which PostgreSQL runs per candidate HIT
# as a probe of the partial unique index above (two or three buffers). Written as
# NOT EXISTS, it became an anti-join, and the generic plan a prepared statement keeps
# (made while the run's tables were small) read the worker's held places, or the whole
# index, again for each candidate HIT: its buffers per call grew with the run (the dry
# run's thank-you page 90 per call, ``hits_open_ids`` 3 -> 142).
NOT_HELD_SQL = f"""(SELECT 1 FROM campaigns_assignment ah
     WHERE ah.hit_id = {{hit}} AND ah.worker_id = {{worker}} AND ah.status IN {_HOLDING}
     LIMIT 1) IS NULL"""  # noqa: S608 - constant fragments, no input

# The first open HIT of a stage the worker holds no place on, as ``hits_open(...).first()``
# (and ``assignment_accept``'s pick). ``{stage}`` and ``{worker}``: a placeholder or the
# outer query's column; then the parameter now (``_next_hit_params``).
# The status is written out: a prepared statement's generic plan can use the partial index
# ``hit_open_places`` only when the statement itself says "published".
_NEXT_HIT_SQL = f"""SELECT nh.id FROM campaigns_hit nh
  WHERE nh.stage_id = {{stage}} AND nh.status = '{HITStatus.PUBLISHED}' AND nh.places_left > 0
    AND (nh.expires_at IS NULL OR nh.expires_at > %s)
    AND {NOT_HELD_SQL.format(hit="nh.id", worker="{worker}")}
  ORDER BY nh.id LIMIT 1"""  # noqa: S608 - a constant, no input


def _next_hit_simple(stage: Stage) -> bool:
    """Whether the next HIT for a worker is the first open one they hold no place on:
    no exclusive keys, nobody kept from their own work (else ``hit_next_available``)."""
    task_type = task_type_get(stage.task_type)
    return not task_type_has_exclusive_keys(task_type) and not stage_excludes_own_work(stage=stage)


def _next_hit_params(stage: Stage | None, now: datetime) -> list[Any]:
    """The parameters of ``_NEXT_HIT_SQL`` (``stage``: None when ``{stage}`` is a column)."""
    params = [connection.ops.adapt_datetimefield_value(now)]
    return params if stage is None else [stage.pk, *params]


def hits_open(*, stage: Stage, worker: Worker | int, now: datetime | None = None) -> QuerySet[HIT]:
    """Published, unexpired HITs of ``stage`` with a free place ``worker`` does not hold,
    in id order.

    Reads the ``places_left`` counter through the partial index ``hit_open_places``,
    so its cost does not grow with the stage. Does not apply exclusive keys (they
    need the task type); see ``hits_conflicting``.
    """
    worker_id = worker if isinstance(worker, int) else worker.pk
    now = now or timezone.now()
    held = Assignment.objects.filter(
        hit_id=OuterRef("pk"), worker_id=worker_id, status__in=ASSIGNMENT_HOLDING_STATES
    )
    return (
        HIT.objects.filter(stage_id=stage.pk, status=HITStatus.PUBLISHED, places_left__gt=0)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        .filter(~Exists(held))
        .order_by("id")
    )


def task_type_has_exclusive_keys(task_type: TaskType) -> bool:
    """Whether ``task_type`` overrides ``exclusive_key`` (the base class declares none)."""
    return type(task_type).exclusive_key is not TaskType.exclusive_key


# Stages with up to this many HITs are read from the stage's side in
# ``_HELD_ITEMS_DATA_SQL``; larger ones from the worker's.
HELD_FROM_STAGE_MAX_HITS = 500
# The data of the items a worker holds (or held to the end) in a stage, on PostgreSQL
# (parameters: ``_held_items_params``). Two branches, of which one runs (the other's
# condition, computed once, is false): a stage of few HITs (a writing stage: one HIT
# per topic x type cell) is read from its HITs, each probed in the index of a worker's
# place on a HIT; a larger one from the worker's side (the index on worker and
# status). From the worker's side alone, the cost grew with the worker's history in
# every stage: in a paper-sized Mintaka run a worker holds hundreds of linking
# assignments, and the writing stage, with places nobody may take, is looked at on
# each turn.
_STAGE_SMALL = """(SELECT count(*) FROM (SELECT 1 FROM campaigns_hit x WHERE x.stage_id = %s
   LIMIT %s) c) <= %s"""
_HELD_ITEMS_DATA_SQL = f"""
SELECT i.data FROM (SELECT h.id FROM campaigns_hit h
                    CROSS JOIN LATERAL (SELECT 1 FROM campaigns_assignment a
                                        WHERE a.hit_id = h.id AND a.worker_id = %s
                                          AND a.status IN {_HOLDING} LIMIT 1) place
                    WHERE h.stage_id = %s OFFSET 0) held
CROSS JOIN LATERAL (SELECT hi.item_id FROM campaigns_hititem hi
                    WHERE hi.hit_id = held.id OFFSET 0) hi
INNER JOIN campaigns_item i ON i.id = hi.item_id
WHERE {_STAGE_SMALL}
UNION ALL
SELECT i.data FROM campaigns_assignment a
INNER JOIN campaigns_hit h ON h.id = a.hit_id
INNER JOIN campaigns_hititem hi ON hi.hit_id = h.id
INNER JOIN campaigns_item i ON i.id = hi.item_id
WHERE h.stage_id = %s AND a.worker_id = %s AND a.status IN {_HOLDING}
  AND NOT {_STAGE_SMALL}
"""  # noqa: S608 - constant fragments, no input
# Elsewhere (SQLite has no LATERAL): from the worker's side. Parameters: stage id, worker
# id, the 4 holding states.
_HELD_ITEMS_DATA_PLAIN_SQL = """
SELECT i.data FROM campaigns_assignment a
INNER JOIN campaigns_hit h ON h.id = a.hit_id
INNER JOIN campaigns_hititem hi ON hi.hit_id = h.id
INNER JOIN campaigns_item i ON i.id = hi.item_id
WHERE h.stage_id = %s AND a.worker_id = %s AND a.status IN (%s, %s, %s, %s)
"""


def _json(data: Any) -> Any:
    """A JSON column's value as the ORM gives it (backends hand ``jsonb`` over as text)."""
    return json.loads(data) if isinstance(data, str | bytes) else data


def _held_items_params(stage_id: int, worker_id: int) -> list[Any]:
    """The parameters of ``_HELD_ITEMS_DATA_SQL``, in the order of its placeholders."""
    small = [stage_id, HELD_FROM_STAGE_MAX_HITS + 1, HELD_FROM_STAGE_MAX_HITS]
    return [worker_id, stage_id, *small, stage_id, worker_id, *small]


def worker_exclusive_keys(*, stage: Stage, worker: Worker | int, task_type: TaskType) -> set[str]:
    """Exclusive keys of the items ``worker`` holds (or held to the end) in ``stage``.

    No query for task types without exclusive keys; one hand-written one otherwise.
    """
    if not task_type_has_exclusive_keys(task_type):
        return set()
    worker_id = worker if isinstance(worker, int) else worker.pk
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            sql, params = _HELD_ITEMS_DATA_SQL, _held_items_params(stage.pk, worker_id)
        else:
            sql = _HELD_ITEMS_DATA_PLAIN_SQL
            params = [stage.pk, worker_id, *ASSIGNMENT_HOLDING_STATES]
        prepared.execute(cursor, sql, params)
        rows = cursor.fetchall()
    keys = {task_type.exclusive_key(item=_json(data)) for (data,) in rows}
    keys.discard(None)
    return keys  # type: ignore[return-value]


# Task types that judge earlier workers' output: nobody is given their own to judge.


def stage_excludes_own_work(*, stage: Stage) -> bool:
    """Whether a worker is kept from HITs holding items they produced themselves:
    stage config ``exclude_own_work``, by default on for the judging task types."""
    flag = (stage.config or {}).get("exclude_own_work")
    return bool(flag) if flag is not None else task_type_get(stage.task_type).judges_others_work


def hits_conflicting(*, hit_ids: list[int], task_type: TaskType, taken: set[str]) -> set[int]:
    """Those of ``hit_ids`` holding an item whose exclusive key is in ``taken`` (one query)."""
    if not taken or not hit_ids:
        return set()
    placeholders = ", ".join(["%s"] * len(hit_ids))
    sql = (
        "SELECT hi.hit_id, i.data FROM campaigns_hititem hi"  # noqa: S608 - placeholders only
        f" INNER JOIN campaigns_item i ON i.id = hi.item_id WHERE hi.hit_id IN ({placeholders})"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, hit_ids)
        rows = cursor.fetchall()
    return {hit_id for hit_id, data in rows if task_type.exclusive_key(item=_json(data)) in taken}


# Open HITs of a stage after a given id, as ``hits_open`` (and, with ``{own}``, without
# those holding an item the worker produced). Parameters: stage id, now, worker id,
# [worker id,] the last id seen, how many. The worker's places probed per HIT
# (``NOT_HELD_SQL``).
_OPEN_AFTER_SQL = f"""SELECT h.id FROM campaigns_hit h
  WHERE h.stage_id = %s AND h.status = '{HITStatus.PUBLISHED}' AND h.places_left > 0
    AND (h.expires_at IS NULL OR h.expires_at > %s)
    AND {NOT_HELD_SQL.format(hit="h.id", worker="%s")}
    {{own}}
    AND h.id > %s
  ORDER BY h.id LIMIT %s"""  # noqa: S608 - a constant, no input

_NOT_OWN_WORK_SQL = """AND NOT EXISTS (SELECT 1 FROM campaigns_hititem oi
                    INNER JOIN campaigns_item oit ON oit.id = oi.item_id
                    INNER JOIN campaigns_assignment sa ON sa.id = oit.source_assignment_id
                    WHERE oi.hit_id = h.id AND sa.worker_id = %s)"""


def hits_open_ids(
    *,
    stage: Stage,
    worker_id: int,
    after: int = 0,
    limit: int,
    exclude_own_work: bool = False,
    now: datetime | None = None,
) -> list[int]:
    """Ids of ``hits_open``'s HITs after ``after``, at most ``limit``, in id order; with
    ``exclude_own_work``, not those holding an item ``worker_id`` produced. One
    hand-written query (the ORM took longer to build ``hits_open`` than to run it)."""
    now = now or timezone.now()
    params: list[Any] = [
        stage.pk,
        connection.ops.adapt_datetimefield_value(now),
        worker_id,
    ]
    if exclude_own_work:
        params.append(worker_id)
    params += [after, limit]
    sql = _OPEN_AFTER_SQL.format(own=_NOT_OWN_WORK_SQL if exclude_own_work else "")
    with connection.cursor() as cursor:
        prepared.execute(cursor, sql, params)
        return [row[0] for row in cursor.fetchall()]


def hit_next_available(*, stage: Stage, worker: Worker | int) -> HIT | None:
    """The HIT ``assignment_accept`` would most likely give ``worker`` now (for previews)."""
    hit_id = _hit_next_available_pk(stage=stage, worker=worker)
    return HIT.objects.filter(pk=hit_id).first() if hit_id is not None else None


# Candidates read per query while skipping HITs whose exclusive keys the worker holds:
# few first (the first open HIT is usually free), then more, up to 200 in all.
_PREVIEW_BATCHES = (10, 190)


def _hit_next_available_pk(*, stage: Stage, worker: Worker | int) -> int | None:
    if stage.campaign.state not in WORKABLE_STATES:
        return None
    worker_id = worker if isinstance(worker, int) else worker.pk
    task_type = task_type_get(stage.task_type)
    taken = worker_exclusive_keys(stage=stage, worker=worker_id, task_type=task_type)
    own = stage_excludes_own_work(stage=stage)
    last_id = 0
    for size in _PREVIEW_BATCHES if taken else (1,):
        batch = hits_open_ids(
            stage=stage, worker_id=worker_id, after=last_id, limit=size, exclude_own_work=own
        )
        conflicting = hits_conflicting(hit_ids=batch, task_type=task_type, taken=taken)
        free = next((pk for pk in batch if pk not in conflicting), None)
        if free is not None or len(batch) < size:
            return free
        last_id = batch[-1]
    return None


def hit_next_available_id(*, stage: Stage, worker_id: int) -> int | None:
    """The id of ``hit_next_available``'s HIT: one hand-written query on the thank-you
    page's path when the stage has no exclusive keys and keeps nobody from their own
    work (the ORM took longer to build ``hits_open`` than PostgreSQL to run it)."""
    if stage.campaign.state not in WORKABLE_STATES:
        return None
    if not _next_hit_simple(stage):
        return _hit_next_available_pk(stage=stage, worker=worker_id)
    params = _next_hit_params(stage, timezone.now())
    params.insert(2, worker_id)
    with connection.cursor() as cursor:
        prepared.execute(cursor, _NEXT_HIT_SQL.format(stage="%s", worker="%s"), params)
        row = cursor.fetchone()
    return row[0] if row else None


def assignment_next_hit_id(*, assignment: Assignment) -> int | None:
    """``hit_next_available_id`` for the assignment's worker in its stage (loaded with
    it): without a query when ``assignment_load(next_hit=True)`` read it and the stage's
    next HIT is the simple case."""
    stage = assignment.hit.stage
    if stage.campaign.state not in WORKABLE_STATES:
        return None
    if hasattr(assignment, NEXT_HIT_PREFETCHED) and _next_hit_simple(stage):
        return getattr(assignment, NEXT_HIT_PREFETCHED)
    return hit_next_available_id(stage=stage, worker_id=assignment.worker_id)


def assignment_current(*, stage: Stage, worker: Worker | int) -> Assignment | None:
    """``worker``'s accepted, unsubmitted and unexpired assignment in ``stage``, if any."""
    return (
        Assignment.objects.filter(
            hit__stage_id=stage.pk, worker=worker, status=AssignmentStatus.ACCEPTED
        )
        .filter(Q(deadline__isnull=True) | Q(deadline__gt=timezone.now()))
        .order_by("accepted_at", "id")
        .first()
    )


def assignment_is_current(assignment: Assignment, *, now: datetime | None = None) -> bool:
    """Whether ``assignment`` (as loaded) is accepted and within its deadline."""
    now = now or timezone.now()
    return assignment.status == AssignmentStatus.ACCEPTED and (
        assignment.deadline is None or assignment.deadline > now
    )


# The attribute of an assignment holding that HIT's id as ``assignment_load`` read it.
NEXT_HIT_PREFETCHED = "_next_hit_prefetched"
