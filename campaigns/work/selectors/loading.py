"""Loading for the worker pages: the assignment with its HIT, stage and campaign, the
stage with its campaign, the stage page's visit, a HIT's items.

The few reads every worker cycle runs are hand-written SQL: the ORM spent more CPU
building them than PostgreSQL spent running them (bench/README.md). Their rows become
model instances through the fields' own converters (``model_from_row``), and a model
that gains a field makes them fail loudly until its column is added to the statement.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import Model
from django.db.models.base import ModelState
from django.db.models.fields.related_descriptors import ForeignKeyDeferredAttribute
from django.db.models.query_utils import DeferredAttribute
from django.db.models.signals import post_init, pre_init
from django.utils import timezone

from campaigns.design.platform import platform_for
from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    Campaign,
    Stage,
    Worker,
)
from campaigns.work.selectors.access import (
    _QUALIFIED_SQL,
    WORKABLE_STATES,
    WORKER_ACCESS_SQL,
    RequestWorkers,
    required_qualification_ids,
    worker_access_params,
)
from campaigns.work.selectors.next_hit import (
    _NEXT_HIT_SQL,
    CURRENT_ASSIGNMENT_SQL,
    NEXT_HIT_PREFETCHED,
    _hit_next_available_pk,
    _next_hit_params,
    _next_hit_simple,
)
from qaportal import prepared

# Run twice per worker cycle (page, submit): in SQL, which the ORM takes longer to
# build than the database to run. The backends hand JSON columns over as text (as
# Django configures them); ``Item.data`` has no custom decoder.
_HIT_ITEMS_SQL = """
SELECT hi.item_id, i.external_id, i.data
FROM campaigns_hititem hi INNER JOIN campaigns_item i ON i.id = hi.item_id
WHERE hi.hit_id = %s ORDER BY hi.position
"""

# The attribute of a HIT instance holding its items as ``assignment_load`` read them
# (JSON text: ``[[item id, external id, data], ...]``).
ITEMS_PREFETCHED = "_items_prefetched"


def hit_items(*, hit: HIT) -> list[dict[str, Any]]:
    """The HIT's items in order, as task types see them: ``{"id", "external_id", "data"}``.

    No query when ``assignment_load`` read them with the HIT (fresh objects each call,
    as from a query)."""
    prefetched = getattr(hit, ITEMS_PREFETCHED, None)
    if prefetched is not None:
        return [
            {"id": item_id, "external_id": external_id, "data": data}
            for item_id, external_id, data in json.loads(prefetched)
        ]
    with connection.cursor() as cursor:
        prepared.execute(cursor, _HIT_ITEMS_SQL, [hit.pk])
        return _items_from_rows(cursor.fetchall())


def _items_from_rows(rows: Sequence[tuple[int, str, Any]]) -> list[dict[str, Any]]:
    """``(id, external id, data)`` rows as task types see items (JSON columns come as
    text from the backends, as Django configures them)."""
    return [
        {
            "id": item_id,
            "external_id": external_id,
            "data": json.loads(data) if isinstance(data, str | bytes) else data,
        }
        for item_id, external_id, data in rows
    ]


_ASSIGNMENT_ITEMS_SQL = """
SELECT i.id, i.external_id, i.data FROM campaigns_assignment a
INNER JOIN campaigns_hititem hi ON hi.hit_id = a.hit_id
INNER JOIN campaigns_item i ON i.id = hi.item_id
WHERE a.id = %s ORDER BY hi.position
"""


def assignment_items(*, assignment_id: int) -> list[dict[str, Any]]:
    """The items of the assignment's HIT in order (``hit_items``), in one statement."""
    with connection.cursor() as cursor:
        prepared.execute(cursor, _ASSIGNMENT_ITEMS_SQL, [assignment_id])
        return _items_from_rows(cursor.fetchall())


def stage_worker(
    *, stage: Stage, workers: RequestWorkers, qualifications: bool = True
) -> Worker | None:
    """The first of ``workers`` (session order, then the account's) with access to
    ``stage``, or None; one query, none when the request speaks for nobody.
    ``qualifications=False``: the first let in by invitation or grant alone."""
    visit = stage_visit(stage=stage, workers=workers, qualifications=qualifications)
    return visit.worker if visit is not None else None


