"""Work on the local workforce: publish HITs, accept, submit, return, expire, review.

Locking, in the order it is taken (always this order, so no two requests wait
on each other in a cycle): campaign row (``campaign_start``) → stage row
(``stage_publish``) → worker row (``assignment_accept``) → one HIT row
(``assignment_accept``). Submit, return, expiry and review lock assignment rows;
return and expiry then update the HIT rows of the places they free. Nothing that
holds a HIT row waits on an assignment row, so the two orders cannot cross.

A HIT's free places are counted in ``HIT.places_left``: taken (-1) by
``assignment_accept``, given back (+1) by ``assignment_return`` and by expiry
(``assignments_expire``, or a submission that arrives too late), always in the
transaction that changes the assignment. Its CHECK constraint (never below 0)
and ``assignment_one_per_worker_per_hit`` back the allocation.

Paid providers (MTurk, Prolific) reuse publishing and submission; their review
decisions move money and go through provider operations in their own services.
"""

from __future__ import annotations

import logging
import zlib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction
from django.db.models import BooleanField, CharField, ExpressionWrapper, F, Q, Value
from django.db.models.functions import Cast, Concat
from django.utils import timezone

from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    Campaign,
    CampaignState,
    DetachedAnswer,
    HITItem,
    HITStatus,
    Item,
    ItemStatus,
    OperationKind,
    OperationState,
    Provider,
    ProviderOperation,
    Stage,
    Worker,
)
from campaigns.models.choices import ASSIGNMENT_HOLDING_STATES
from campaigns.selectors_work import (
    WORKABLE_STATES,
    RequestWorkers,
    assignment_load,
    hit_items,
    hits_conflicting,
    hits_open,
    worker_exclusive_keys,
)
from campaigns.services.campaigns import campaign_transition
from campaigns.services.errors import DomainError
from campaigns.tasktypes import FieldError, TaskType, task_type_get
from linking import hooks as linking_hooks
from validation.gold import gold_mix_order
from validation.triggers import needs_review_after_submit

logger = logging.getLogger(__name__)

DECIDED_STATES = (AssignmentStatus.APPROVED, AssignmentStatus.REJECTED)
STORED_STATES = (AssignmentStatus.SUBMITTED, *DECIDED_STATES)
# How many open HITs ``assignment_accept`` reads per query while it skips HITs whose
# exclusive keys the worker already holds.
_CANDIDATE_BATCH = 100
# Rows per INSERT when publishing.
_PUBLISH_BATCH = 1000


class NoWorkAvailableError(DomainError):
    """Nothing this worker may take in this stage right now."""

    code = "no_work"


class WorkerNotAllowedError(DomainError):
    """The worker may not work on this stage (no access, or blocked)."""

    code = "not_allowed"


class WorkerNoAccessError(WorkerNotAllowedError):
    """The worker has no access to the stage (no grant, no covering invite)."""


class AssignmentClosedError(DomainError):
    """The assignment can no longer be submitted (returned, expired, abandoned).

    ``assignment`` is the closed assignment as loaded, when the service had it.
    """

    code = "assignment_closed"
    assignment: Assignment | None = None


# --- Publishing ------------------------------------------------------------------


