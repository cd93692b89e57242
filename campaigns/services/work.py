"""Work on the local workforce: publish HITs, accept, submit, return, expire, review.

Locking, in the order it is taken (always this order, so no two requests wait
on each other in a cycle): campaign row (``campaign_start``) → stage row
(``stage_publish``) → worker row (``assignment_accept``) → one HIT row at a
time (``assignment_accept``) → assignment row (submit, return, review).

Paid providers (MTurk, Prolific) reuse publishing and submission; their review
decisions move money and go through provider operations in their own services.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    Campaign,
    DetachedAnswer,
    HITItem,
    HITStatus,
    Item,
    ItemStatus,
    Provider,
    Stage,
    Worker,
)
from campaigns.models.choices import ASSIGNMENT_HOLDING_STATES
from campaigns.selectors_work import (
    WORKABLE_STATES,
    assignment_current,
    hit_items,
    hits_conflicting,
    hits_open,
    worker_exclusive_keys,
    worker_has_stage_access,
    worker_is_blocked,
)
from campaigns.services.campaigns import campaign_transition
from campaigns.services.errors import DomainError
from campaigns.tasktypes import FieldError, task_type_get

logger = logging.getLogger(__name__)

DECIDED_STATES = (AssignmentStatus.APPROVED, AssignmentStatus.REJECTED)
STORED_STATES = (AssignmentStatus.SUBMITTED, *DECIDED_STATES)
# How many open HITs ``assignment_accept`` reads per query while looking for one.
_CANDIDATE_BATCH = 100


class NoWorkAvailableError(DomainError):
    """Nothing this worker may take in this stage right now."""

    code = "no_work"


class WorkerNotAllowedError(DomainError):
    """The worker may not work on this stage (no access, or blocked)."""

    code = "not_allowed"


class AssignmentClosedError(DomainError):
    """The assignment can no longer be submitted (returned, expired, abandoned)."""

    code = "assignment_closed"


# --- Publishing ------------------------------------------------------------------


def stage_publish(*, stage: Stage, allow_partial: bool = True) -> int:
    """Put the stage's pending items into HITs, in item order; returns the HITs made.

    ``items_per_hit`` items per HIT; with ``allow_partial`` False a trailing
    group smaller than that stays pending (the hand-off uses this, so that one
    approval does not publish a one-item HIT paying a full reward). On the local
    provider the HITs are published at once (``provider_hit_id`` "local-<pk>");
    on paid providers they stay ``pending`` for their provider to publish.

    Locks the stage row: two publications of a stage are serialised, so an item
    lands in one HIT only.
    """
    with transaction.atomic():
        stage = Stage.objects.select_for_update().select_related("campaign").get(pk=stage.pk)
        campaign = stage.campaign
        items = list(
            Item.objects.filter(stage=stage, status=ItemStatus.PENDING)
            .order_by("id")
            .values_list("pk", flat=True)
        )
        size = stage.items_per_hit
        groups = [items[i : i + size] for i in range(0, len(items), size)]
        if groups and not allow_partial and len(groups[-1]) < size:
            groups.pop()
        if not groups:
            return 0
        now = timezone.now()
        local = campaign.provider == Provider.LOCAL
        for group in groups:
            hit = HIT.objects.create(
                stage=stage,
                provider=campaign.provider,
                max_assignments=stage.assignments_per_hit,
                reward=stage.reward,
                status=HITStatus.PUBLISHED if local else HITStatus.PENDING,
                published_at=now if local else None,
                expires_at=now + stage.lifetime,
            )
            if local:
                hit.provider_hit_id = f"local-{hit.pk}"
                hit.save(update_fields=["provider_hit_id"])
            HITItem.objects.bulk_create(
                HITItem(hit=hit, item_id=item_id, position=pos) for pos, item_id in enumerate(group)
            )
            Item.objects.filter(pk__in=group).update(status=ItemStatus.PUBLISHED)
    logger.info("stage %s: published %d HITs", stage.pk, len(groups))
    return len(groups)


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
    """Move ``campaign`` to ``to_state``; a local campaign entering pilot/live is published.

    The transition locks the campaign row (``campaign_transition``); publishing
    happens in the same transaction, so a failure leaves the campaign where it was.
    """
    with transaction.atomic():
        campaign = campaign_transition(campaign=campaign, to_state=to_state)
        if campaign.provider == Provider.LOCAL and to_state in WORKABLE_STATES:
            campaign_publish(campaign=campaign)
    return campaign


# --- Accepting work ----------------------------------------------------------------


class _NoPlaceError(Exception):
    """Internal: roll back the savepoint (and its HIT row lock) of a full HIT."""


def _take_place(*, hit_id: int, stage: Stage, worker: Worker, wait: bool) -> Assignment | None:
    """Lock one HIT and take a place on it; None when it is locked by another (``wait``
    False), full, expired or gone. The lock lives in a savepoint that is rolled back
    when no place is taken, so an allocation holds at most one HIT lock at a time.
    """
    skip_locked = not wait and connection.features.has_select_for_update_skip_locked
    now = timezone.now()
    try:
        with transaction.atomic():
            hit = (
                HIT.objects.select_for_update(skip_locked=skip_locked)
                .filter(pk=hit_id, status=HITStatus.PUBLISHED)
                .first()
            )
            if hit is None or (hit.expires_at is not None and hit.expires_at <= now):
                raise _NoPlaceError
            held = hit.assignments.filter(status__in=ASSIGNMENT_HOLDING_STATES)
            if held.count() >= hit.max_assignments or held.filter(worker=worker).exists():
                raise _NoPlaceError
            return Assignment.objects.create(
                hit=hit,
                worker=worker,
                provider=hit.provider,
                status=AssignmentStatus.ACCEPTED,
                accepted_at=now,
                deadline=now + stage.assignment_duration,
            )
    except _NoPlaceError:
        return None


def assignment_accept(*, stage: Stage, worker: Worker) -> Assignment:
    """Give ``worker`` a place on the first open HIT of ``stage`` they may take.

    Returns the worker's current (accepted, unexpired) assignment in the stage if
    there is one. Honours the task type's exclusive keys (at most one HIT per key
    per worker in the stage), requester blocks and the campaign state. Raises
    ``NoWorkAvailableError`` or ``WorkerNotAllowedError`` with a message for the worker.

    Locking: the worker row (a worker's own concurrent accepts are serialised, so
    exclusive keys and "one current assignment" hold), then candidate HIT rows one
    at a time with SKIP LOCKED; when every free candidate was locked by another
    allocation, it waits on them in turn, so nobody is told "no work" while a
    place is still free. The constraint ``assignment_one_per_worker_per_hit``
    backs it all.
    """
    with transaction.atomic():
        stage = Stage.objects.select_related("campaign").get(pk=stage.pk)
        if stage.campaign.state not in WORKABLE_STATES:
            raise NoWorkAvailableError("This campaign is not taking work at the moment.")
        if not worker_has_stage_access(worker=worker, stage=stage):
            raise WorkerNotAllowedError("You have no access to this task.")
        worker = Worker.objects.select_for_update().get(pk=worker.pk)
        if worker_is_blocked(worker=worker, campaign=stage.campaign):
            raise WorkerNotAllowedError("You can no longer take tasks from this requester.")
        current = assignment_current(stage=stage, worker=worker)
        if current is not None:
            return current
        task_type = task_type_get(stage.task_type)
        taken = worker_exclusive_keys(stage=stage, worker=worker, task_type=task_type)
        skipped: list[int] = []
        last_id = 0
        while True:
            batch = list(
                hits_open(stage=stage, worker=worker).filter(pk__gt=last_id)[:_CANDIDATE_BATCH]
            )
            conflicting = hits_conflicting(
                hit_ids=[h.pk for h in batch], task_type=task_type, taken=taken
            )
            for hit in batch:
                if hit.pk in conflicting:
                    continue
                assignment = _take_place(hit_id=hit.pk, stage=stage, worker=worker, wait=False)
                if assignment is not None:
                    return assignment
                skipped.append(hit.pk)
            if len(batch) < _CANDIDATE_BATCH:
                break
            last_id = batch[-1].pk
        for hit_id in skipped:
            assignment = _take_place(hit_id=hit_id, stage=stage, worker=worker, wait=True)
            if assignment is not None:
                return assignment
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
    one past its deadline is expired here. ``Assignment.DoesNotExist`` if the
    worker does not hold it. Work time is measured on the server, accept to submit.
    Stages whose review rules hold ``{"rule": "auto_approve"}`` approve at once.

    Locking: the assignment row, for the whole check-and-store.
    """
    closed: str | None = None
    with transaction.atomic():
        assignment = (
            Assignment.objects.select_for_update(of=("self",))
            .select_related("hit__stage__campaign")
            .get(pk=assignment_id, worker=worker)
        )
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
        if assignment.status != AssignmentStatus.ACCEPTED:
            closed = assignment.status
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
            assignment.answers = answer
            assignment.status = AssignmentStatus.SUBMITTED
            assignment.submitted_at = now
            assignment.work_seconds = max(0, int((now - assignment.accepted_at).total_seconds()))
            assignment.telemetry = telemetry_sanitise(telemetry)
            assignment.save(
                update_fields=["answers", "status", "submitted_at", "work_seconds", "telemetry"]
            )
            Worker.objects.filter(pk=assignment.worker_id).update(
                submitted_count=F("submitted_count") + 1
            )
            if _auto_approves(stage) and assignment.provider == Provider.LOCAL:
                assignment = assignment_approve(
                    assignment=assignment, source="rule:auto_approve", reason="auto_approve rule"
                )
            return SubmitResult(assignment=assignment, stored=True, answer=answer)
    messages: dict[str, str] = {
        AssignmentStatus.EXPIRED: "The time for this task ran out; it has gone back to the pool.",
        AssignmentStatus.RETURNED: "You returned this task; it can no longer be submitted.",
    }
    raise AssignmentClosedError(
        messages.get(closed or "", "This task can no longer be submitted."),
        errors={"status": [closed]},
    )


