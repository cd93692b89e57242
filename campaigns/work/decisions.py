"""Review decisions: the one entry point, ``assignment_decide``, and the one writer.

The API, the HTML review pages, review rules and platform sync all decide through
here. On the local workforce a decision takes effect at once; on a paid platform it
is a platform operation (``Platform.decision_request``) and the assignment turns
approved or rejected when the platform has done it (``campaigns.platforms.review``
calls ``decision_write`` then). Either way ``assignment_decided`` is announced once,
and approved work is handed off.

Every decision is written here, whoever decided it, and nowhere else:

- ``decision_write`` / ``decisions_write`` — one or many locked, submitted assignments;
- ``decisions_write_many`` — a review rule's batch (``validation.review_batches``
  decides and encodes it): on PostgreSQL one statement that locks, writes and counts;
- ``assignment_decision_flip`` — a requester turning over a decided assignment.

The invariants, held by these four and tested once (``tests/campaigns/work/
test_decisions.py``): only a submitted assignment is decided (a decided one only
flips, approved ↔ rejected, by the requester); the worker's ``approved_count`` /
``rejected_count`` move with the status; ``assignment_decided`` is announced in the
writing transaction for every approval that can be handed on. The ledger effect of a
decision is the platform's: a paid approval commits its reward with the operation
that asks for it and the operation's effect settles it (``campaigns.platforms.review``
through ``campaigns.payments.ledger``); the local workforce records no reward.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction
from django.db.models import Case, F, IntegerField, Value, When
from django.db.models.functions import Greatest
from django.utils import timezone

from campaigns.design.platform import Decision, platform_for
from campaigns.models import Assignment, AssignmentStatus, Worker
from campaigns.work.events import assignment_decided
from qaportal.errors import DomainError

DECIDED = (AssignmentStatus.APPROVED, AssignmentStatus.REJECTED)


def _check_local_review(assignment: Assignment) -> None:
    if not platform_for(assignment).decides_at_once:
        raise DomainError(
            f"Assignments on {assignment.provider!r} are reviewed through their provider, "
            "which pays the worker; this service decides at once only where the platform "
            "does (the local workforce).",
            errors={"provider": [assignment.provider]},
        )


def decision_write(
    *,
    assignment: Assignment,
    status: str,
    decided_by_id: int | None,
    source: str,
    reason: str,
    feedback: str,
) -> None:
    """Record a decision on a locked, submitted ``assignment`` and count it for its
    worker, then announce ``assignment_decided`` (the hand-off follows after commit).
    Shared by local decisions and decisions a platform carried out
    (``campaigns.platforms.review.assignment_decision_record``). Call in the
    transaction that holds the row lock."""
    decisions_write(
        assignments=[assignment],
        status=status,
        decided_by_id=decided_by_id,
        source=source,
        reason=reason,
        feedback=feedback,
    )


def decisions_write(
    *,
    assignments: list[Assignment],
    status: str,
    decided_by_id: int | None,
    source: str,
    reason: str,
    feedback: str,
) -> None:
    """``decision_write`` for many locked, submitted assignments with the same decision:
    one UPDATE of the rows, one of each worker's counter, the announcements in the
    order given (their outbox messages in one INSERT). The objects are updated too."""
    if not assignments:
        return
    now = timezone.now()
    fields = {
        "status": status,
        "decided_at": now,
        "decided_by_id": decided_by_id,
        "decision_source": source[:80],
        "decision_reason": reason,
        "feedback": feedback,
    }
    for assignment in assignments:
        for name, value in fields.items():
            setattr(assignment, name, value)
    Assignment.objects.filter(pk__in=[a.pk for a in assignments]).update(**fields)
    counter = "approved_count" if status == AssignmentStatus.APPROVED else "rejected_count"
    by_count: dict[int, list[int]] = {}
    for worker_id, count in Counter(a.worker_id for a in assignments).items():
        by_count.setdefault(count, []).append(worker_id)
    for count, worker_ids in sorted(by_count.items()):
        Worker.objects.filter(pk__in=worker_ids).update(**{counter: F(counter) + count})
    approved = status == AssignmentStatus.APPROVED
    assignment_decided.announce_many(
        [{"assignment_id": a.pk, "approved": approved} for a in assignments]
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
    decision_write(
        assignment=locked,
        status=status,
        decided_by_id=decided_by.pk if decided_by is not None else None,
        source=source,
        reason=reason,
        feedback=feedback,
    )
    return locked, True


def assignment_decide(
    *,
    assignment: Assignment,
    approve: bool,
    decided_by: AbstractBaseUser | None = None,
    source: str,
    reason: str = "",
    feedback: str = "",
) -> Assignment:
    """Approve or reject a submitted assignment; the assignment as it now stands.

    ``source`` says what decided ("requester", "rule:auto_approve", …); a rejection
    needs a ``reason``, and ``feedback`` is what the worker hears. Idempotent:
    deciding twice changes nothing and hands off once. The campaign's platform
    carries it out (``Platform.decision_request``): the local workforce records it at
    once (``assignment_decision_take``) and announces ``assignment_decided`` (the
    hand-off runs after commit, through the outbox); a paid platform asks for the
    approval (and payment) or rejection as a platform operation.
    Locking: the assignment row.
    """
    if not approve and not reason.strip():
        raise DomainError("A rejection needs a reason.", errors={"reason": ["required"]})
    decision = Decision(
        approve=approve, decided_by=decided_by, source=source, reason=reason, feedback=feedback
    )
    return platform_for(assignment).decision_request(assignment=assignment, decision=decision)


def assignment_decision_take(*, assignment: Assignment, decision: Decision) -> Assignment:
    """Record ``decision`` at once: ``Platform.decision_request`` of a platform that
    ``decides_at_once`` (the local workforce). Idempotent; the assignment as it now
    stands. Locking: the assignment row."""
    with transaction.atomic():
        decided, _ = _decide(
            assignment=assignment,
            status=AssignmentStatus.APPROVED if decision.approve else AssignmentStatus.REJECTED,
            decided_by=decision.decided_by,
            source=decision.source,
            reason=decision.reason,
            feedback=decision.feedback,
        )
    return decided


def assignments_approve(
    *,
    assignment_ids: list[int],
    decided_by: AbstractBaseUser | None = None,
    source: str,
    reason: str = "",
) -> list[Assignment]:
    """Approve the submitted ones of ``assignment_ids`` (local workforce) at once; the
    assignments approved, in id order. As ``assignment_approve`` one after the other
    (those already approved, or not submitted, are left as they are; each approval is
    announced and handed off after commit), in a handful of statements: the requester
    approving a round of work (the crowd simulator's ``--approve-all``).
    Locking: the submitted rows, in id order.
    """
    with transaction.atomic():
        rows = list(
            Assignment.objects.select_for_update()
            .filter(pk__in=assignment_ids, status=AssignmentStatus.SUBMITTED)
            .order_by("pk")
        )
        for row in {row.provider: row for row in rows}.values():
            _check_local_review(row)
        decisions_write(
            assignments=rows,
            status=AssignmentStatus.APPROVED,
            decided_by_id=decided_by.pk if decided_by is not None else None,
            source=source,
            reason=reason,
            feedback="",
        )
    return rows


def assignment_approve(
    *,
    assignment: Assignment,
    decided_by: AbstractBaseUser | None = None,
    source: str,
    reason: str = "",
) -> Assignment:
    """Approve ``assignment`` (``assignment_decide`` with ``approve=True``)."""
    return assignment_decide(
        assignment=assignment, approve=True, decided_by=decided_by, source=source, reason=reason
    )


def assignment_reject(
    *,
    assignment: Assignment,
    decided_by: AbstractBaseUser | None,
    source: str,
    reason: str,
    feedback: str = "",
) -> Assignment:
    """Reject ``assignment``, saying why (``assignment_decide`` with ``approve=False``)."""
    return assignment_decide(
        assignment=assignment,
        approve=False,
        decided_by=decided_by,
        source=source,
        reason=reason,
        feedback=feedback,
    )


# --- Turning a decision over -----------------------------------------------------------


def assignment_decision_flip(
    *,
    assignment: Assignment,
    approve: bool,
    decided_by: AbstractBaseUser,
    reason: str,
    feedback: str = "",
) -> Assignment:
    """The requester turns over (or confirms) the decision of a decided ``assignment``,
    locked by the caller; the assignment as it now stands.

    An approved assignment becomes rejected or the other way round: the decision
    fields name the requester, the worker's counters move from one side to the other
    (never below zero), and a new approval is announced (``assignment_decided``: the
    hand-off is idempotent; one made by an approval now rejected is not undone).
    Confirming the same decision records the requester as its author and counts
    nothing. Local workforce only (a paid platform's decision is its own); a
    submitted assignment is decided with ``assignment_decide`` instead. Call in the
    transaction that holds the assignment row's lock.
    """
    _check_local_review(assignment)
    if assignment.status not in DECIDED:
        raise DomainError(
            f"Only a decided assignment can be turned over; this one is {assignment.status!r}.",
            errors={"status": [assignment.status]},
        )
    target = AssignmentStatus.APPROVED if approve else AssignmentStatus.REJECTED
    old = assignment.status
    assignment.status = target
    assignment.decided_at = timezone.now()
    assignment.decided_by = decided_by  # type: ignore[assignment]
    assignment.decision_source = "requester"
    assignment.decision_reason = reason
    assignment.feedback = feedback
    assignment.save(
        update_fields=[
            "status",
            "decided_at",
            "decided_by",
            "decision_source",
            "decision_reason",
            "feedback",
        ]
    )
    if old != target:
        up = "approved_count" if approve else "rejected_count"
        down = "rejected_count" if approve else "approved_count"
        Worker.objects.filter(pk=assignment.worker_id).update(
            **{up: F(up) + 1, down: Greatest(F(down) - 1, Value(0))}
        )
        if approve:
            assignment_decided.announce(assignment_id=assignment.pk, approved=True)
    return assignment


# --- A review rule's batch ---------------------------------------------------------------


class DecisionRow(Protocol):
    """One assignment of a batch (``decisions_write_many``), as the decider encoded it.

    ``status``: "approved" / "rejected", or "" for a review that decides nothing (its
    record is written, the assignment stays submitted). PostgreSQL: ``data`` is
    {"id", "status" (when deciding), "head": the index in the batch's ``heads`` of the
    review record's head, with the decision's "at", "source" and "reason", "verdicts":
    indexes into the batch's ``parts``}. Other databases: ``data`` has "details"
    ({"review": …}) and, when deciding, "at" (ISO), "source" and "reason"."""

    @property
    def pk(self) -> int: ...

    @property
    def worker_id(self) -> int: ...

    @property
    def status(self) -> str: ...

    @property
    def data(self) -> dict[str, Any]: ...


def decisions_write_many(
    *, rows: Sequence[DecisionRow], parts: str, heads: str, width: int, hands_on: bool
) -> list[int]:
    """Write a review rule's batch of decisions (and of reviews that decide nothing) with
    a constant number of queries; the ids written, in id order.

    Rows still submitted once locked get the decision fields ``decision_write``
    writes (status, ``decided_at``, ``decided_by`` None, ``decision_source`` (at most
    80 characters), ``decision_reason``, ``feedback`` "") and their review record
    merged into ``review_details["review"]`` (the rest of the stored object kept); rows
    deciding nothing get the record only; the others (decided meanwhile) are left
    alone. Workers' counters move by what was decided. Approvals are announced
    (``assignment_decided``, one INSERT of the outbox messages) when ``hands_on`` (the
    stage has a next stage: the event's one use for approvals). ``parts`` and ``heads``
    (PostgreSQL) are JSON arrays of the batch's distinct verdicts and heads, ``width``
    how many verdicts each row's record has (under "rules").

    On PostgreSQL one statement locks, writes and counts (``_MANY_SQL``); elsewhere
    the rows are locked, then written one UPDATE each, then counted.
    Locking: the rows still submitted in id order, then their workers' rows in id
    order; a concurrent decision (taken first) wins. Runs in its own transaction
    (a savepoint within the caller's); safe on a writer thread with its connection.
    """
    by_id = {row.pk: row for row in rows}
    postgresql = connection.vendor == "postgresql"
    with transaction.atomic():
        if postgresql:
            written = _many_sql_write(rows=rows, parts=parts, heads=heads, width=width)
        else:
            written = _many_lock(list(by_id))
        decided = [by_id[pk] for pk in written if by_id[pk].status]
        if not postgresql:
            _many_orm_write(
                decided=decided, held=[by_id[pk] for pk in written if not by_id[pk].status]
            )
            approved = Counter(
                r.worker_id for r in decided if r.status == AssignmentStatus.APPROVED
            )
            rejected = Counter(
                r.worker_id for r in decided if r.status == AssignmentStatus.REJECTED
            )
            if approved or rejected:
                _worker_counters_add(approved=approved, rejected=rejected)
        if hands_on:
            approvals = [
                {"assignment_id": row.pk, "approved": True}
                for row in decided
                if row.status == AssignmentStatus.APPROVED
            ]
            if approvals:
                # One INSERT of the hand-offs' outbox messages, whatever their number.
                assignment_decided.announce_many(approvals)
    return written


# One statement per batch on PostgreSQL:
# - ``t``, ``v``: the batch's distinct verdicts and heads, each one JSON document, and its
#   rows as arrays (ids, statuses, head indexes; the verdict indexes of every row in one
#   array, ``width`` a row): a few parameters to quote, little to parse (the rows as
#   one JSON document, each with its head, had been half of the database's work before
#   the UPDATE); each row's review_details assembled from its head and its verdicts
#   (``__VERDICTS__``: ``_verdicts_sql``);
# - ``locked``: those still submitted, locked in id order (``ORDER BY … FOR NO KEY
#   UPDATE``: the sort comes before the locks whatever the join's plan);
# - ``done``: their UPDATE: decided rows get every decision field, held rows their
#   review only (their other columns set to what they are: no indexed column changes,
#   so the new row version can stay on its page). ``details`` is ``{"review": …}``,
#   merged into the stored review_details (the old object with its "review" key
#   replaced; just ``details`` when there is nothing to keep), in the database: the
#   old details are neither read into Python nor sent back;
# - ``counts``, ``workers``, ``counted``: the decided rows' workers, locked in id order
#   once every assignment row is (the aggregate reads all of ``done`` first), and their
#   counters.
# What comes back: the ids written.
_MANY_SQL = """
WITH t AS (
  SELECT %(verdicts)s::jsonb AS verdicts, %(heads)s::jsonb AS heads, %(marks)s::int[] AS marks
), v AS MATERIALIZED (
  SELECT r.id, r.status, t.heads -> r.head AS head,
    jsonb_set(jsonb_build_object('review', t.heads -> r.head), '{review,rules}', __VERDICTS__)
      AS details
  FROM t, unnest(%(ids)s::bigint[], %(statuses)s::text[], %(head_of)s::int[])
    WITH ORDINALITY AS r(id, status, head, n)
), locked AS (
  SELECT a.id FROM campaigns_assignment AS a JOIN v ON v.id = a.id
  WHERE a.status = %(submitted)s ORDER BY a.id FOR NO KEY UPDATE OF a
), done AS (
  UPDATE campaigns_assignment AS a
  SET status = coalesce(v.status, a.status),
      decided_at = CASE WHEN v.status IS NULL THEN a.decided_at
        ELSE (v.head ->> 'at')::timestamptz END,
      decided_by_id = CASE WHEN v.status IS NULL THEN a.decided_by_id END,
      decision_source = CASE WHEN v.status IS NULL THEN a.decision_source
        ELSE left(v.head ->> 'source', 80) END,
      decision_reason = CASE WHEN v.status IS NULL THEN a.decision_reason
        ELSE v.head ->> 'reason' END,
      feedback = CASE WHEN v.status IS NULL THEN a.feedback ELSE '' END,
      review_details = CASE
        WHEN a.review_details = '{}'::jsonb OR jsonb_typeof(a.review_details) <> 'object'
        THEN v.details ELSE a.review_details || v.details END
  FROM v JOIN locked ON locked.id = v.id
  WHERE a.id = v.id AND a.status = %(submitted)s
  RETURNING a.id, a.worker_id, v.status
), counts AS (
  SELECT worker_id,
    count(*) FILTER (WHERE status = %(approved)s) AS approved,
    count(*) FILTER (WHERE status = %(rejected)s) AS rejected
  FROM done WHERE status IS NOT NULL GROUP BY worker_id
), workers AS (
  SELECT w.id, c.approved, c.rejected
  FROM campaigns_worker AS w JOIN counts AS c ON c.worker_id = w.id
  ORDER BY w.id FOR NO KEY UPDATE OF w
), counted AS (
  UPDATE campaigns_worker AS w
  SET approved_count = w.approved_count + k.approved,
      rejected_count = w.rejected_count + k.rejected
  FROM workers AS k WHERE w.id = k.id
)
SELECT id FROM done
"""
assert Assignment._meta.db_table == "campaigns_assignment"
assert Worker._meta.db_table == "campaigns_worker"


@functools.cache
def _verdicts_sql(width: int) -> str:
    """SQL of a row's verdicts, a JSON array: the batch's verdicts (``t.verdicts``) at the
    row's ``width`` indexes (the row's slice of ``t.marks``; ``jsonb_build_array`` takes
    up to 100 arguments: in parts of 50)."""
    parts = [
        "jsonb_build_array("
        + ", ".join(
            f"t.verdicts -> t.marks[(r.n - 1) * {width} + {n}]" for n in range(start + 1, end + 1)
        )
        + ")"
        for start in range(0, width, 50)
        for end in [min(width, start + 50)]
    ]
    return " || ".join(parts) or "'[]'::jsonb"


def _pk(row: DecisionRow) -> int:
    return row.pk


def _int_array(values: Sequence[int]) -> str:
    """A PostgreSQL array literal of integers."""
    return "{" + ",".join(map(str, values)) + "}"


def _many_sql_write(
    *, rows: Sequence[DecisionRow], parts: str, heads: str, width: int
) -> list[int]:
    """Write ``rows`` with ``_MANY_SQL``, in id order; the ids of those written (the rows
    still submitted). PostgreSQL; in the caller's transaction."""
    ordered = sorted(rows, key=_pk)
    marks: list[int] = []
    for row in ordered:
        marks.extend(row.data["verdicts"])
    with connection.cursor() as cursor:
        cursor.execute(
            _MANY_SQL.replace("__VERDICTS__", _verdicts_sql(width)),
            {
                "verdicts": parts,
                "heads": heads,
                "marks": _int_array(marks),
                "ids": _int_array([row.pk for row in ordered]),
                # "approved" / "rejected" or NULL: no quoting needed
                "statuses": "{" + ",".join(row.status or "NULL" for row in ordered) + "}",
                "head_of": _int_array([row.data["head"] for row in ordered]),
                "submitted": AssignmentStatus.SUBMITTED,
                "approved": AssignmentStatus.APPROVED,
                "rejected": AssignmentStatus.REJECTED,
            },
        )
        return [pk for (pk,) in cursor.fetchall()]


def _many_lock(ids: list[int]) -> list[int]:
    """Lock the rows of ``ids`` still submitted (``SELECT … FOR UPDATE``); their ids, in
    order. Databases other than PostgreSQL."""
    return list(
        Assignment.objects.select_for_update()
        .filter(pk__in=ids, status=AssignmentStatus.SUBMITTED)
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def _many_orm_write(*, decided: list[DecisionRow], held: list[DecisionRow]) -> None:
    """Write decided rows (all decision fields) and held rows; ``data["details"]`` is
    merged into the stored details. Databases other than PostgreSQL, one UPDATE per row."""
    stored = dict(
        Assignment.objects.filter(pk__in=[r.pk for r in [*decided, *held]]).values_list(
            "pk", "review_details"
        )
    )

    def merged(pk: int, details: dict[str, Any]) -> dict[str, Any]:
        old = stored.get(pk)
        return {**(old if isinstance(old, Mapping) else {}), **details}

    for row in decided:
        Assignment.objects.filter(pk=row.pk).update(
            status=row.status,
            decided_at=datetime.fromisoformat(row.data["at"]),
            decided_by=None,
            decision_source=row.data["source"][:80],
            decision_reason=row.data["reason"],
            feedback="",
            review_details=merged(row.pk, row.data["details"]),
        )
    for row in held:
        Assignment.objects.filter(pk=row.pk).update(
            review_details=merged(row.pk, row.data["details"])
        )


def _worker_counters_add(*, approved: Mapping[int, int], rejected: Mapping[int, int]) -> None:
    """Add to workers' approved/rejected counters in one UPDATE (databases other than
    PostgreSQL)."""

    def delta(counts: Mapping[int, int]) -> Case:
        return Case(
            *(When(pk=w, then=Value(n)) for w, n in counts.items()),
            default=Value(0),
            output_field=IntegerField(),
        )

    Worker.objects.filter(pk__in=sorted({*approved, *rejected})).update(
        approved_count=F("approved_count") + delta(approved),
        rejected_count=F("rejected_count") + delta(rejected),
    )
