"""Accepting work: a worker takes a place on an open HIT (``assignment_accept``).

Locking: the order the work room takes its locks in is in ``campaigns/work/__init__.py``.
"""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from campaigns.design.platform import platform_for
from campaigns.models import (
    Assignment,
    AssignmentStatus,
    HITStatus,
    Stage,
    Worker,
)
from campaigns.models.choices import ASSIGNMENT_HOLDING_STATES
from campaigns.tasktypes import TaskType, task_type_get
from campaigns.work.selectors.access import WORKABLE_STATES, WORKER_ACCESS_SQL, worker_access_params
from campaigns.work.selectors.loading import model_from_row, worker_columns
from campaigns.work.selectors.next_hit import (
    CURRENT_ASSIGNMENT_SQL,
    hits_conflicting,
    hits_open_ids,
    stage_excludes_own_work,
    task_type_has_exclusive_keys,
    worker_exclusive_keys,
)
from campaigns.workforce.requirements import stage_refusal
from qaportal import prepared
from qaportal.deadlock import deadlock_retried
from qaportal.errors import DomainError

# How many open HITs ``assignment_accept`` reads per query while it skips HITs whose
# exclusive keys the worker already holds: few first (the first open HIT is usually
# free, and each candidate's items are read to learn their keys), then more.
_CANDIDATE_BATCHES = (10, 100)


class NoWorkAvailableError(DomainError):
    """Nothing this worker may take in this stage right now."""

    code = "no_work"


class WorkerNotAllowedError(DomainError):
    """The worker may not work on this stage (no access, or blocked)."""

    code = "not_allowed"


class WorkerNoAccessError(WorkerNotAllowedError):
    """The worker has no access to the stage (no grant, no covering invite)."""


# --- Accepting work ----------------------------------------------------------------


# The statements every accept runs, in SQL: the ORM takes longer to build them than
# PostgreSQL takes to run them (bench/README.md). Tables are the models' db_table.
# Parameters: stage id, now, worker id, the 4 holding states. The status is written out:
# prepared (``qaportal.prepared``), the statement's generic plan can use the partial
# index ``hit_open_places`` only when the statement itself says "published".
_PUBLISHED = str(HITStatus.PUBLISHED)
_HIT_TAKE_SQL = f"""
UPDATE campaigns_hit SET places_left = places_left - 1 WHERE id = (
  SELECT h.id FROM campaigns_hit h
  WHERE h.stage_id = %s AND h.status = '{_PUBLISHED}' AND h.places_left > 0
    AND (h.expires_at IS NULL OR h.expires_at > %s)
    AND NOT EXISTS (SELECT 1 FROM campaigns_assignment a
                    WHERE a.hit_id = h.id AND a.worker_id = %s
                      AND a.status IN (%s, %s, %s, %s))
  ORDER BY h.id LIMIT 1 FOR UPDATE SKIP LOCKED
) RETURNING id, provider
"""  # noqa: S608 - a constant, no input
_HIT_TAKE_WAITING_SQL = _HIT_TAKE_SQL.replace("SKIP LOCKED", "")
# Other databases (SQLite serialises writers): pick, then update.
_HIT_PICK_SQL = f"""
SELECT h.id, h.provider FROM campaigns_hit h
WHERE h.stage_id = %s AND h.status = '{_PUBLISHED}' AND h.places_left > 0
  AND (h.expires_at IS NULL OR h.expires_at > %s)
  AND NOT EXISTS (SELECT 1 FROM campaigns_assignment a
                  WHERE a.hit_id = h.id AND a.worker_id = %s
                    AND a.status IN (%s, %s, %s, %s))
ORDER BY h.id LIMIT 1
"""  # noqa: S608 - a constant, no input
# SQLite: the place taken on the HIT it picked (its writers are serialised).
_PLACE_TAKE_SQL = "UPDATE campaigns_hit SET places_left = places_left - 1 WHERE id = %s"
# The worker row, locked, with what accept checks in the same statement: the campaign
# state, access (``WORKER_ACCESS_SQL``), the campaign owner's block, and the current
# assignment in the stage. Columns: the worker's fields, then those four.
_ACCEPT_CHECKS_SQL = f"""
SELECT {{worker_columns}},
  (SELECT c.state FROM campaigns_campaign c WHERE c.id = %s),
  {WORKER_ACCESS_SQL},
  EXISTS (SELECT 1 FROM campaigns_workerblock b
          WHERE b.requester_id = %s AND b.worker_id = w.id AND b.lifted_at IS NULL),
  {CURRENT_ASSIGNMENT_SQL}
FROM campaigns_worker w WHERE w.id = %s
"""  # noqa: S608 - constant fragments, no input
assert len(ASSIGNMENT_HOLDING_STATES) == 4, "update the holding-state placeholders above"


