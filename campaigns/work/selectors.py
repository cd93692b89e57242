"""Reads for the worker pages: access, available HITs, an assignment's items.

The few reads every worker cycle runs (the assignment with its HIT, stage and
campaign; the stage with its campaign; a HIT's items) are hand-written SQL: the
ORM spent more CPU building them than PostgreSQL spent running them
(bench/README.md). Their rows become model instances through the fields' own
converters, and a model that gains a field makes them fail loudly until its
column is added to the statement.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import Exists, Model, OuterRef, Q, QuerySet
from django.utils import timezone

from campaigns.design.platform import platform_for
from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    Campaign,
    CampaignState,
    CampaignWorker,
    HITItem,
    HITStatus,
    InviteLink,
    LocalGrant,
    Provider,
    QualificationGrant,
    Stage,
    Worker,
)
from campaigns.models.choices import ASSIGNMENT_HOLDING_STATES
from campaigns.tasktypes import TaskType, task_type_get
from campaigns.workforce.requirements import stage_required_qualifications
from qaportal import prepared

WORKABLE_STATES = (CampaignState.PILOT, CampaignState.LIVE)


@dataclass(frozen=True)
class RequestWorkers:
    """The workers one request speaks for: the invited workers whose ids its session
    holds, then the logged-in account's local worker (``user_id``).

    Lets the pages filter on worker ids without loading the ``Worker`` rows.
    """

    worker_ids: tuple[int, ...] = ()
    user_id: int | None = None

    def __bool__(self) -> bool:
        return bool(self.worker_ids) or self.user_id is not None


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


def worker_stage_access_q(*, stage: Stage, qualifications: bool = True) -> Q:
    """``worker_has_stage_access`` as a filter on ``Worker`` rows (one query, any number of
    workers). Matches nothing when the campaign is not local. ``qualifications=False``:
    invited or granted, whatever quizzes they still have to pass."""
    if not platform_for(stage.campaign).hosts_workforce:
        return Q(pk__in=[])
    grant = LocalGrant.objects.filter(campaign_id=stage.campaign_id, user_id=OuterRef("user_id"))
    invite = InviteLink.objects.filter(
        Q(stage__isnull=True) | Q(stage_id=stage.pk),
        campaign_id=stage.campaign_id,
        revoked_at__isnull=True,
        redemptions__worker_id=OuterRef("pk"),
    )
    access = Q(provider=Provider.LOCAL) & (Q(Exists(grant)) | Q(Exists(invite)))
    arm = (stage.config or {}).get("arm")
    if arm:  # an arm's stage: only its arm's workers (campaigns.workforce.arms)
        placed = CampaignWorker.objects.filter(
            campaign_id=stage.campaign_id, worker_id=OuterRef("pk"), arm=str(arm)
        )
        access &= Q(Exists(placed))
    for requirement in required_qualification_ids(stage=stage) if qualifications else []:
        held = QualificationGrant.objects.filter(
            qualification_type_id=requirement, worker_id=OuterRef("pk"), revoked_at__isnull=True
        )
        access &= Q(Exists(held))
    return access


def required_qualification_ids(*, stage: Stage) -> list[int]:
    """The qualification types ``stage`` requires (``campaigns.workforce.quizzes``)."""
    return stage_required_qualifications(stage=stage)


def worker_has_stage_access(*, worker: Worker, stage: Stage) -> bool:
    """Whether a local ``worker`` may see ``stage``'s work pages.

    A logged-in annotator needs a ``LocalGrant`` for the campaign; an invited
    worker needs the invite they joined through to be unrevoked and to cover the
    stage (an invite to one stage covers that stage only). ``assignment_accept``
    checks the same in SQL, in its locking statement.
    """
    if not (platform_for(stage.campaign).hosts_workforce and platform_for(worker).hosts_workforce):
        return False
    return Worker.objects.filter(worker_stage_access_q(stage=stage), pk=worker.pk).exists()


def stage_other_arm(*, stage: Stage, workers: RequestWorkers) -> str | None:
    """The protocol arm one of ``workers`` has in ``stage``'s campaign when the stage
    belongs to another arm (the worker may not take it: it is another group's task);
    None otherwise."""
    arm = str((stage.config or {}).get("arm") or "")
    found = request_workers_get(workers=workers) if arm else []
    if not found:
        return None
    arms = CampaignWorker.objects.filter(
        campaign_id=stage.campaign_id, worker__in=found
    ).exclude(arm="").values_list("arm", flat=True)
    return next((a for a in arms if a != arm), None)


def request_workers_get(*, workers: RequestWorkers) -> list[Worker]:
    """The local ``Worker`` rows of ``workers``: session order, then the account's."""
    if not workers:
        return []
    who = Q(pk__in=workers.worker_ids)
    if workers.user_id is not None:
        who |= Q(user_id=workers.user_id)
    found = list(Worker.objects.filter(who, provider=Provider.LOCAL))
    order = {pk: n for n, pk in enumerate(workers.worker_ids)}
    found.sort(key=lambda w: order.get(w.pk, len(order)))
    return found


def stage_worker(
    *, stage: Stage, workers: RequestWorkers, qualifications: bool = True
) -> Worker | None:
    """The first of ``workers`` (session order, then the account's) with access to
    ``stage``, or None; one query, none when the request speaks for nobody.
    ``qualifications=False``: the first let in by invitation or grant alone."""
    visit = stage_visit(stage=stage, workers=workers, qualifications=qualifications)
    return visit.worker if visit is not None else None


# Whether the worker row ``w`` may see a stage's pages, as ``worker_stage_access_q``
# without the qualifications (``assignment_accept`` reads it in its locking statement).
# Parameters: ``worker_access_params(stage)``.
WORKER_ACCESS_SQL = """(w.provider = %s AND (
     EXISTS (SELECT 1 FROM campaigns_localgrant g
             WHERE g.campaign_id = %s AND g.user_id = w.user_id)
     OR EXISTS (SELECT 1 FROM campaigns_invitelink l
                INNER JOIN campaigns_inviteredemption r ON r.invite_id = l.id
                WHERE r.worker_id = w.id AND l.campaign_id = %s AND l.revoked_at IS NULL
                  AND (l.stage_id IS NULL OR l.stage_id = %s)))
   AND (%s = '' OR EXISTS (SELECT 1 FROM campaigns_campaignworker cw
                           WHERE cw.campaign_id = %s AND cw.worker_id = w.id
                             AND cw.arm = %s)))"""
_QUALIFIED_SQL = """ AND EXISTS (SELECT 1 FROM campaigns_qualificationgrant q
  WHERE q.qualification_type_id = %s AND q.worker_id = w.id AND q.revoked_at IS NULL)"""
# The worker's accepted, unexpired assignment in a stage, as ``assignment_current``.
# Parameters: stage id, "accepted", now.
CURRENT_ASSIGNMENT_SQL = """(SELECT a.id FROM campaigns_assignment a
   INNER JOIN campaigns_hit h ON h.id = a.hit_id
   WHERE h.stage_id = %s AND a.worker_id = w.id AND a.status = %s
     AND (a.deadline IS NULL OR a.deadline > %s)
   ORDER BY a.accepted_at, a.id LIMIT 1)"""
# The first open HIT of a stage the worker holds no place on, as ``hits_open(...).first()``
# (and ``assignment_accept``'s pick). ``{stage}`` and ``{worker}``: a placeholder or the
# outer query's column; then parameters now and the 4 holding states (``_next_hit_params``).
# The status is written out: a prepared statement's generic plan can use the partial index
# ``hit_open_places`` only when the statement itself says "published".
_NEXT_HIT_SQL = f"""SELECT nh.id FROM campaigns_hit nh
  WHERE nh.stage_id = {{stage}} AND nh.status = '{HITStatus.PUBLISHED}' AND nh.places_left > 0
    AND (nh.expires_at IS NULL OR nh.expires_at > %s)
    AND NOT EXISTS (SELECT 1 FROM campaigns_assignment ah
                    WHERE ah.hit_id = nh.id AND ah.worker_id = {{worker}}
                      AND ah.status IN (%s, %s, %s, %s))
  ORDER BY nh.id LIMIT 1"""  # noqa: S608 - a constant, no input
assert len(ASSIGNMENT_HOLDING_STATES) == 4, "update the holding-state placeholders above"


def worker_access_params(stage: Stage) -> list[Any]:
    """The parameters of ``WORKER_ACCESS_SQL`` for ``stage``."""
    arm = str((stage.config or {}).get("arm") or "")
    campaign_id = stage.campaign_id
    return [Provider.LOCAL, campaign_id, campaign_id, stage.pk, arm, campaign_id, arm]


def _next_hit_simple(stage: Stage) -> bool:
    """Whether the next HIT for a worker is the first open one they hold no place on:
    no exclusive keys, nobody kept from their own work (else ``hit_next_available``)."""
    task_type = task_type_get(stage.task_type)
    return not task_type_has_exclusive_keys(task_type) and not stage_excludes_own_work(stage=stage)


def _next_hit_params(stage: Stage | None, now: datetime) -> list[Any]:
    """The parameters of ``_NEXT_HIT_SQL`` (``stage``: None when ``{stage}`` is a column)."""
    params = [connection.ops.adapt_datetimefield_value(now), *ASSIGNMENT_HOLDING_STATES]
    return params if stage is None else [stage.pk, *params]


@dataclass(frozen=True)
class StageVisit:
    """The stage page's reads about the request's worker, from one statement."""

    worker: Worker
    # Their accepted, unexpired assignment in the stage (``assignment_current``).
    current_id: int | None
    # The HIT ``hit_next_available`` gives them (read only when the stage is workable).
    next_hit_id: int | None


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
    required = required_qualification_ids(stage=stage) if qualifications else []
    columns = f"{worker_columns()}, {CURRENT_ASSIGNMENT_SQL}, {next_hit}"
    where = f"({' OR '.join(who)}) AND {WORKER_ACCESS_SQL}" + _QUALIFIED_SQL * len(required)
    sql = f"SELECT {columns} FROM campaigns_worker w WHERE {where}"  # noqa: S608 - no input
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
    if workable and not simple:
        next_hit_id = _hit_next_available_pk(stage=stage, worker=worker)
    return StageVisit(worker=worker, current_id=current_id, next_hit_id=next_hit_id)


def stage_entry_for_invite(
    *, invite: InviteLink, worker_ids: list[int] | None = None
) -> Stage | None:
    """Where an invite sends its workers: its stage, or the campaign's first stage that
    the worker's protocol arm includes (a shared stage, or one of their arm)."""
    if invite.stage_id is not None:
        return invite.stage
    arm = (
        CampaignWorker.objects.filter(
            campaign_id=invite.campaign_id, worker_id__in=worker_ids or []
        )
        .exclude(arm="")
        .values_list("arm", flat=True)
        .first()
    )
    for stage in invite.campaign.stages.order_by("position"):
        stage_arm = (stage.config or {}).get("arm")
        if not stage_arm or stage_arm == arm:
            return stage
    return None


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


# The data of the items a worker holds (or held to the end) in a stage. Parameters:
# stage id, worker id, the 4 holding states.
_HELD_ITEMS_DATA_SQL = """
SELECT i.data FROM campaigns_assignment a
INNER JOIN campaigns_hit h ON h.id = a.hit_id
INNER JOIN campaigns_hititem hi ON hi.hit_id = h.id
INNER JOIN campaigns_item i ON i.id = hi.item_id
WHERE h.stage_id = %s AND a.worker_id = %s AND a.status IN (%s, %s, %s, %s)
"""


def _json(data: Any) -> Any:
    """A JSON column's value as the ORM gives it (backends hand ``jsonb`` over as text)."""
    return json.loads(data) if isinstance(data, str | bytes) else data


def worker_exclusive_keys(*, stage: Stage, worker: Worker | int, task_type: TaskType) -> set[str]:
    """Exclusive keys of the items ``worker`` holds (or held to the end) in ``stage``.

    No query for task types without exclusive keys; one hand-written one otherwise.
    """
    if not task_type_has_exclusive_keys(task_type):
        return set()
    worker_id = worker if isinstance(worker, int) else worker.pk
    with connection.cursor() as cursor:
        prepared.execute(
            cursor, _HELD_ITEMS_DATA_SQL, [stage.pk, worker_id, *ASSIGNMENT_HOLDING_STATES]
        )
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
# those holding an item the worker produced). Parameters: stage id, now, worker id, the
# 4 holding states, [worker id,] the last id seen, how many.
_OPEN_AFTER_SQL = f"""SELECT h.id FROM campaigns_hit h
  WHERE h.stage_id = %s AND h.status = '{HITStatus.PUBLISHED}' AND h.places_left > 0
    AND (h.expires_at IS NULL OR h.expires_at > %s)
    AND NOT EXISTS (SELECT 1 FROM campaigns_assignment ah
                    WHERE ah.hit_id = h.id AND ah.worker_id = %s
                      AND ah.status IN (%s, %s, %s, %s))
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
        *ASSIGNMENT_HOLDING_STATES,
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


# The assignment with its HIT, stage and campaign, as the work page and the submission
# load it on every cycle. Hand-written: the ORM took 1 ms of CPU to build this join
# each time. Columns in each model's field order (``model_from_row`` checks the counts);
# then the holder's user id and provider, for the ownership check.
_ASSIGNMENT_FULL_SQL = """
SELECT a.id, a.hit_id, a.worker_id, a.provider, a.provider_assignment_id, a.status,
  a.answers, a.accepted_at, a.deadline, a.submitted_at, a.work_seconds, a.telemetry,
  a.decided_at, a.decided_by_id, a.decision_source, a.decision_reason, a.feedback,
  a.review_details,
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
# PostgreSQL: the HIT's items too, for ``hit_items`` (the page and the submission read
# them right after): one query fewer on each.
_ITEMS_COLUMN = """,
  (SELECT json_agg(json_build_array(hi.item_id, i.external_id, i.data) ORDER BY hi.position)
   FROM campaigns_hititem hi INNER JOIN campaigns_item i ON i.id = hi.item_id
   WHERE hi.hit_id = a.hit_id)::text"""
# The thank-you page: the HIT its worker would get next in the stage (``_NEXT_HIT_SQL``,
# the simple case), read with the assignment.
_NEXT_HIT_COLUMN = f",\n  ({_NEXT_HIT_SQL.format(stage='h.stage_id', worker='a.worker_id')})"
# The attribute of an assignment holding that HIT's id as ``assignment_load`` read it.
NEXT_HIT_PREFETCHED = "_next_hit_prefetched"
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
    return model.from_db(conn.alias, attnames, row)


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


def invite_list(*, campaign: Campaign) -> QuerySet[InviteLink]:
    """The campaign's invite links, newest first."""
    return campaign.invite_links.select_related("stage", "created_by").order_by("-created_at")


def stage_reward_shown(*, stage: Stage) -> bool:
    """Whether workers see a reward line for ``stage``: only when it pays something and the
    campaign's platform moves the money. Local workers are not paid through qaportal, so a
    reward there would promise money that never moves, unless the requester (who pays an
    in-house team some other way) chose to show it: ``show_reward_to_local_workers``."""
    if stage.reward <= 0:
        return False
    return platform_for(stage.campaign).pays_workers or stage.show_reward_to_local_workers


def hits_items(*, hit_ids: Collection[int]) -> dict[int, list[dict[str, Any]]]:
    """``hit_items`` of many HITs in one query: HIT id -> its items in order (every
    id of ``hit_ids`` is a key)."""
    found: dict[int, list[dict[str, Any]]] = {hit_id: [] for hit_id in hit_ids}
    rows = (
        HITItem.objects.filter(hit_id__in=found)
        .order_by("hit_id", "position")
        .values_list("hit_id", "item_id", "item__external_id", "item__data")
    )
    for hit_id, item_id, external_id, data in rows:
        found[hit_id].append({"id": item_id, "external_id": external_id, "data": data})
    return found