def stage_publish(*, stage: Stage, allow_partial: bool = True) -> int:
    """Put the stage's pending items into HITs, in item order with gold mixed in;
    returns the HITs made.

    Gold items (``Item.gold`` set) are spread through the regular ones by
    ``validation.gold.gold_mix_order`` at ``stage.gold_ratio`` (seeded by the
    campaign, the stage's position and its first pending item's external id, so the
    same upload is mixed alike): a worker cannot tell gold by its position. Gold
    reused to reach the ratio appears at most once per HIT; gold beyond the ratio
    stays pending for the next publication, as does gold with no regular item to
    mix into. A ratio of 0 (or 1: every item gold)
    publishes every pending item in item order.

    ``items_per_hit`` items per HIT; with ``allow_partial`` False a trailing
    group smaller than that stays pending (the hand-off uses this, so that one
    approval does not publish a one-item HIT paying a full reward). On the local
    provider the HITs are published at once (``provider_hit_id`` "local-<pk>");
    on paid providers they stay ``pending`` for their provider to publish.

    Locks the stage row: two publications of a stage are serialised, so an item
    lands in one HIT only. A handful of queries whatever the number of HITs: the
    HITs and their HITItems go in by bulk INSERTs, local HITs get their
    ``provider_hit_id`` in one UPDATE. Each HIT starts with ``places_left`` =
    ``max_assignments``.
    """
    with transaction.atomic():
        stage = Stage.objects.select_for_update().select_related("campaign").get(pk=stage.pk)
        campaign = stage.campaign
        pending = list(
            Item.objects.filter(stage=stage, status=ItemStatus.PENDING)
            .order_by("id")
            .values_list(
                "pk",
                ExpressionWrapper(Q(gold__isnull=False), output_field=BooleanField()),
                "external_id",
            )
        )
        items = _publish_order(stage=stage, pending=pending)
        groups = _hit_groups(items, size=stage.items_per_hit)
        if groups and not allow_partial and len(groups[-1]) < stage.items_per_hit:
            groups.pop()
        if not groups:
            return 0
        now = timezone.now()
        local = campaign.provider == Provider.LOCAL
        hits = HIT.objects.bulk_create(
            [
                HIT(
                    stage=stage,
                    provider=campaign.provider,
                    max_assignments=stage.assignments_per_hit,
                    places_left=stage.assignments_per_hit,
                    reward=stage.reward,
                    status=HITStatus.PUBLISHED if local else HITStatus.PENDING,
                    published_at=now if local else None,
                    expires_at=now + stage.lifetime,
                )
                for _ in groups
            ],
            batch_size=_PUBLISH_BATCH,
        )
        hit_ids = [hit.pk for hit in hits]
        if local:
            HIT.objects.filter(pk__in=hit_ids).update(
                provider_hit_id=Concat(Value("local-"), Cast("id", output_field=CharField()))
            )
        HITItem.objects.bulk_create(
            (
                HITItem(hit_id=hit_id, item_id=item_id, position=pos)
                for hit_id, group in zip(hit_ids, groups, strict=True)
                for pos, item_id in enumerate(group)
            ),
            batch_size=_PUBLISH_BATCH,
        )
        Item.objects.filter(pk__in=[i for group in groups for i in group]).update(
            status=ItemStatus.PUBLISHED
        )
    # Linking stages get spans and Wikidata candidates ready before workers arrive.
    linking_hooks.stage_published(stage=stage)
    logger.info("stage %s: published %d HITs", stage.pk, len(groups))
    return len(groups)


def _publish_order(*, stage: Stage, pending: list[tuple[int, bool, str]]) -> list[int]:
    """Pending item ids (``(id, is gold, external id)`` in id order) in publishing order."""
    ratio = float(stage.gold_ratio)
    if not 0 < ratio < 1 or not pending:
        return [pk for pk, *_ in pending]
    regular = [pk for pk, is_gold, _ in pending if not is_gold]
    gold = [pk for pk, is_gold, _ in pending if is_gold]
    # From what the requester uploaded, not from row ids: the same upload mixes alike.
    seed = zlib.crc32(f"{stage.campaign.slug}/{stage.position}/{pending[0][2]}".encode())
    return gold_mix_order(regular, gold, ratio=ratio, seed=seed)


def _hit_groups(items: list[int], *, size: int) -> list[list[int]]:
    """``items`` cut into HITs of ``size``; an id already in the HIT being filled (gold
    reused by the mix) is skipped there, as a HIT holds an item once."""
    groups: list[list[int]] = []
    current: list[int] = []
    for item_id in items:
        if item_id in current:
            continue
        current.append(item_id)
        if len(current) == size:
            groups.append(current)
            current = []
    if current:
        groups.append(current)
    return groups


def campaign_publish(*, campaign: Campaign) -> int:
    """Publish every stage of ``campaign`` that has pending items; returns the HITs made.

    Locks each stage row in turn (see ``stage_publish``).
    """
    total = 0
    stages = Stage.objects.filter(campaign=campaign, items__status=ItemStatus.PENDING).distinct()
    for stage in stages.order_by("position"):
        total += stage_publish(stage=stage)
    return total


