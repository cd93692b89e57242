"""Accepting work: a worker takes a place on an open HIT (``assignment_accept``).

Locking: the order the work room takes its locks in is in ``campaigns/work/__init__.py``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from campaigns.design.platform import platform_for
from campaigns.models import (
    Assignment,
    AssignmentStatus,
    HITStatus,
    Provider,
    Stage,
    Worker,
)
from campaigns.tasktypes import TaskType, task_type_get
from campaigns.work.selectors.access import (
    WORKABLE_STATES,
    WORKER_ADMITTED_SQL,
    WORKER_ARM_SQL,
    worker_arm_admits,
)
from campaigns.work.selectors.loading import (
    STAGE_FULL_WIDTH,
    model_from_row,
    stage_from_row,
    stage_full_columns,
    worker_columns,
)
from campaigns.work.selectors.next_hit import (
    CURRENT_ASSIGNMENT_SQL,
    NOT_HELD_SQL,
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
    # The stage ``assignment_accept`` refused (the worker pages show its page).
    stage: Stage | None = None


class WorkerNotAllowedError(DomainError):
    """The worker may not work on this stage (no access, or blocked)."""

    # The stage ``assignment_accept`` refused (the worker pages show its page).
    stage: Stage | None = None

    code = "not_allowed"


class WorkerNoAccessError(WorkerNotAllowedError):
    """The worker has no access to the stage (no grant, no covering invite)."""


# --- Accepting work ----------------------------------------------------------------


# The statements every accept runs, in SQL: the ORM takes longer to build them than
# PostgreSQL takes to run them (bench/README.md). Tables are the models' db_table.
# Parameters: stage id, now, worker id. The status is written out: prepared
# (``qaportal.prepared``), the statement's generic plan can use the partial index
# ``hit_open_places`` only when the statement itself says "published"; the worker's
# places are probed per candidate HIT (``NOT_HELD_SQL``).
_PUBLISHED = str(HITStatus.PUBLISHED)
_NOT_HELD = NOT_HELD_SQL.format(hit="h.id", worker="%s")
_HIT_TAKE_SQL = f"""
UPDATE campaigns_hit SET places_left = places_left - 1 WHERE id = (
  SELECT h.id FROM campaigns_hit h
  WHERE h.stage_id = %s AND h.status = '{_PUBLISHED}' AND h.places_left > 0
    AND (h.expires_at IS NULL OR h.expires_at > %s)
    AND {_NOT_HELD}
  ORDER BY h.id LIMIT 1 FOR UPDATE SKIP LOCKED
) RETURNING id, provider
"""  # noqa: S608 - a constant, no input
_HIT_TAKE_WAITING_SQL = _HIT_TAKE_SQL.replace("SKIP LOCKED", "")
# Other databases (SQLite serialises writers): pick, then update.
_HIT_PICK_SQL = f"""
SELECT h.id, h.provider FROM campaigns_hit h
WHERE h.stage_id = %s AND h.status = '{_PUBLISHED}' AND h.places_left > 0
  AND (h.expires_at IS NULL OR h.expires_at > %s)
  AND {_NOT_HELD}
ORDER BY h.id LIMIT 1
"""  # noqa: S608 - a constant, no input
# SQLite: the place taken on the HIT it picked (its writers are serialised).
_PLACE_TAKE_SQL = "UPDATE campaigns_hit SET places_left = places_left - 1 WHERE id = %s"
# The worker row, locked, with what accept checks in the same statement: the stage with
# its campaign (state and owner), access (``WORKER_ADMITTED_SQL`` and the worker's arm),
# the campaign owner's block, and the current assignment in the stage. Columns: the
# worker's fields, the stage's and campaign's (``stage_full_columns``), then those four.
# Parameters: stage id (current assignment), accepted, now, ``Provider.LOCAL``, worker
# id, stage id. Only the worker row is locked (``FOR UPDATE OF w``): the stage and
# campaign rows are read as the stage page reads them.
_ACCEPT_CHECKS_SQL = f"""
SELECT {{worker_columns}}, {{stage_columns}},
  {CURRENT_ASSIGNMENT_SQL},
  {WORKER_ADMITTED_SQL},
  {WORKER_ARM_SQL},
  EXISTS (SELECT 1 FROM campaigns_workerblock b
          WHERE b.requester_id = c.owner_id AND b.worker_id = w.id AND b.lifted_at IS NULL)