@functools.cache
def _take_and_insert_sql(wait: bool) -> tuple[str, list[Any]]:
    """PostgreSQL: the place taken (``_HIT_TAKE_SQL``) and the assignment inserted on it
    in one statement, ``WITH taken AS (UPDATE … RETURNING id, provider) INSERT … SELECT
    … FROM taken RETURNING id, hit_id, provider``; inserts nothing when no place was
    taken. Parameters: the take's, then the assignment's fields but hit and provider
    (in ``_assignment_insert``'s order), each cast to its column's type (a prepared
    statement's parameters take their types from the casts, as an INSERT's VALUES
    would from its columns)."""
    _sql, fields, _returning = _assignment_insert(connection.vendor)
    take = (_HIT_TAKE_WAITING_SQL if wait else _HIT_TAKE_SQL).strip()
    columns, values, inserted = [], [], []
    for f in fields:
        columns.append(connection.ops.quote_name(str(f.column)))
        if f.column == "hit_id":
            values.append("taken.id")
        elif f.column == "provider":
            values.append("taken.provider")
        else:
            values.append(f"CAST(%s AS {f.db_type(connection)})")
            inserted.append(f)
    table = connection.ops.quote_name(Assignment._meta.db_table)
    statement = (
        f"WITH taken AS ({take}) INSERT INTO {table} ({', '.join(columns)}) "  # noqa: S608
        f"SELECT {', '.join(values)} FROM taken RETURNING id, hit_id, provider"
    )
    return statement, inserted