@dataclass(frozen=True)
class StageVisit:
    """The stage page's reads about the request's worker, from one statement."""

    worker: Worker
    # Their accepted, unexpired assignment in the stage (``assignment_current``).
    current_id: int | None
    # The HIT ``hit_next_available`` gives them (read only when the stage is workable).
    next_hit_id: int | None
    # That HIT's items as ``assignment_load`` reads them (JSON text), when read with it
    # (PostgreSQL, the simple case): the page's preview then reads them without a query.
    next_hit_items: str | None = None

    def next_hit(self, *, stage: Stage) -> HIT | None:
        """The next HIT (``next_hit_id``) of ``stage``, with its items when they were
        read with it (``hit_items`` then runs no query); None when there is none."""
        if self.next_hit_id is None:
            return None
        hit = HIT(pk=self.next_hit_id, stage=stage)
        if self.next_hit_items is not None:
            setattr(hit, ITEMS_PREFETCHED, self.next_hit_items)
        return hit


def worker_columns() -> str:
    """The ``Worker``'s columns as ``model_from_row`` reads them, on the alias ``w``."""
    return ", ".join(f"w.{f.column}" for f in Worker._meta.concrete_fields)


def stage_visit(
    *,
    stage: Stage,
    workers: RequestWorkers,
    qualifications: bool = True,
    now: datetime | None = None,
) -> StageVisit | None:
    """``stage_worker`` with, in the same statement, that worker's current assignment
    in ``stage`` and the next HIT they would get (``hit_next_available``); None when
    none of ``workers`` may see the stage. One query (two for a stage whose next HIT
    depends on exclusive keys or on who wrote its items), none when the request
    speaks for nobody."""
    if not workers or not platform_for(stage.campaign).hosts_workforce:
        return None
    now = now or timezone.now()
    who, who_params = [], []
    if workers.worker_ids:
        who.append(f"w.id IN ({', '.join(['%s'] * len(workers.worker_ids))})")
        who_params += list(workers.worker_ids)
    if workers.user_id is not None:
        who.append("w.user_id = %s")
        who_params.append(workers.user_id)
    workable = stage.campaign.state in WORKABLE_STATES
    simple = workable and _next_hit_simple(stage)
    next_hit = f"({_NEXT_HIT_SQL.format(stage='%s', worker='w.id')})" if simple else "NULL"
    # PostgreSQL: the next HIT's items too (its preview on the page), from a LATERAL
    # subquery that finds the HIT once; same parameters, in the same order.
    with_items = simple and connection.vendor == "postgresql"
    required = required_qualification_ids(stage=stage) if qualifications else []
    where = f"({' OR '.join(who)}) AND {WORKER_ACCESS_SQL}" + _QUALIFIED_SQL * len(required)
    if with_items:
        columns = f"{worker_columns()}, {CURRENT_ASSIGNMENT_SQL}, nx.id, {_NEXT_ITEMS_COLUMN}"
        source = f"campaigns_worker w CROSS JOIN LATERAL (SELECT {next_hit} AS id) nx"
    else:
        columns = f"{worker_columns()}, {CURRENT_ASSIGNMENT_SQL}, {next_hit}"
        source = "campaigns_worker w"
    sql = f"SELECT {columns} FROM {source} WHERE {where}"  # noqa: S608 - no input
    params: list[Any] = [
        stage.pk,
        AssignmentStatus.ACCEPTED,
        connection.ops.adapt_datetimefield_value(now),
        *(_next_hit_params(stage, now) if simple else []),
        *who_params,
        *worker_access_params(stage),
        *required,
    ]
    with connection.cursor() as cursor:
        prepared.execute(cursor, sql, params)
        rows = cursor.fetchall()
    if not rows:
        return None
    order = {pk: n for n, pk in enumerate(workers.worker_ids)}
    split = len(Worker._meta.concrete_fields)
    row = min(rows, key=lambda r: order.get(r[0], len(order)))
    worker = model_from_row(Worker, row[:split])
    current_id, next_hit_id = row[split], row[split + 1]
    items = (row[split + 2] or "[]") if with_items and next_hit_id is not None else None
    if workable and not simple:
        next_hit_id = _hit_next_available_pk(stage=stage, worker=worker)
    return StageVisit(
        worker=worker, current_id=current_id, next_hit_id=next_hit_id, next_hit_items=items
    )