def _auto_approves(stage: Stage) -> bool:
    return any(
        isinstance(rule, Mapping) and rule.get("rule") == "auto_approve"
        for rule in stage.review_rules or []
    )


# --- Returning and expiry ------------------------------------------------------------


def assignment_return(*, assignment_id: int, worker: Worker) -> Assignment:
    """The worker gives the assignment back; its place frees up. Idempotent.

    ``Assignment.DoesNotExist`` if the worker does not hold it; ``AssignmentClosedError``
    once it is submitted. Locking: the assignment row.
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
    return assignment


def assignments_expire(*, now: Any = None) -> int:
    """Expire accepted assignments past their deadline (their places free up); the count.

    Idempotent. Locking: one UPDATE; PostgreSQL re-checks the status of a row a
    concurrent submit holds once it is released, so a just-submitted
    assignment is never expired.
    """
    now = now or timezone.now()
    return Assignment.objects.filter(
        status=AssignmentStatus.ACCEPTED, deadline__isnull=False, deadline__lte=now
    ).update(status=AssignmentStatus.EXPIRED)


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
    """Approve a submitted local assignment and hand its answer on to the next stage.

    ``source`` says what decided ("requester", "rule:auto_approve", …). Idempotent:
    approving twice changes nothing and hands off once. The hand-off runs in the
    Celery task ``campaigns.handoff_run``, enqueued after commit.
    Locking: the assignment row.
    """
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
    "WorkerNotAllowedError",
    "assignment_accept",
    "assignment_approve",
    "assignment_reject",
    "assignment_return",
    "assignment_submit",
    "assignments_expire",
    "campaign_publish",
    "campaign_start",
    "stage_publish",
    "telemetry_sanitise",
]