def campaign_start(*, campaign: Campaign, to_state: str) -> Campaign:
    """Move ``campaign`` to ``to_state``; entering pilot/live publishes its pending work.

    Local campaigns publish at once; Prolific campaigns ask for one study per stage
    with pending items (``stage_provider_publish``, which checks the budget), and
    their studies are paused, resumed and stopped with the campaign. The transition
    locks the campaign row (``campaign_transition``); publishing happens in the same
    transaction, so a refusal (budget) leaves the campaign where it was.
    """
    with transaction.atomic():
        previous = (
            Campaign.objects.select_for_update().values_list("state", flat=True).get(pk=campaign.pk)
        )
        campaign = campaign_transition(campaign=campaign, to_state=to_state)
        if campaign.provider == Provider.PROLIFIC:
            _prolific_follow(campaign=campaign, previous=previous, to_state=to_state)
        if to_state in WORKABLE_STATES:
            if campaign.provider == Provider.LOCAL:
                campaign_publish(campaign=campaign)
            elif campaign.provider == Provider.PROLIFIC:
                # Imported here: provider_sync imports this module.
                from campaigns.services.provider_sync import stage_provider_publish

                for stage in campaign.stages.filter(items__status=ItemStatus.PENDING).distinct():
                    stage_provider_publish(stage=stage)
    return campaign


def _prolific_follow(*, campaign: Campaign, previous: str, to_state: str) -> None:
    """The campaign's studies follow its state: paused, resumed, stopped (operations)."""
    from campaigns.services.provider_sync import (
        campaign_provider_pause,
        campaign_provider_resume,
        campaign_provider_stop,
    )

    if to_state == CampaignState.PAUSED:
        campaign_provider_pause(campaign=campaign)
    elif to_state == CampaignState.COMPLETED:
        campaign_provider_stop(campaign=campaign)
    elif previous == CampaignState.PAUSED and to_state in WORKABLE_STATES:
        campaign_provider_resume(campaign=campaign)


# --- Accepting work ----------------------------------------------------------------


# The statements every accept runs, in SQL: the ORM takes longer to build them than
# PostgreSQL takes to run them (bench/README.md). Tables are the models' db_table.
# Parameters: stage id, "published", now, worker id, the 4 holding states.
_HIT_TAKE_SQL = """
UPDATE campaigns_hit SET places_left = places_left - 1 WHERE id = (
  SELECT h.id FROM campaigns_hit h
  WHERE h.stage_id = %s AND h.status = %s AND h.places_left > 0
    AND (h.expires_at IS NULL OR h.expires_at > %s)
    AND NOT EXISTS (SELECT 1 FROM campaigns_assignment a
                    WHERE a.hit_id = h.id AND a.worker_id = %s
                      AND a.status IN (%s, %s, %s, %s))
  ORDER BY h.id LIMIT 1 FOR UPDATE SKIP LOCKED
) RETURNING id, provider
"""
_HIT_TAKE_WAITING_SQL = _HIT_TAKE_SQL.replace("SKIP LOCKED", "")
# Other databases (SQLite serialises writers): pick, then update.
_HIT_PICK_SQL = """
SELECT h.id, h.provider FROM campaigns_hit h
WHERE h.stage_id = %s AND h.status = %s AND h.places_left > 0
  AND (h.expires_at IS NULL OR h.expires_at > %s)
  AND NOT EXISTS (SELECT 1 FROM campaigns_assignment a
                  WHERE a.hit_id = h.id AND a.worker_id = %s
                    AND a.status IN (%s, %s, %s, %s))
ORDER BY h.id LIMIT 1
"""
# Parameters: campaign id; "local", campaign id, campaign id, stage id (access, as
# ``worker_has_stage_access``); the campaign owner's id (blocks); stage id, "accepted",
# now (current assignment); worker id.
_ACCEPT_CHECKS_SQL = """
SELECT
  (SELECT c.state FROM campaigns_campaign c WHERE c.id = %s),
  (w.provider = %s AND (
     EXISTS (SELECT 1 FROM campaigns_localgrant g
             WHERE g.campaign_id = %s AND g.user_id = w.user_id)
     OR EXISTS (SELECT 1 FROM campaigns_invitelink l
                INNER JOIN campaigns_inviteredemption r ON r.invite_id = l.id
                WHERE r.worker_id = w.id AND l.campaign_id = %s AND l.revoked_at IS NULL
                  AND (l.stage_id IS NULL OR l.stage_id = %s)))),
  EXISTS (SELECT 1 FROM campaigns_workerblock b
          WHERE b.requester_id = %s AND b.worker_id = w.id AND b.lifted_at IS NULL),
  (SELECT a.id FROM campaigns_assignment a INNER JOIN campaigns_hit h ON h.id = a.hit_id
   WHERE h.stage_id = %s AND a.worker_id = w.id AND a.status = %s
     AND (a.deadline IS NULL OR a.deadline > %s)
   ORDER BY a.accepted_at, a.id LIMIT 1)
FROM campaigns_worker w WHERE w.id = %s
"""
assert len(ASSIGNMENT_HOLDING_STATES) == 4, "update the holding-state placeholders above"