# The assignment with its HIT, stage and campaign, as the work page and the submission
# load it on every cycle. Hand-written: the ORM took 1 ms of CPU to build this join
# each time. Columns in each model's field order (``model_from_row`` checks the counts);
# then the holder's user id and provider, for the ownership check.
_ASSIGNMENT_FULL_SQL = """
SELECT a.id, a.hit_id, a.worker_id, a.provider, a.provider_assignment_id, a.status,
  a.answers, a.accepted_at, a.deadline, a.submitted_at, a.work_seconds, a.telemetry,
  a.decided_at, a.decided_by_id, a.decision_source, a.decision_reason, a.feedback,
  a.review_details, a.llm_flag,
  h.id, h.stage_id, h.provider, h.provider_hit_id, h.provider_group_id,
  h.max_assignments, h.places_left, h.reward, h.status, h.created_at, h.published_at,
  h.expires_at,
  s.id, s.campaign_id, s.name, s.position, s.task_type, s.instructions, s.config, s.reward,
  s.assignments_per_hit, s.items_per_hit, s.assignment_duration, s.lifetime, s.gold_ratio,
  s.qualification_requirements, s.escalation_rule, s.review_rules, s.bonus_rules,
  s.next_stage_id, s.handoff, s.created_at, s.show_reward_to_local_workers, s.publish_added,
  c.id, c.slug, c.name, c.description, c.owner_id, c.provider, c.sandbox, c.budget_cap,
  c.bonus_max,
  c.currency, c.state, c.state_changed_at, c.recipe, c.created_at, c.updated_at,
  w.user_id, w.provider{items}
FROM campaigns_assignment a
INNER JOIN campaigns_hit h ON h.id = a.hit_id
INNER JOIN campaigns_stage s ON s.id = h.stage_id
INNER JOIN campaigns_campaign c ON c.id = s.campaign_id
INNER JOIN campaigns_worker w ON w.id = a.worker_id
WHERE a.id = %s
"""

# The items of the HIT ``{hit}`` as JSON text (``[[item id, external id, data], ...]``),
# each item read by its key from its HIT link (a LATERAL subquery that the planner may not
# merge into a join: ``OFFSET 0``). As a join, the generic plan kept by the prepared
# statement, made while the items table was small, hashed the whole table at each call:
# the dry run's task page and submission read 20 buffers per call at its start and 290
# at its end, growing with the campaign's items.
_ITEMS_JSON = """(SELECT json_agg(json_build_array(hi.item_id, i.external_id, i.data)
                   ORDER BY hi.position)
   FROM campaigns_hititem hi
   CROSS JOIN LATERAL (SELECT it.external_id, it.data FROM campaigns_item it
                       WHERE it.id = hi.item_id OFFSET 0) i
   WHERE hi.hit_id = {hit})::text"""

# PostgreSQL: the HIT's items too, for ``hit_items`` (the page and the submission read
# them right after): one query fewer on each.
_ITEMS_COLUMN = ",\n  " + _ITEMS_JSON.format(hit="a.hit_id")

# The stage page: the items of the next HIT ``nx`` (``stage_visit``), as ``_ITEMS_COLUMN``.
_NEXT_ITEMS_COLUMN = _ITEMS_JSON.format(hit="nx.id")

# The thank-you page: the HIT its worker would get next in the stage (``_NEXT_HIT_SQL``,
# the simple case), read with the assignment.
_NEXT_HIT_COLUMN = f",\n  ({_NEXT_HIT_SQL.format(stage='h.stage_id', worker='a.worker_id')})"

_FULL_MODELS: tuple[type[Model], ...] = (Assignment, HIT, Stage, Campaign)


@functools.cache
def _field_converters(
    model: type[Model], vendor: str
) -> tuple[list[str], list[tuple[int, Any, list[Any]]]]:
    """The concrete fields' attribute names, and (index, column expression, converters)
    of those the ORM converts when it reads them (most fields have no converter)."""
    conn = connections[DEFAULT_DB_ALIAS]
    attnames, converted = [], []
    for n, f in enumerate(model._meta.concrete_fields):
        attnames.append(f.attname)
        col = f.get_col(model._meta.db_table)
        converters = conn.ops.get_db_converters(col) + f.get_db_converters(conn)
        if converters:
            converted.append((n, col, converters))
    return attnames, converted


_MODEL_FROM_DB = Model.from_db.__func__  # type: ignore[attr-defined]
# Field attributes whose assignment on a new instance only stores the value.
_PLAIN_DESCRIPTORS = (DeferredAttribute, ForeignKeyDeferredAttribute)