FROM campaigns_worker w
CROSS JOIN campaigns_stage s
INNER JOIN campaigns_campaign c ON c.id = s.campaign_id
WHERE w.id = %s AND s.id = %s
"""  # noqa: S608 - constant fragments, no input


# The worker's current assignment in the stage, read again by the statement that takes
# a place: the locking statement's own read of it ran on the snapshot taken before it
# waited for the worker row, so a concurrent accept of the same worker (a double click)
# that held the row and committed meanwhile is only seen from a later statement.
# Parameters: stage id, worker id, accepted, now.
_CURRENT_AGAIN_SQL = CURRENT_ASSIGNMENT_SQL.replace("a.worker_id = w.id", "a.worker_id = %s")
assert _CURRENT_AGAIN_SQL != CURRENT_ASSIGNMENT_SQL, "CURRENT_ASSIGNMENT_SQL changed shape"


@functools.cache
def _take_and_insert_sql(wait: bool) -> tuple[str, list[Any]]:
    """PostgreSQL: the place taken (``_HIT_TAKE_SQL``) and the assignment inserted on it
    in one statement, unless the worker already has a current assignment in the stage
    (``_CURRENT_AGAIN_SQL``, read on this statement's snapshot):
    ``WITH cur AS (…), taken AS (UPDATE … RETURNING id, provider), ins AS (INSERT …
    SELECT … FROM taken RETURNING id, hit_id, provider) SELECT ins.*, cur.id``, one row:
    the inserted assignment's columns (NULL when no place was taken), then the current
    assignment's id (NULL when there is none; then no HIT is locked). Parameters: the
    current assignment's, the take's, then the assignment's fields but hit and provider
    (in ``_assignment_insert``'s order), each cast to its column's type (a prepared
    statement's parameters take their types from the casts, as an INSERT's VALUES
    would from its columns)."""
    _sql, fields, _returning = _assignment_insert(connection.vendor)
    take = (_HIT_TAKE_WAITING_SQL if wait else _HIT_TAKE_SQL).strip()
    guarded = take.replace(
        "WHERE h.stage_id", "WHERE (SELECT id FROM cur) IS NULL AND h.stage_id", 1
    )
    # Without the guard a double click would take a second place again.
    assert guarded != take, "the HIT take's WHERE changed shape"
    take = guarded
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
        f"WITH cur AS (SELECT {_CURRENT_AGAIN_SQL} AS id), taken AS ({take}), "  # noqa: S608
        f"ins AS (INSERT INTO {table} ({', '.join(columns)}) "
        f"SELECT {', '.join(values)} FROM taken RETURNING id, hit_id, provider) "
        "SELECT ins.id, ins.hit_id, ins.provider, (SELECT id FROM cur) "
        "FROM (SELECT 1) one LEFT JOIN ins ON true"
    )
    return statement, inserted


def _assignment_take(
    *, stage: Stage, assignment: Assignment, now: datetime, wait: bool
) -> tuple[Assignment | None, int | None]:
    """PostgreSQL, no exclusive keys: ``_hit_take`` and ``_assignment_create`` in one
    statement (one round trip fewer per accept). ``assignment`` has every field but its
    HIT and provider, which the statement fills in. Returns (the created assignment or
    None when no place was taken, the worker's current assignment's id when they already
    had one: then nothing was taken)."""
    sql, fields = _take_and_insert_sql(wait)
    at = connection.ops.adapt_datetimefield_value(now)
    worker_id = assignment.worker_id
    params: list[Any] = [stage.pk, worker_id, AssignmentStatus.ACCEPTED, at]
    params += [stage.pk, at, worker_id]
    params += [f.get_db_prep_save(f.pre_save(assignment, True), connection) for f in fields]
    with connection.cursor() as cursor:
        prepared.execute(cursor, sql, params)
        pk, hit_id, provider, current_id = cursor.fetchone()
    if pk is None:
        return None, current_id
    assignment.pk, assignment.hit_id, assignment.provider = pk, hit_id, provider
    assignment._state.adding = False
    assignment._state.db = connection.alias
    return assignment, None


def _current_again(*, stage: Stage, worker_id: int, now: datetime) -> int | None:
    """The worker's current assignment in the stage on a fresh snapshot
    (``_CURRENT_AGAIN_SQL``), on PostgreSQL; None elsewhere (SQLite's transactions
    begin IMMEDIATE: a worker's accepts are serialised from their first read)."""
    if connection.vendor != "postgresql":
        return None
    at = connection.ops.adapt_datetimefield_value(now)
    with connection.cursor() as cursor:
        prepared.execute(
            cursor,
            f"SELECT {_CURRENT_AGAIN_SQL}",
            [stage.pk, worker_id, AssignmentStatus.ACCEPTED, at],
        )
        return cursor.fetchone()[0]


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
    params: list[Any] = [stage.pk, connection.ops.adapt_datetimefield_value(now), worker_id]
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
    features = connection.features
    lock = (
        " FOR UPDATE OF w"
        if features.has_select_for_update_of
        else " FOR UPDATE"
        if features.has_select_for_update
        else ""
    )
    return (
        _ACCEPT_CHECKS_SQL.format(
            worker_columns=worker_columns(), stage_columns=stage_full_columns()
        )
        + lock
    )


@dataclass(frozen=True)
class _AcceptChecks:
    """What ``assignment_accept``'s locking statement read."""

    worker: Worker
    stage: Stage
    has_access: bool
    blocked: bool
    current_id: int | None


def _accept_checks(*, stage_id: int, worker_id: int, now: datetime) -> _AcceptChecks:
    """Lock the worker row and read it with, in the same statement: the stage with its
    campaign, whether the worker has access to the stage (as ``worker_has_stage_access``),
    whether the campaign's owner blocks them, and their current assignment in the stage.
    ``Worker.DoesNotExist`` when there is no such worker, ``Stage.DoesNotExist`` when
    there is no such stage."""
    params: list[Any] = [
        stage_id,
        AssignmentStatus.ACCEPTED,
        connection.ops.adapt_datetimefield_value(now),
        Provider.LOCAL,
        worker_id,
        stage_id,
    ]
    with connection.cursor() as cursor:
        prepared.execute(cursor, _accept_checks_sql(connection.vendor), params)
        row = cursor.fetchone()
    if row is None:
        # Which one is missing (a request for a stage that is gone, or a stale session).
        if not Stage.objects.filter(pk=stage_id).exists():
            raise Stage.DoesNotExist("No such stage.")
        raise Worker.DoesNotExist("No such worker.")
    split = len(Worker._meta.concrete_fields)
    end = split + STAGE_FULL_WIDTH
    worker = model_from_row(Worker, row[:split])
    stage = stage_from_row(row[split:end])
    current_id, admitted, worker_arm, blocked = row[end:]
    has_access = (
        platform_for(stage.campaign).hosts_workforce
        and bool(admitted)
        and worker_arm_admits(stage=stage, worker_arm=worker_arm)
    )
    return _AcceptChecks(
        worker=worker,
        stage=stage,
        has_access=has_access,
        blocked=bool(blocked),
        current_id=current_id,
    )


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
def assignment_accept(*, stage: Stage | int, worker: Worker | int) -> Assignment:
    """Give ``worker`` a place on the first open HIT of ``stage`` they may take.

    Returns the worker's current (accepted, unexpired) assignment in the stage if
    there is one. ``stage`` and ``worker`` may be ids: both are read in the locking
    statement (``Stage.DoesNotExist``, ``Worker.DoesNotExist`` when there is none; the
    refusals below carry the stage they read as ``stage``). Honours the task type's
    exclusive keys (at most one HIT per key per worker in the stage), requester blocks
    and the campaign state. Raises
    ``NoWorkAvailableError`` or ``WorkerNotAllowedError`` with a message for the worker.

    Locking: the worker row (a worker's own concurrent accepts are serialised, so
    exclusive keys and "one current assignment" hold); the same statement reads the
    stage with its campaign (unlocked: its state as of that statement), the worker's
    access, blocks and current assignment. Then
    one HIT row: the first open one with SKIP LOCKED, and only when every open HIT
    is locked by another allocation, the first of those, waiting (so nobody is told
    "no work" while a place is still free). The place is taken by
    ``places_left - 1`` on that row in the same statement; the constraints
    ``hit_places_left_non_negative`` and ``assignment_one_per_worker_per_hit``
    back it all.
    """
    now = timezone.now()
    worker_id = worker if isinstance(worker, int) else worker.pk
    stage_id = stage if isinstance(stage, int) else stage.pk
    with transaction.atomic():
        checks = _accept_checks(stage_id=stage_id, worker_id=worker_id, now=now)
        if isinstance(stage, int):
            stage = checks.stage
        try:
            return _accept_checked(stage=stage, checks=checks, now=now)
        except (NoWorkAvailableError, WorkerNotAllowedError) as exc:
            exc.stage = stage
            raise


def _accept_checked(*, stage: Stage, checks: _AcceptChecks, now: datetime) -> Assignment:
    """``assignment_accept`` after its locking statement (in its transaction)."""
    # Access first: someone without it learns nothing about the campaign's state
    # (and the worker pages show them no stage page).
    if not checks.has_access:
        raise WorkerNoAccessError("You have no access to this task.")
    if checks.stage.campaign.state not in WORKABLE_STATES:  # as of the locking statement
        raise NoWorkAvailableError("This campaign is not taking work at the moment.")
    if checks.blocked:
        raise WorkerNotAllowedError("You can no longer take tasks from this requester.")
    if checks.current_id is not None:
        return Assignment.objects.get(pk=checks.current_id)
    locked = checks.worker
    refusal = stage_refusal(stage=stage, worker=locked, now=now)
    if refusal is not None:
        raise WorkerNotAllowedError(refusal)
    task_type = task_type_get(stage.task_type)
    assignment = Assignment(
        worker_id=locked.pk,
        status=AssignmentStatus.ACCEPTED,
        accepted_at=now,
        deadline=now + stage.assignment_duration,
    )
    if _takes_in_one_statement(stage=stage, task_type=task_type):
        # The place and the assignment in one statement (as below, one round trip).
        created, current_id = _assignment_take(
            stage=stage, assignment=assignment, now=now, wait=False
        )
        if created is None and current_id is None:
            created, current_id = _assignment_take(
                stage=stage, assignment=assignment, now=now, wait=True
            )
        if current_id is not None:
            return Assignment.objects.get(pk=current_id)
        if created is not None:
            return created
    else:
        current_id = _current_again(stage=stage, worker_id=locked.pk, now=now)
        if current_id is not None:
            return Assignment.objects.get(pk=current_id)
        taken = hit_take_allowed(stage=stage, worker=locked, task_type=task_type, now=now)
        if taken is not None:
            assignment.hit_id, assignment.provider = taken
            return _assignment_create(assignment)
    raise NoWorkAvailableError("There is no task left for you in this stage. Thank you!")