def _hit_take(*, stage: Stage, worker_id: int, now: datetime, wait: bool) -> tuple[int, str] | None:
    """Take a place on the first open HIT of ``stage`` that ``worker_id`` may take:
    its (id, provider), or None. Call inside the allocation's transaction.

    One statement on PostgreSQL: ``UPDATE … SET places_left = places_left - 1
    WHERE id = (SELECT … ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING …``,
    through the partial index ``hit_open_places``. Without ``wait``, HITs other
    allocations have locked are skipped; with it, the statement waits for the first
    of them, and PostgreSQL re-checks the row (``places_left > 0``) once it is
    released, moving on to the next when it is full.
    """
    params: list[Any] = [
        stage.pk,
        HITStatus.PUBLISHED,
        connection.ops.adapt_datetimefield_value(now),
        worker_id,
        *ASSIGNMENT_HOLDING_STATES,
    ]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(_HIT_TAKE_WAITING_SQL if wait else _HIT_TAKE_SQL, params)
            row = cursor.fetchone()
        else:
            cursor.execute(_HIT_PICK_SQL, params)
            row = cursor.fetchone()
            if row is not None:
                HIT.objects.filter(pk=row[0]).update(places_left=F("places_left") - 1)
    return (row[0], row[1]) if row else None


def _hit_take_among(
    *, stage: Stage, worker_id: int, now: datetime, wait: bool, among: list[int]
) -> tuple[int, str] | None:
    """``_hit_take`` restricted to the HITs ``among`` (exclusive keys; not the hot path)."""
    skip_locked = not wait and connection.features.has_select_for_update_skip_locked
    row = (
        hits_open(stage=stage, worker=worker_id, now=now)
        .filter(pk__in=among)
        .select_for_update(skip_locked=skip_locked)
        .values_list("pk", "provider")
        .first()
    )
    if row is not None:
        HIT.objects.filter(pk=row[0]).update(places_left=F("places_left") - 1)
    return row


def hit_take_allowed(
    *, stage: Stage, worker: Worker, task_type: TaskType, now: datetime
) -> tuple[int, str] | None:
    """``_hit_take`` honouring exclusive keys: leaves out HITs holding an item whose
    key ``worker`` already holds in the stage. Waits only when every allowed HIT
    was locked by another allocation."""
    can_skip = connection.features.has_select_for_update_skip_locked
    taken = worker_exclusive_keys(stage=stage, worker=worker, task_type=task_type)
    if not taken:
        hit = _hit_take(stage=stage, worker_id=worker.pk, now=now, wait=False)
        if hit is None and can_skip:
            hit = _hit_take(stage=stage, worker_id=worker.pk, now=now, wait=True)
        return hit
    allowed: list[int] = []
    last_id = 0
    while True:
        batch = list(
            hits_open(stage=stage, worker=worker.pk, now=now)
            .filter(pk__gt=last_id)
            .values_list("pk", flat=True)[:_CANDIDATE_BATCH]
        )
        conflicting = hits_conflicting(hit_ids=batch, task_type=task_type, taken=taken)
        free = [pk for pk in batch if pk not in conflicting]
        if free:
            hit = _hit_take_among(stage=stage, worker_id=worker.pk, now=now, wait=False, among=free)
            if hit is not None:
                return hit
            allowed += free
        if len(batch) < _CANDIDATE_BATCH:
            break
        last_id = batch[-1]
    if allowed and can_skip:
        return _hit_take_among(stage=stage, worker_id=worker.pk, now=now, wait=True, among=allowed)
    return None


def _accept_checks(
    *, stage: Stage, worker_id: int, now: datetime
) -> tuple[str | None, bool, bool, int | None]:
    """Lock the worker row and read, in the same statement: the campaign state, whether
    the worker has access to the stage (as ``worker_has_stage_access``), whether the
    campaign's owner blocks them, and their current assignment in the stage."""
    campaign = stage.campaign
    params: list[Any] = [
        stage.campaign_id,
        Provider.LOCAL,
        stage.campaign_id,
        stage.campaign_id,
        stage.pk,
        campaign.owner_id,
        stage.pk,
        AssignmentStatus.ACCEPTED,
        connection.ops.adapt_datetimefield_value(now),
        worker_id,
    ]
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    with connection.cursor() as cursor:
        cursor.execute(_ACCEPT_CHECKS_SQL + lock, params)
        row = cursor.fetchone()
    if row is None:
        raise Worker.DoesNotExist("No such worker.")
    has_access = campaign.provider == Provider.LOCAL and bool(row[1])
    return row[0], has_access, bool(row[2]), row[3]