@functools.cache
def _plain_model(model: type[Model]) -> bool:
    """Whether ``model.from_db`` would only call ``Model.__init__`` with the values, and
    each concrete field's attribute only stores what is assigned to it."""
    return (
        getattr(model.from_db, "__func__", None) is _MODEL_FROM_DB
        and model.__init__ is Model.__init__
        and all(
            type(model.__dict__.get(f.attname)) in _PLAIN_DESCRIPTORS
            for f in model._meta.concrete_fields
        )
    )


def _plain_from_db(model: type[Model]) -> bool:
    """``_plain_model``, and nothing listens to its ``pre_init`` / ``post_init`` (checked
    on each call: receivers may connect at any time)."""
    return (
        _plain_model(model)
        and not pre_init.has_listeners(model)
        and not post_init.has_listeners(model)
    )


def model_from_row(model: type[Model], values: Sequence[Any]) -> Any:
    """A ``model`` instance from its concrete fields' column values, in field order,
    converted as the ORM converts them."""
    conn = connections[DEFAULT_DB_ALIAS]
    attnames, converted = _field_converters(model, conn.vendor)
    if len(values) != len(attnames):
        raise ValueError(f"{model.__name__}: {len(values)} columns for {len(attnames)} fields")
    row = list(values)
    for n, col, converters in converted:
        value = row[n]
        for convert in converters:
            value = convert(value, col, conn)
        row[n] = value
    if not _plain_from_db(model):
        return model.from_db(conn.alias, attnames, row)
    # What ``Model.from_db`` makes, without ``Model.__init__``'s walk over the fields
    # (~1 µs a model instead of ~4.5): every concrete field set, loaded from ``conn.alias``.
    instance = model.__new__(model)
    instance.__dict__.update(zip(attnames, row, strict=True))
    state = instance._state = ModelState()
    state.adding = False
    state.db = conn.alias
    return instance


_STAGE_FULL_SQL = """
SELECT s.id, s.campaign_id, s.name, s.position, s.task_type, s.instructions, s.config, s.reward,
  s.assignments_per_hit, s.items_per_hit, s.assignment_duration, s.lifetime, s.gold_ratio,
  s.qualification_requirements, s.escalation_rule, s.review_rules, s.bonus_rules,
  s.next_stage_id, s.handoff, s.created_at, s.show_reward_to_local_workers, s.publish_added,
  c.id, c.slug, c.name, c.description, c.owner_id, c.provider, c.sandbox, c.budget_cap,
  c.bonus_max,
  c.currency, c.state, c.state_changed_at, c.recipe, c.created_at, c.updated_at
FROM campaigns_stage s INNER JOIN campaigns_campaign c ON c.id = s.campaign_id
WHERE s.id = %s
"""


def stage_load(*, stage_id: int) -> Stage:
    """The stage with its campaign (one query, as ``assignment_load``); ``Stage.DoesNotExist``."""
    with connection.cursor() as cursor:
        prepared.execute(cursor, _STAGE_FULL_SQL, [stage_id])
        row = cursor.fetchone()
    if row is None:
        raise Stage.DoesNotExist("No such stage.")
    return stage_from_row(row)


STAGE_FULL_WIDTH = len(Stage._meta.concrete_fields) + len(Campaign._meta.concrete_fields)


def stage_full_columns() -> str:
    """The ``Stage``'s columns on the alias ``s``, then its ``Campaign``'s on ``c``, as
    ``stage_from_row`` reads them (``STAGE_FULL_WIDTH`` of them)."""
    return ", ".join(
        [f"s.{f.column}" for f in Stage._meta.concrete_fields]
        + [f"c.{f.column}" for f in Campaign._meta.concrete_fields]
    )


def stage_from_row(row: Sequence[Any]) -> Stage:
    """The stage with its campaign from ``stage_full_columns``' values."""
    split = len(Stage._meta.concrete_fields)
    stage = model_from_row(Stage, row[:split])
    stage.campaign = model_from_row(Campaign, row[split:])
    return stage