def _assignment_take(
    *, stage: Stage, assignment: Assignment, now: datetime, wait: bool
) -> Assignment | None:
    """PostgreSQL, no exclusive keys: ``_hit_take`` and ``_assignment_create`` in one
    statement (one round trip fewer per accept). ``assignment`` has every field but its
    HIT and provider, which the statement fills in; None when no place was taken."""
    sql, fields = _take_and_insert_sql(wait)
    params: list[Any] = [
        stage.pk,
        connection.ops.adapt_datetimefield_value(now),
        assignment.worker_id,
        *ASSIGNMENT_HOLDING_STATES,
    ]
    params += [f.get_db_prep_save(f.pre_save(assignment, True), connection) for f in fields]
    with connection.cursor() as cursor:
        prepared.execute(cursor, sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    assignment.pk, assignment.hit_id, assignment.provider = row
    assignment._state.adding = False
    assignment._state.db = connection.alias
    return assignment


def _hit_take(
    *, stage: Stage, worker_id: int, now: datetime, wait: bool, among: list[int] | None = None
) -> tuple[int, str] | None:
    """Take a place on the first open HIT of ``stage`` that ``worker_id`` may take (of
    the HITs ``among``, when given: exclusive keys): its (id, provider), or None. Call
    inside the allocation's transaction.

    One statement on PostgreSQL: ``UPDATE … SET places_left = places_left - 1
    WHERE id = (SELECT … ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING …``,
    through the partial index ``hit_open_places``. Without ``wait``, HITs other
    allocations have locked are skipped; with it, the statement waits for the first
    of them, and PostgreSQL re-checks the row (``places_left > 0``) once it is
    released, moving on to the next when it is full.
    """
    params: list[Any] = [
        stage.pk,
        connection.ops.adapt_datetimefield_value(now),
        worker_id,
        *ASSIGNMENT_HOLDING_STATES,
    ]
    postgresql = connection.vendor == "postgresql"
    sql = (_HIT_TAKE_WAITING_SQL if wait else _HIT_TAKE_SQL) if postgresql else _HIT_PICK_SQL
    if among is not None:  # not prepared: the list's length varies
        placeholders = ", ".join(["%s"] * len(among))
        sql = sql.replace("ORDER BY h.id", f"AND h.id IN ({placeholders}) ORDER BY h.id")
        params += among
    with connection.cursor() as cursor:
        if among is not None:
            cursor.execute(sql, params)
        else:
            prepared.execute(cursor, sql, params)
        row = cursor.fetchone()
        if not postgresql and row is not None:
            cursor.execute(_PLACE_TAKE_SQL, [row[0]])
    return (row[0], row[1]) if row else None


def hit_take_allowed(
    *, stage: Stage, worker: Worker, task_type: TaskType, now: datetime
) -> tuple[int, str] | None:
    """``_hit_take`` honouring exclusive keys: leaves out HITs holding an item whose
    key ``worker`` already holds in the stage, and, where the stage judges earlier
    work (``stage_excludes_own_work``), HITs holding an item ``worker`` produced.
    Waits only when every allowed HIT was locked by another allocation."""
    can_skip = connection.features.has_select_for_update_skip_locked
    taken = worker_exclusive_keys(stage=stage, worker=worker, task_type=task_type)
    own = stage_excludes_own_work(stage=stage)
    if not taken and not own:
        hit = _hit_take(stage=stage, worker_id=worker.pk, now=now, wait=False)
        if hit is None and can_skip:
            hit = _hit_take(stage=stage, worker_id=worker.pk, now=now, wait=True)
        return hit
    allowed: list[int] = []
    last_id = 0
    batches = 0
    while True:
        size = _CANDIDATE_BATCHES[min(batches, len(_CANDIDATE_BATCHES) - 1)]
        batches += 1
        batch = hits_open_ids(
            stage=stage,
            worker_id=worker.pk,
            after=last_id,
            limit=size,
            exclude_own_work=own,
            now=now,
        )
        conflicting = hits_conflicting(hit_ids=batch, task_type=task_type, taken=taken)
        free = [pk for pk in batch if pk not in conflicting]
        if free:
            hit = _hit_take(stage=stage, worker_id=worker.pk, now=now, wait=False, among=free)
            if hit is not None:
                return hit
            allowed += free
        if len(batch) < size:
            break
        last_id = batch[-1]
    if allowed and can_skip:
        return _hit_take(stage=stage, worker_id=worker.pk, now=now, wait=True, among=allowed)
    return None


def _takes_in_one_statement(*, stage: Stage, task_type: TaskType) -> bool:
    """Whether accept takes the place and inserts the assignment in one statement: on
    PostgreSQL, where ``hit_take_allowed`` takes the first open HIT as it is (a task
    type without exclusive keys, a stage that does not keep workers from their own
    work)."""
    return (
        connection.vendor == "postgresql"
        and not task_type_has_exclusive_keys(task_type)
        and not stage_excludes_own_work(stage=stage)
    )


@functools.cache
def _accept_checks_sql(vendor: str) -> str:
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    return _ACCEPT_CHECKS_SQL.format(worker_columns=worker_columns()) + lock


def _accept_checks(
    *, stage: Stage, worker_id: int, now: datetime
) -> tuple[Worker, str | None, bool, bool, int | None]:
    """Lock the worker row and read it with, in the same statement: the campaign state,
    whether the worker has access to the stage (as ``worker_has_stage_access``), whether
    the campaign's owner blocks them, and their current assignment in the stage.
    ``Worker.DoesNotExist`` when there is no such worker."""
    campaign = stage.campaign
    params: list[Any] = [
        stage.campaign_id,
        *worker_access_params(stage),
        campaign.owner_id,
        stage.pk,
        AssignmentStatus.ACCEPTED,
        connection.ops.adapt_datetimefield_value(now),
        worker_id,
    ]
    with connection.cursor() as cursor:
        prepared.execute(cursor, _accept_checks_sql(connection.vendor), params)
        row = cursor.fetchone()
    if row is None:
        raise Worker.DoesNotExist("No such worker.")
    split = len(Worker._meta.concrete_fields)
    worker = model_from_row(Worker, row[:split])
    state, access, blocked, current_id = row[split:]
    has_access = platform_for(campaign).hosts_workforce and bool(access)
    return worker, state, has_access, bool(blocked), current_id


_PK_COLUMN = "id"


@functools.cache
def _assignment_insert(vendor: str) -> tuple[str, list[Any], bool]:
    """An INSERT of every column of ``Assignment`` but its id: (SQL, fields, RETURNING)."""
    fields = [f for f in Assignment._meta.concrete_fields if not f.primary_key]
    columns = ", ".join(connection.ops.quote_name(str(f.column)) for f in fields)
    returning = connection.features.can_return_columns_from_insert
    table = connection.ops.quote_name(Assignment._meta.db_table)
    placeholders = ", ".join(["%s"] * len(fields))
    sql = f"INSERT INTO {table} ({columns}) VALUES ({placeholders})"  # noqa: S608 - no input
    if returning:
        sql += f" RETURNING {connection.ops.quote_name(_PK_COLUMN)}"
    return sql, fields, returning


def _assignment_create(assignment: Assignment) -> Assignment:
    """``assignment.save()`` as one hand-written INSERT: the ORM took longer to build it
    than the database to run it (assignments have no signals and no custom ``save``)."""
    sql, fields, returning = _assignment_insert(connection.vendor)
    values = [f.get_db_prep_save(f.pre_save(assignment, True), connection) for f in fields]
    with connection.cursor() as cursor:
        prepared.execute(cursor, sql, values)
        if returning:
            assignment.pk = cursor.fetchone()[0]
        else:
            assignment.pk = connection.ops.last_insert_id(
                cursor, Assignment._meta.db_table, _PK_COLUMN
            )
    assignment._state.adding = False
    assignment._state.db = connection.alias
    return assignment


@deadlock_retried
def assignment_accept(*, stage: Stage, worker: Worker | int) -> Assignment:
    """Give ``worker`` a place on the first open HIT of ``stage`` they may take.

    Returns the worker's current (accepted, unexpired) assignment in the stage if
    there is one. ``worker`` may be an id (the worker is read in the locking statement;
    ``Worker.DoesNotExist`` when there is none). Honours the task type's exclusive keys
    (at most one HIT per key per worker in the stage), requester blocks and the
    campaign state. Raises
    ``NoWorkAvailableError`` or ``WorkerNotAllowedError`` with a message for the worker.

    Locking: the worker row (a worker's own concurrent accepts are serialised, so
    exclusive keys and "one current assignment" hold); the same statement reads
    the campaign state, the worker's access, blocks and current assignment. Then
    one HIT row: the first open one with SKIP LOCKED, and only when every open HIT
    is locked by another allocation, the first of those, waiting (so nobody is told
    "no work" while a place is still free). The place is taken by
    ``places_left - 1`` on that row in the same statement; the constraints
    ``hit_places_left_non_negative`` and ``assignment_one_per_worker_per_hit``
    back it all.
    """
    now = timezone.now()
    worker_id = worker if isinstance(worker, int) else worker.pk
    with transaction.atomic():
        locked, state, has_access, blocked, current_id = _accept_checks(
            stage=stage, worker_id=worker_id, now=now
        )
        # Access first: someone without it learns nothing about the campaign's state
        # (and the worker pages show them no stage page).
        if not has_access:
            raise WorkerNoAccessError("You have no access to this task.")
        if state not in WORKABLE_STATES:
            raise NoWorkAvailableError("This campaign is not taking work at the moment.")
        if blocked:
            raise WorkerNotAllowedError("You can no longer take tasks from this requester.")
        if current_id is not None:
            return Assignment.objects.get(pk=current_id)
        refusal = stage_refusal(stage=stage, worker=locked, now=now)
        if refusal is not None:
            raise WorkerNotAllowedError(refusal)
        task_type = task_type_get(stage.task_type)
        assignment = Assignment(
            worker_id=worker_id,
            status=AssignmentStatus.ACCEPTED,
            accepted_at=now,
            deadline=now + stage.assignment_duration,
        )
        if _takes_in_one_statement(stage=stage, task_type=task_type):
            # The place and the assignment in one statement (as below, one round trip).
            created = _assignment_take(stage=stage, assignment=assignment, now=now, wait=False)
            if created is None and connection.features.has_select_for_update_skip_locked:
                created = _assignment_take(stage=stage, assignment=assignment, now=now, wait=True)
            if created is not None:
                return created
        else:
            taken = hit_take_allowed(stage=stage, worker=locked, task_type=task_type, now=now)
            if taken is not None:
                assignment.hit_id, assignment.provider = taken
                return _assignment_create(assignment)
    raise NoWorkAvailableError("There is no task left for you in this stage. Thank you!")
