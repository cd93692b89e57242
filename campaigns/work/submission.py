"""Submitting: page telemetry, storing a worker's answer exactly once.

Locking: the order the work room takes its locks in is in ``campaigns/work/__init__.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from campaigns.design.platform import platform_for
from campaigns.design.stage_rules import stage_auto_approves
from campaigns.models import (
    Assignment,
    AssignmentStatus,
    DetachedAnswer,
    Worker,
)
from campaigns.tasktypes import FieldError, task_type_get
from campaigns.work.decisions import assignment_approve
from campaigns.work.events import answer_stored, answer_submitting
from campaigns.work.lifecycle import AssignmentClosedError, _places_free
from campaigns.work.selectors.access import RequestWorkers
from campaigns.work.selectors.loading import assignment_load, hit_items
from qaportal import prepared
from qaportal.deadlock import deadlock_retried
from qaportal.jsonsafe import unstorable_path

DECIDED_STATES = (AssignmentStatus.APPROVED, AssignmentStatus.REJECTED)
STORED_STATES = (AssignmentStatus.SUBMITTED, *DECIDED_STATES)


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


class SubmitRefusedError(Exception):
    """Raised by an ``answer_submitting`` handler: not yet (the message says why)."""


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


@deadlock_retried
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


_STORED_FIELDS = ("answers", "status", "submitted_at", "work_seconds", "telemetry")
# The stored answer and the worker's count, hand-written: the ORM took longer to build
# the two UPDATEs than the database to run them. On PostgreSQL one statement.
_STORE_SQL_PG = """
WITH a AS (UPDATE campaigns_assignment
           SET answers = %s, status = %s, submitted_at = %s, work_seconds = %s, telemetry = %s
           WHERE id = %s RETURNING worker_id)
UPDATE campaigns_worker SET submitted_count = submitted_count + 1
WHERE id = (SELECT worker_id FROM a)
"""
_STORE_SQL = """
UPDATE campaigns_assignment
SET answers = %s, status = %s, submitted_at = %s, work_seconds = %s, telemetry = %s
WHERE id = %s
"""
_COUNT_SQL = "UPDATE campaigns_worker SET submitted_count = submitted_count + 1 WHERE id = %s"


def _submission_write(*, assignment: Assignment, stored: dict[str, Any]) -> None:
    """Write ``stored`` (``_STORED_FIELDS``) to the locked assignment row and count the
    submission on its worker (no signals are used on assignments or workers)."""
    fields = {f.name: f for f in Assignment._meta.concrete_fields}
    values = [fields[name].get_db_prep_save(stored[name], connection) for name in _STORED_FIELDS]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            prepared.execute(cursor, _STORE_SQL_PG, [*values, assignment.pk])
        else:
            cursor.execute(_STORE_SQL, [*values, assignment.pk])
            cursor.execute(_COUNT_SQL, [assignment.worker_id])


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
            unstorable = unstorable_path(answer)
            if unstorable is not None:
                problems = [*problems, FieldError(path=unstorable[0], message=unstorable[1])]
            try:
                answer_submitting.announce(assignment=assignment, stage=stage)
            except SubmitRefusedError as exc:
                problems = [*problems, FieldError(path="", message=str(exc))]
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
            _submission_write(assignment=assignment, stored=stored)
            for name, value in stored.items():
                setattr(assignment, name, value)
            # Quizzes are scored now (in this transaction); review rules and entity
            # agreement are queued through the outbox, after commit.
            answer_stored.announce(assignment=assignment, stage=stage, task_type=task_type)
            if stage_auto_approves(stage) and platform_for(assignment).decides_at_once:
                assignment = assignment_approve(
                    assignment=assignment, source="rule:auto_approve", reason="auto_approve rule"
                )
            return SubmitResult(assignment=assignment, stored=True, answer=answer)
    # Raised outside the transaction: the expiry above is kept.
    assert closed is not None
    raise _closed(closed)