def assignment_load(
    *,
    assignment_id: int,
    workers: RequestWorkers,
    lock: bool = False,
    items: bool = True,
    next_hit: bool = False,
) -> Assignment:
    """The assignment with its HIT, stage and campaign if one of ``workers`` holds it;
    ``Assignment.DoesNotExist`` otherwise. One query (on PostgreSQL with the HIT's
    items, which ``hit_items`` then reads without one, unless ``items`` is off: a page
    that shows none; with ``next_hit``, the HIT its worker would get next in the stage,
    which ``assignment_next_hit_id`` then reads without one); ``lock``: ``FOR UPDATE``
    of the assignment row (inside a transaction)."""
    suffix = " FOR UPDATE OF a" if lock and connection.features.has_select_for_update_of else ""
    with_items = items and connection.vendor == "postgresql"
    columns = (_ITEMS_COLUMN if with_items else "") + (_NEXT_HIT_COLUMN if next_hit else "")
    sql = _ASSIGNMENT_FULL_SQL.format(items=columns)
    params = [*(_next_hit_params(None, timezone.now()) if next_hit else []), assignment_id]
    with connection.cursor() as cursor:
        prepared.execute(cursor, sql + suffix, params)
        row = cursor.fetchone()
    if row is None:
        raise Assignment.DoesNotExist("No such assignment.")
    parts, start = [], 0
    for model in _FULL_MODELS:
        end = start + len(model._meta.concrete_fields)
        parts.append(model_from_row(model, row[start:end]))
        start = end
    user_id, provider = row[start : start + 2]
    assignment, hit, stage, campaign = parts
    extra = start + 2
    if with_items:
        setattr(hit, ITEMS_PREFETCHED, row[extra] or "[]")
        extra += 1
    if next_hit:
        setattr(assignment, NEXT_HIT_PREFETCHED, row[extra])
    owned = assignment.worker_id in workers.worker_ids or (
        workers.user_id is not None
        and user_id == workers.user_id
        and platform_for(provider).hosts_workforce
    )
    if not owned:
        raise Assignment.DoesNotExist("No such assignment.")
    stage.campaign = campaign
    hit.stage = stage
    assignment.hit = hit
    return assignment


def assignment_get_for_workers(
    *,
    assignment_id: int,
    workers: RequestWorkers | Collection[Worker],
    items: bool = True,
    next_hit: bool = False,
) -> Assignment:
    """The assignment (with its HIT, stage and campaign) if one of ``workers`` holds it;
    ``Assignment.DoesNotExist`` otherwise. One query (``items``, ``next_hit``: as
    ``assignment_load``)."""
    if not isinstance(workers, RequestWorkers):
        workers = RequestWorkers(worker_ids=tuple(w.pk for w in workers))
    return assignment_load(
        assignment_id=assignment_id, workers=workers, items=items, next_hit=next_hit
    )


# Many HITs' items (``hits_items``), on PostgreSQL: the HITs as one array parameter (a
# prepared statement), each item read by its key as in ``_ITEMS_JSON``: as a join the
# planner hashed the whole items table once the HITs were more than a few (a round's
# agreement checks read 9 buffers at the dry run's start, 173 at its end).
_HITS_ITEMS_SQL = """
SELECT hi.hit_id, hi.item_id, i.external_id, i.data FROM campaigns_hititem hi
CROSS JOIN LATERAL (SELECT it.external_id, it.data FROM campaigns_item it
                    WHERE it.id = hi.item_id OFFSET 0) i
WHERE hi.hit_id = ANY(%s) ORDER BY hi.hit_id, hi.position
"""
# Elsewhere: the ids as placeholders (``{ids}``).
_HITS_ITEMS_PLAIN_SQL = """
SELECT hi.hit_id, hi.item_id, i.external_id, i.data FROM campaigns_hititem hi
INNER JOIN campaigns_item i ON i.id = hi.item_id
WHERE hi.hit_id IN ({ids}) ORDER BY hi.hit_id, hi.position
"""


def hits_items(*, hit_ids: Collection[int]) -> dict[int, list[dict[str, Any]]]:
    """``hit_items`` of many HITs in one query: HIT id -> its items in order (every
    id of ``hit_ids`` is a key). Hand-written: the ORM took longer to build it (an id
    at a time through the field) than the database to run it."""
    found: dict[int, list[dict[str, Any]]] = {hit_id: [] for hit_id in hit_ids}
    if not found:
        return found
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            prepared.execute(cursor, _HITS_ITEMS_SQL, [list(found)])
        else:
            marks = ", ".join(["%s"] * len(found))
            cursor.execute(_HITS_ITEMS_PLAIN_SQL.format(ids=marks), list(found))
        rows = cursor.fetchall()
    for hit_id, item_id, external_id, data in rows:
        found[hit_id].append(
            {
                "id": item_id,
                "external_id": external_id,
                "data": json.loads(data) if isinstance(data, str | bytes) else data,
            }
        )
    return found