def assignment_accept(*, stage: Stage, worker: Worker) -> Assignment:
    """Give ``worker`` a place on the first open HIT of ``stage`` they may take.

    Returns the worker's current (accepted, unexpired) assignment in the stage if
    there is one. Honours the task type's exclusive keys (at most one HIT per key
    per worker in the stage), requester blocks and the campaign state. Raises
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
    with transaction.atomic():
        state, has_access, blocked, current_id = _accept_checks(
            stage=stage, worker_id=worker.pk, now=now
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
        task_type = task_type_get(stage.task_type)
        taken = hit_take_allowed(stage=stage, worker=worker, task_type=task_type, now=now)
        if taken is not None:
            hit_id, provider = taken
            return Assignment.objects.create(
                hit_id=hit_id,
                worker_id=worker.pk,
                provider=provider,
                status=AssignmentStatus.ACCEPTED,
                accepted_at=now,
                deadline=now + stage.assignment_duration,
            )
    raise NoWorkAvailableError("There is no task left for you in this stage. Thank you!")


# --- Submitting ----------------------------------------------------------------------

TELEMETRY_MAX_PASTES = 100
TELEMETRY_MAX_COUNT = 1_000_000
TELEMETRY_MAX_MS = 7 * 24 * 3600 * 1000


def _clamp_int(value: Any, *, high: int) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return max(0, min(int(value), high))


def telemetry_sanitise(raw: Any) -> dict[str, Any]:
    """Keep only the known page telemetry, as bounded numbers: what a browser sends is a claim.

    Fields: ``keystrokes``, ``pastes`` (list of ``{"field", "length"}``),
    ``focus_losses``, ``visibility_changes``, ``first_input_ms``, ``page_ms``.
    """
    if not isinstance(raw, Mapping):
        return {}
    out: dict[str, Any] = {}
    for key in ("keystrokes", "focus_losses", "visibility_changes"):
        value = _clamp_int(raw.get(key), high=TELEMETRY_MAX_COUNT)
        if value is not None:
            out[key] = value
    for key in ("first_input_ms", "page_ms"):
        value = _clamp_int(raw.get(key), high=TELEMETRY_MAX_MS)
        if value is not None:
            out[key] = value
    pastes = raw.get("pastes")
    if isinstance(pastes, list):
        kept = []
        for paste in pastes[:TELEMETRY_MAX_PASTES]:
            if not isinstance(paste, Mapping):
                continue
            length = _clamp_int(paste.get("length"), high=TELEMETRY_MAX_COUNT)
            name = paste.get("field")
            kept.append(
                {
                    "field": name[:100] if isinstance(name, str) else "",
                    "length": length or 0,
                }
            )
        out["pastes"] = kept
        out["paste_count"] = min(len(pastes), TELEMETRY_MAX_COUNT)
    return out


@dataclass
class SubmitResult:
    """What became of a submission.

    ``stored``: the assignment holds a submission (this one, or an earlier one
    when ``replay``). When not stored, ``errors`` ({path: message}) and the
    parsed ``answer`` let the page come back with the worker's text.
    """

    assignment: Assignment
    stored: bool
    replay: bool = False
    answer: dict[str, Any] | None = None
    errors: dict[str, str] = field(default_factory=dict)


def _errors_by_path(errors: list[FieldError]) -> dict[str, str]:
    out: dict[str, str] = {}
    for error in errors:
        out[error.path] = (
            f"{out[error.path]} {error.message}" if error.path in out else error.message
        )
    return out


def assignment_submit(
    *, assignment_id: int, worker: Worker, form: Mapping[str, Any], telemetry: Any
) -> SubmitResult:
    """Store ``worker``'s answer to the assignment, exactly once.

    A second submission (double click, resent POST, a second tab) gets the stored
    result and writes nothing. An invalid answer stores nothing and comes back
    with its errors. A returned or expired assignment raises ``AssignmentClosedError``;
    one past its deadline is expired here (its place goes back to the HIT).
    ``Assignment.DoesNotExist`` if the worker does not hold it. Work time is
    measured on the server, accept to submit. Stages whose review rules hold
    ``{"rule": "auto_approve"}`` approve at once.

    Locking: the assignment row, for the whole check-and-store.
    """
    return _submission_store(
        assignment_id=assignment_id,
        workers=RequestWorkers(worker_ids=(worker.pk,)),
        form=form,
        telemetry=telemetry,
    )


def assignment_submit_for_workers(
    *, assignment_id: int, workers: RequestWorkers, form: Mapping[str, Any], telemetry: Any
) -> SubmitResult:
    """``assignment_submit`` for a request that speaks for several workers (the local
    worker pages: the session's invited workers and the account's worker), without
    loading them: ``Assignment.DoesNotExist`` unless one of them holds it.

    One locked SELECT both checks who holds the assignment and locks it.
    """
    return _submission_store(
        assignment_id=assignment_id, workers=workers, form=form, telemetry=telemetry
    )


def _closed(assignment: Assignment) -> AssignmentClosedError:
    messages: dict[str, str] = {
        AssignmentStatus.EXPIRED: "The time for this task ran out; it has gone back to the pool.",
        AssignmentStatus.RETURNED: "You returned this task; it can no longer be submitted.",
    }
    error = AssignmentClosedError(
        messages.get(assignment.status, "This task can no longer be submitted."),
        errors={"status": [assignment.status]},
    )
    error.assignment = assignment
    return error


def _submission_store(
    *, assignment_id: int, workers: RequestWorkers, form: Mapping[str, Any], telemetry: Any
) -> SubmitResult:
    closed: Assignment | None = None
    with transaction.atomic():
        assignment = assignment_load(assignment_id=assignment_id, workers=workers, lock=True)
        if assignment.status in STORED_STATES:
            return SubmitResult(
                assignment=assignment, stored=True, replay=True, answer=assignment.answers
            )
        now = timezone.now()
        if assignment.status == AssignmentStatus.ACCEPTED and (
            assignment.deadline is not None and assignment.deadline <= now
        ):
            assignment.status = AssignmentStatus.EXPIRED
            assignment.save(update_fields=["status"])
            _places_free({assignment.hit_id: 1})
        if assignment.status != AssignmentStatus.ACCEPTED:
            closed = assignment
        else:
            stage = assignment.hit.stage
            task_type = task_type_get(stage.task_type)
            items = hit_items(hit=assignment.hit)
            answer = task_type.parse_form(form=form, items=items, config=stage.config)
            problems = task_type.validate_answer(answer=answer, items=items, config=stage.config)
            if problems:
                return SubmitResult(
                    assignment=assignment,
                    stored=False,
                    answer=answer,
                    errors=_errors_by_path(problems),
                )
            if task_type.detaches_answers(config=stage.config):
                DetachedAnswer.objects.create(stage=stage, answers=answer, submitted_on=now.date())
                answer = {"detached": True}
            stored = {
                "answers": answer,
                "status": AssignmentStatus.SUBMITTED,
                "submitted_at": now,
                "work_seconds": max(0, int((now - assignment.accepted_at).total_seconds())),
                "telemetry": telemetry_sanitise(telemetry),
            }
            # An UPDATE of the locked row (cheaper to build than Model.save; no signals
            # are used on assignments).
            Assignment.objects.filter(pk=assignment.pk).update(**stored)
            for name, value in stored.items():
                setattr(assignment, name, value)
            Worker.objects.filter(pk=assignment.worker_id).update(
                submitted_count=F("submitted_count") + 1
            )
            if _auto_approves(stage) and assignment.provider == Provider.LOCAL:
                assignment = assignment_approve(
                    assignment=assignment, source="rule:auto_approve", reason="auto_approve rule"
                )
            if needs_review_after_submit(stage.review_rules, stage.escalation_rule):
                # Imported here: validation's tasks import these services.
                from validation.tasks import review_submission_task

                review_submission_task.delay_on_commit(assignment.pk)
            linking_hooks.answer_stored(stage=stage, hit_id=assignment.hit_id)
            return SubmitResult(assignment=assignment, stored=True, answer=answer)
    # Raised outside the transaction: the expiry above is kept.
    assert closed is not None
    raise _closed(closed)


def _auto_approves(stage: Stage) -> bool:
    return any(
        isinstance(rule, Mapping) and rule.get("rule") == "auto_approve"
        for rule in stage.review_rules or []
    )


# --- More places on a HIT ------------------------------------------------------------


def hit_add_assignments(*, hit: HIT, count: int = 1, reason: str, key: str) -> HIT:
    """Add ``count`` places to a published HIT (escalation, early-stopping extension).

    Idempotent per ``key`` (say ``escalate:item:42:3``): the request is written as a
    ``ProviderOperation`` (kind ``add_assignments``) whose (provider, key) is
    unique, so asking twice adds the places once. On the local workforce the
    places open at once and the operation is done; on a paid provider it stays
    pending for the provider's executor, and the places open when it is done.

    Locking: the HIT row (after no other lock of this module, so any order is safe).
    """
    if count < 1:
        raise DomainError("Add at least one assignment.", errors={"count": ["must be >= 1"]})
    with transaction.atomic():
        locked = HIT.objects.select_for_update().select_related("stage").get(pk=hit.pk)
        local = locked.provider == Provider.LOCAL
        if not local:
            # Imported here: operations imports this module's neighbours.
            from campaigns.services.operations import operation_request

            operation_request(
                provider=locked.provider,
                kind=OperationKind.ADD_ASSIGNMENTS,
                key=key,
                payload={
                    "hit_id": locked.pk,
                    "count": count,
                    "reason": reason,
                    "study_id": locked.provider_group_id,
                },
                campaign=locked.stage.campaign,
            )
            return locked
        operation, created = ProviderOperation.objects.get_or_create(
            provider=locked.provider,
            idempotency_key=key,
            defaults={
                "kind": OperationKind.ADD_ASSIGNMENTS,
                "campaign_id": locked.stage.campaign_id,
                "payload": {"hit_id": locked.pk, "count": count, "reason": reason},
                "state": OperationState.DONE,
            },
        )
        if not created:
            return locked
        locked.max_assignments += count
        locked.places_left += count
        if locked.status == HITStatus.COMPLETED:
            locked.status = HITStatus.PUBLISHED
        locked.save(update_fields=["max_assignments", "places_left", "status"])
        operation.result = {"max_assignments": locked.max_assignments}
        operation.completed_at = timezone.now()
        operation.save(update_fields=["result", "completed_at", "updated_at"])
    logger.info("HIT %s: %d more place(s) (%s)", locked.pk, count, reason)
    return locked


# --- Returning and expiry ------------------------------------------------------------


def _places_free(freed: Mapping[int, int]) -> None:
    """Give ``freed[hit_id]`` places back to each HIT (one UPDATE per distinct count).

    Call in the transaction that moved the assignments out of a holding state.
    """
    by_count: dict[int, list[int]] = {}
    for hit_id, count in sorted(freed.items()):
        by_count.setdefault(count, []).append(hit_id)
    for count, hit_ids in by_count.items():
        HIT.objects.filter(pk__in=hit_ids).update(places_left=F("places_left") + count)


def assignment_return(*, assignment_id: int, worker: Worker) -> Assignment:
    """The worker gives the assignment back; its place frees up. Idempotent.

    ``Assignment.DoesNotExist`` if the worker does not hold it; ``AssignmentClosedError``
    once it is submitted. Locking: the assignment row, then its HIT row (``places_left + 1``).
    """
    with transaction.atomic():
        assignment = Assignment.objects.select_for_update().get(pk=assignment_id, worker=worker)
        if assignment.status == AssignmentStatus.RETURNED:
            return assignment
        if assignment.status != AssignmentStatus.ACCEPTED:
            raise AssignmentClosedError(
                "This task was already submitted or closed; it cannot be returned.",
                errors={"status": [assignment.status]},
            )
        assignment.status = AssignmentStatus.RETURNED
        assignment.save(update_fields=["status"])
        _places_free({assignment.hit_id: 1})
    return assignment


def assignments_expire(*, now: Any = None) -> int:
    """Expire accepted assignments past their deadline (their places free up); the count.

    Idempotent. Locking: the expired assignment rows (in id order), then their HIT
    rows (``places_left`` + the places freed). The locking SELECT waits for a row a
    concurrent submit or return holds and re-checks its status once it is
    released, so a just-submitted or returned assignment is never expired.
    """
    now = now or timezone.now()
    with transaction.atomic():
        rows = list(
            Assignment.objects.select_for_update()
            .filter(status=AssignmentStatus.ACCEPTED, deadline__isnull=False, deadline__lte=now)
            .order_by("pk")
            .values_list("pk", "hit_id")
        )
        if not rows:
            return 0
        Assignment.objects.filter(pk__in=[pk for pk, _ in rows]).update(
            status=AssignmentStatus.EXPIRED
        )
        _places_free(Counter(hit_id for _, hit_id in rows))
    return len(rows)


# --- Review decisions (local provider: no money moves) -------------------------------


def _check_local_review(assignment: Assignment) -> None:
    if assignment.provider != Provider.LOCAL:
        raise DomainError(
            f"Assignments on {assignment.provider!r} are reviewed through their provider, "
            "which pays the worker; this service decides local assignments only.",
            errors={"provider": [assignment.provider]},
        )


def _decide(
    *,
    assignment: Assignment,
    status: str,
    decided_by: AbstractBaseUser | None,
    source: str,
    reason: str,
    feedback: str = "",
) -> tuple[Assignment, bool]:
    """Lock and record a decision; returns (assignment, changed). Same decision twice: no-op."""
    _check_local_review(assignment)
    locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
    if locked.status == status:
        return locked, False
    if locked.status != AssignmentStatus.SUBMITTED:
        raise DomainError(
            f"Only a submitted assignment can be decided; this one is {locked.status!r}.",
            errors={"status": [locked.status]},
        )
    locked.status = status
    locked.decided_at = timezone.now()
    locked.decided_by = decided_by  # type: ignore[assignment]
    locked.decision_source = source[:80]
    locked.decision_reason = reason
    locked.feedback = feedback
    locked.save(
        update_fields=[
            "status",
            "decided_at",
            "decided_by",
            "decision_source",
            "decision_reason",
            "feedback",
        ]
    )
    counter = "approved_count" if status == AssignmentStatus.APPROVED else "rejected_count"
    Worker.objects.filter(pk=locked.worker_id).update(**{counter: F(counter) + 1})
    return locked, True


def assignment_approve(
    *,
    assignment: Assignment,
    decided_by: AbstractBaseUser | None = None,
    source: str,
    reason: str = "",
) -> Assignment:
    """Approve a submitted assignment and hand its answer on to the next stage.

    ``source`` says what decided ("requester", "rule:auto_approve", …). Idempotent:
    approving twice changes nothing and hands off once. The hand-off runs in the
    Celery task ``campaigns.handoff_run``, enqueued after commit. On a paid
    provider the approval (and payment) is a provider operation
    (``paid_assignment_approve``): the assignment turns approved, and hands off,
    when the platform has done it.
    Locking: the assignment row.
    """
    if assignment.provider != Provider.LOCAL:
        from campaigns.services.provider_review import paid_assignment_approve

        paid_assignment_approve(
            assignment=assignment, decided_by=decided_by, source=source, reason=reason
        )
        assignment.refresh_from_db()
        return assignment
    with transaction.atomic():
        decided, changed = _decide(
            assignment=assignment,
            status=AssignmentStatus.APPROVED,
            decided_by=decided_by,
            source=source,
            reason=reason,
        )
        if changed:
            # Imported here: the task module imports the services.
            from campaigns.tasks import handoff_run_task

            handoff_run_task.delay_on_commit(decided.pk)
    return decided


def assignment_reject(
    *,
    assignment: Assignment,
    decided_by: AbstractBaseUser | None,
    source: str,
    reason: str,
    feedback: str = "",
) -> Assignment:
    """Reject a submitted local assignment, saying why (``reason``) and, optionally,
    what the worker should hear (``feedback``). Idempotent. Locking: the assignment row.
    """
    if not reason.strip():
        raise DomainError("A rejection needs a reason.", errors={"reason": ["required"]})
    if assignment.provider != Provider.LOCAL:
        from campaigns.services.provider_review import paid_assignment_reject

        paid_assignment_reject(
            assignment=assignment,
            decided_by=decided_by,
            source=source,
            reason=reason,
            feedback=feedback,
        )
        assignment.refresh_from_db()
        return assignment
    with transaction.atomic():
        decided, _ = _decide(
            assignment=assignment,
            status=AssignmentStatus.REJECTED,
            decided_by=decided_by,
            source=source,
            reason=reason,
            feedback=feedback,
        )
    return decided


__all__ = [
    "AssignmentClosedError",
    "NoWorkAvailableError",
    "SubmitResult",
    "WorkerNoAccessError",
    "WorkerNotAllowedError",
    "assignment_accept",
    "assignment_approve",
    "assignment_reject",
    "assignment_return",
    "assignment_submit",
    "assignment_submit_for_workers",
    "assignments_expire",
    "campaign_publish",
    "campaign_start",
    "stage_publish",
    "telemetry_sanitise",
]
