"""Review automation: run a stage's review rules, apply their decisions, act on gold.

- ``stage_review`` — every submitted assignment of a stage, in batches of
  ``batch_size``, a constant number of queries per batch; then the worker-level
  gold actions. Run by the Celery task ``validation.review_stage``.
- ``assignment_review`` — after one submission (task ``validation.review_submission``):
  the submitted assignments of its HIT (peers may have been held waiting for it),
  with the facts of that HIT and that worker; decisions go through
  ``assignment_approve`` / ``assignment_reject``.
- ``assignment_override`` — the requester decides against (or confirms) a rule.
- ``gold_actions_apply`` — ``gold_disqualify`` (revoke a qualification, block)
  and ``gold_bonus`` (a planned bonus per 3-of-4 gold block).

Decisions: approve/reject set the assignment's status with ``decision_source``
"rule:<name>[+<name>…]", ``decision_reason`` and, in ``review_details["review"]``,
every rule's verdict with its numbers; "hold" and "none" leave it submitted and
record the review there. Assignments on paid providers are never decided here:
the review is recorded as a proposal (``review_details["review"]["applied"]`` is
false) for the provider's review service, which moves the money.
"""

from __future__ import annotations

import gc
import json
import logging
import sys
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, NamedTuple

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction
from django.db.models import Case, F, IntegerField, Q, Value, When
from django.db.models.functions import Greatest
from django.utils import timezone

from campaigns.design.platform import platform_for
from campaigns.models import (
    Assignment,
    AssignmentStatus,
    LedgerEntry,
    LedgerKind,
    LedgerStatus,
    OperationKind,
    OperationState,
    ProviderOperation,
    QualificationGrant,
    Stage,
    Worker,
    WorkerBlock,
)
from campaigns.work.decisions import assignment_approve, assignment_reject
from campaigns.work.events import assignment_decided
from qaportal.errors import DomainError
from validation.gold import gold_bonus_blocks
from validation.models import ReviewRun
from validation.rules import (
    APPROVE,
    BONUS_RULES,
    HOLD,
    NONE,
    REJECT,
    RULES,
    Review,
    StageFacts,
    Submission,
    facts_build,
    params_of,
    review_prepared,
    rules_prepare,
)
from validation.selectors import stage_items_by_hit, stage_submissions

logger = logging.getLogger(__name__)

DEFAULT_BATCH = 1000
PROPOSED = "proposed"


@dataclass
class ReviewSummary:
    reviewed: int = 0
    decisions: Counter[str] = field(default_factory=Counter)
    worker_actions: Counter[str] = field(default_factory=Counter)
    batches: int = 0
    run_id: int | None = None


def _entries(rules: Any, known: Mapping[str, Any]) -> list[dict[str, Any]]:
    if not isinstance(rules, list):
        return []
    return [dict(r) for r in rules if isinstance(r, Mapping) and r.get("rule") in known]


def _rules(stage: Stage) -> list[dict[str, Any]]:
    return _entries(stage.review_rules, RULES)


def _bonus_rules(stage: Stage) -> list[dict[str, Any]]:
    return _entries(stage.bonus_rules, BONUS_RULES)


def _facts(stage: Stage, submissions: list[Submission], hit_ids: set[int] | None) -> StageFacts:
    return facts_build(
        task_type=stage.task_type,
        items_by_hit=stage_items_by_hit(stage=stage, hit_ids=hit_ids),
        submissions=submissions,
        rules=_rules(stage),
        bonus_rules=_bonus_rules(stage),
    )


def _details(old: Any, result: Review, *, applied: bool, now: Any) -> dict[str, Any]:
    details = dict(old) if isinstance(old, Mapping) else {}
    details["review"] = {**result.details(at=now), "applied": applied}
    return details


# --- Whole stage --------------------------------------------------------------------------


def stage_review(*, stage: Stage, batch_size: int = DEFAULT_BATCH) -> ReviewSummary:
    """Run ``stage``'s review rules over all its submitted assignments; the summary.

    Idempotent: only assignments still submitted are decided (held ones are
    looked at again, their facts may have changed); gold actions are keyed.
    Queries: the stage's stored assignments (one query, fetched in chunks), its HITs'
    items once, then per batch of ``batch_size`` decisions a constant number: on
    PostgreSQL one statement that locks, writes and counts (``_BATCH_SQL``) between
    the transaction's BEGIN and COMMIT; hand-offs of approvals are enqueued after
    commit. Records a ``ReviewRun``. On PostgreSQL, outside a caller's transaction,
    the batches are written by a writer thread (its own connection) while the next
    batch is decided (``_BatchWriter``).

    Locking: each batch, in its own transaction, locks its assignment rows still
    submitted in id order (as ``platforms.review`` does for several, and
    ``assignment_approve`` for one), then their workers' rows in id order (after
    the assignments, as a single decision does), and decides only rows still
    submitted once locked: a requester's concurrent decision wins, and a second
    review of the stage decides nothing twice
    (``tests/validation/test_review_concurrency.py``).
    """
    with _collector_paused():
        return _stage_review(stage=stage, batch_size=batch_size)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the run, back as it was after it.

    A stage's review holds every stored assignment (100,000 and their answers) and
    allocates a few more objects for each: the collector kept traversing them all,
    about a third of the run's CPU, and found nothing to free (the run's objects
    are not cycles; reference counting frees them). It collects as usual after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _stage_review(*, stage: Stage, batch_size: int) -> ReviewSummary:
    started = timezone.now()
    stage = Stage.objects.select_related("campaign").get(pk=stage.pk)
    summary = ReviewSummary()
    rules = _rules(stage)
    submissions = stage_submissions(stage=stage)
    facts = _facts(stage, submissions, None)
    prepared = rules_prepare(rules)
    if prepared:
        subjects = [s for s in submissions if s.status == AssignmentStatus.SUBMITTED]
        with _BatchWriter(stage=stage, summary=summary) as writer:
            for start in range(0, len(subjects), batch_size):
                writer.write(
                    [
                        (s, review_prepared(s, facts, prepared))
                        for s in subjects[start : start + batch_size]
                    ]
                )
    summary.worker_actions.update(gold_actions_apply(stage=stage, facts=facts))
    run = ReviewRun.objects.create(
        stage=stage,
        started_at=started,
        finished_at=timezone.now(),
        reviewed=summary.reviewed,
        decisions=dict(summary.decisions),
        worker_actions=dict(summary.worker_actions),
        batches=summary.batches,
    )
    summary.run_id = run.pk
    logger.info(
        "stage %s reviewed: %s; worker actions %s",
        stage.pk,
        dict(summary.decisions),
        dict(summary.worker_actions),
    )
    return summary


# The interpreter's thread switch interval while a writer thread runs (seconds).
WRITER_SWITCH_INTERVAL = 0.0005


class _BatchWriter:
    """Writes the batches in order, each with ``_batch_apply`` in its own transaction.

    On PostgreSQL, outside a caller's transaction, a batch is written by a thread of
    its own (with its own connection) while the next batch's rules run: the database
    works on the UPDATEs (a third of a run's time) while Python decides the next
    batch, one batch in flight at a time. Inside a caller's transaction (tests, a
    caller's ``atomic``) another connection would not see its rows, so the batches
    are written inline, as on other databases. A failed write is raised by the next
    ``write`` or when the block ends.
    """

    def __init__(self, *, stage: Stage, summary: ReviewSummary) -> None:
        self.stage = stage
        self.summary = summary
        self._pending: Future[None] | None = None
        self._executor = (
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="stage-review-writer")
            if connection.vendor == "postgresql" and not connection.in_atomic_block
            else None
        )

    def __enter__(self) -> _BatchWriter:
        if self._executor is not None:
            # The writer thread needs the GIL back each time PostgreSQL answers one of
            # its statements, while this thread runs the rules without a pause: at the
            # default 5 ms switch interval it waited up to that long after every
            # statement, the database idle meanwhile (~2 s of a 100,000-row review).
            self._switch_interval = sys.getswitchinterval()
            sys.setswitchinterval(WRITER_SWITCH_INTERVAL)
            self._pending = self._executor.submit(_writer_session)
        return self

    def write(self, reviews: Sequence[tuple[Submission, Review]]) -> None:
        rows = _batch_prepare(reviews)
        if self._executor is None:
            self._apply(rows)
            return
        self._wait()
        self._pending = self._executor.submit(self._apply, rows)

    def _apply(self, rows: Sequence[_Row]) -> None:
        _batch_apply(stage=self.stage, reviews=rows, summary=self.summary)
        self.summary.batches += 1

    def _wait(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self._executor is None:
            return
        try:
            if exc_type is None:
                self._wait()
            else:
                try:
                    self._wait()
                except Exception:
                    logger.exception("stage %s: a batch's write failed too", self.stage.pk)
        finally:
            sys.setswitchinterval(self._switch_interval)
            self._executor.submit(_connection_close).result()
            self._executor.shutdown(wait=True)


def _connection_close() -> None:
    """Close the calling thread's database connection (the writer thread's own)."""
    connection.close()


# The review_details a decision writes (~1.5 KB of JSON) take an approved row past
# PostgreSQL's 2 KB threshold, where it compresses the largest value: with lz4 instead of
# the default pglz, ~15 % less of the writer's database time. Only where the
# server was built with lz4; the stored JSON is the same, and every reader decompresses
# either kind.
_WRITER_SESSION_SQL = """
SELECT set_config('default_toast_compression', 'lz4', false) FROM pg_settings
WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)
"""


def _writer_session() -> None:
    """Set up the writer thread's own connection for its batches (``_WRITER_SESSION_SQL``):
    one query per run; the connection is closed at the end (``_connection_close``)."""
    with connection.cursor() as cursor:
        cursor.execute(_WRITER_SESSION_SQL)


class _Row(NamedTuple):
    """One assignment's decision, ready to write (``_batch_prepare``)."""

    pk: int
    worker_id: int
    decision: str  # the review's: approve / reject / hold / none
    status: str  # approved / rejected when the decision applies, else ""
    # The row of the UPDATE: id, [status, at, source, reason,] details ({"review": …}).
    data: dict[str, Any]
    encoded: str  # ``data`` as JSON (PostgreSQL), else ""


def _batch_prepare(reviews: Sequence[tuple[Submission, Review]]) -> list[_Row]:
    """What ``_batch_apply`` writes for each review, encoded as JSON for PostgreSQL: done
    by the deciding thread, so that the writer thread only locks and writes."""
    at = timezone.now().isoformat()
    encode = connection.vendor == "postgresql"
    rows = []
    pays: dict[str, bool] = {}
    for sub, result in reviews:
        if sub.provider not in pays:
            pays[sub.provider] = platform_for(sub.provider).pays_workers
        applies = result.decision in (APPROVE, REJECT) and not pays[sub.provider]
        # Only the "review" key (what ``_details`` puts there): the writes merge it into
        # the stored review_details.
        review = result.details()
        details = {"review": review}
        review["at"] = at
        review["applied"] = applies
        status = ""
        if applies:
            approve = result.decision == APPROVE
            status = AssignmentStatus.APPROVED if approve else AssignmentStatus.REJECTED
            data = {
                "id": sub.id,
                "status": status,
                "at": at,
                "source": result.source[:80],
                "reason": result.reason,
                "details": details,
            }
        else:
            data = {"id": sub.id, "details": details}
        rows.append(
            _Row(
                sub.id, sub.worker_id, result.decision, status, data, _json(data) if encode else ""
            )
        )
    return rows


def _batch_apply(*, stage: Stage, reviews: Sequence[_Row], summary: ReviewSummary) -> None:
    """Write one batch of rule decisions with a constant number of queries.

    The same fields ``campaigns.work.decisions`` writes for a decision (status,
    ``decided_at``, ``decided_by`` None, ``decision_source``, ``decision_reason``,
    ``feedback`` "", the worker's approved/rejected counter, the hand-off task for
    an approval), in bulk, for the rows still submitted once locked; held rows get
    their review only. On PostgreSQL one statement does it all (``_batch_write``);
    elsewhere the rows are locked, then written, then counted.
    """
    by_id = {row.pk: row for row in reviews}
    postgresql = connection.vendor == "postgresql"
    with transaction.atomic():
        written = _batch_write(sorted(reviews, key=_pk)) if postgresql else _batch_lock(list(by_id))
        decided: list[_Row] = []
        held: list[_Row] = []
        approved: Counter[int] = Counter()
        rejected: Counter[int] = Counter()
        for pk in written:
            row = by_id[pk]
            summary.reviewed += 1
            if row.status:
                decided.append(row)
                approve = row.status == AssignmentStatus.APPROVED
                (approved if approve else rejected)[row.worker_id] += 1
                summary.decisions[row.decision] += 1
            else:
                held.append(row)
                proposal = row.decision in (APPROVE, REJECT)
                summary.decisions[PROPOSED if proposal else row.decision] += 1
        if not postgresql:
            _assignments_write(decided=decided, held=held)
            if approved or rejected:
                _worker_counters_add(approved=approved, rejected=rejected)
        if approved and stage.next_stage_id is not None:
            for row in decided:
                if row.status == AssignmentStatus.APPROVED:
                    assignment_decided.announce(assignment_id=row.pk, approved=True)


# One statement per batch on PostgreSQL:
# - ``v``: the batch's rows, unpacked from one JSON document (one parameter to quote, one
#   value to parse);
# - ``locked``: those still submitted, locked in id order (``ORDER BY … FOR NO KEY
#   UPDATE``: the sort comes before the locks whatever the join's plan);
# - ``done``: their UPDATE: decided rows get every decision field, held rows their
#   review only (their other columns set to what they are: no indexed column changes,
#   so the new row version can stay on its page). ``details`` is ``{"review": …}``,
#   merged into the stored review_details as ``_details`` does it (the old object with
#   its "review" key replaced; just ``details`` when there is nothing to keep), in the
#   database: the old details are neither read into Python nor sent back;
# - ``counts``, ``workers``, ``counted``: the decided rows' workers, locked in id order
#   once every assignment row is (the aggregate reads all of ``done`` first), and their
#   counters.
# What comes back: the ids written.
_BATCH_SQL = """
WITH v AS MATERIALIZED (
  SELECT * FROM jsonb_to_recordset(%(rows)s::jsonb)
    AS v(id bigint, status text, at timestamptz, source text, reason text, details jsonb)
), locked AS (
  SELECT a.id FROM campaigns_assignment AS a JOIN v ON v.id = a.id
  WHERE a.status = %(submitted)s ORDER BY a.id FOR NO KEY UPDATE OF a
), done AS (
  UPDATE campaigns_assignment AS a
  SET status = coalesce(v.status, a.status),
      decided_at = CASE WHEN v.status IS NULL THEN a.decided_at ELSE v.at END,
      decided_by_id = CASE WHEN v.status IS NULL THEN a.decided_by_id END,
      decision_source = coalesce(v.source, a.decision_source),
      decision_reason = coalesce(v.reason, a.decision_reason),
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


def _pk(row: _Row) -> int:
    return row.pk


def _batch_write(rows: Sequence[_Row]) -> list[int]:
    """Write ``rows`` (in id order) with ``_BATCH_SQL``; the ids of those written (the
    rows still submitted). PostgreSQL; in the caller's transaction."""
    with connection.cursor() as cursor:
        cursor.execute(
            _BATCH_SQL,
            {
                "rows": "[" + ",".join(row.encoded for row in rows) + "]",
                "submitted": AssignmentStatus.SUBMITTED,
                "approved": AssignmentStatus.APPROVED,
                "rejected": AssignmentStatus.REJECTED,
            },
        )
        return [pk for (pk,) in cursor.fetchall()]


def _batch_lock(ids: list[int]) -> list[int]:
    """Lock the rows of ``ids`` still submitted (``SELECT … FOR UPDATE``); their ids, in
    order. Databases other than PostgreSQL."""
    return list(
        Assignment.objects.select_for_update()
        .filter(pk__in=ids, status=AssignmentStatus.SUBMITTED)
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def _assignments_write(*, decided: list[_Row], held: list[_Row]) -> None:
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
            decision_source=row.data["source"],
            decision_reason=row.data["reason"],
            feedback="",
            review_details=merged(row.pk, row.data["details"]),
        )
    for row in held:
        Assignment.objects.filter(pk=row.pk).update(
            review_details=merged(row.pk, row.data["details"])
        )


# One encoder for every row (``json.dumps`` with ``default`` builds one per call); the
# rows hold no cycles to look for, and PostgreSQL reads them without the spaces.
_ENCODER = json.JSONEncoder(default=str, check_circular=False, separators=(",", ":"))


def _json(value: Any) -> str:
    return _ENCODER.encode(value)


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


# --- One submission -------------------------------------------------------------------------


def assignment_review(*, assignment: Assignment) -> dict[int, Review]:
    """Review the submitted assignments of ``assignment``'s HIT after it was submitted.

    Facts come from that HIT's stored assignments and the worker's in the stage
    (peers, gold accuracy, "no answer" rate, duplicates among those texts: the
    stage-wide duplicate search is ``stage_review``'s). Decisions go through
    ``assignment_approve`` / ``assignment_reject``; then the worker's gold actions.
    Idempotent (decided assignments are left alone). Returns {assignment id: review}.
    """
    assignment = Assignment.objects.select_related("hit__stage__campaign").get(pk=assignment.pk)
    stage = assignment.hit.stage
    rules = _rules(stage)
    scope = Q(hit_id=assignment.hit_id) | Q(worker_id=assignment.worker_id)
    submissions = stage_submissions(stage=stage, scope=scope)
    facts = _facts(stage, submissions, {s.hit_id for s in submissions})
    results: dict[int, Review] = {}
    prepared = rules_prepare(rules)
    if prepared:
        for sub in submissions:
            if sub.hit_id == assignment.hit_id and sub.status == AssignmentStatus.SUBMITTED:
                results[sub.id] = review_prepared(sub, facts, prepared)
                _apply_one(assignment_id=sub.id, result=results[sub.id])
    gold_actions_apply(stage=stage, facts=facts, workers={assignment.worker_id})
    return results


def _apply_one(*, assignment_id: int, result: Review) -> None:
    now = timezone.now()
    with transaction.atomic():
        row = Assignment.objects.select_for_update().get(pk=assignment_id)
        if row.status != AssignmentStatus.SUBMITTED:
            return
        applies = not platform_for(row).pays_workers and result.decision in (APPROVE, REJECT)
        details = _details(row.review_details, result, applied=applies, now=now)
        if applies and result.decision == APPROVE:
            row = assignment_approve(assignment=row, source=result.source, reason=result.reason)
        elif applies:
            row = assignment_reject(
                assignment=row, decided_by=None, source=result.source, reason=result.reason
            )
        Assignment.objects.filter(pk=row.pk).update(review_details=details)


# --- Requester override ----------------------------------------------------------------------


def assignment_override(
    *,
    assignment: Assignment,
    decision: str,
    decided_by: AbstractBaseUser,
    reason: str,
    feedback: str = "",
) -> Assignment:
    """The requester approves or rejects an assignment, whatever a rule decided or held.

    A submitted (or held) assignment goes through ``assignment_approve`` /
    ``assignment_reject`` with source "requester". An assignment a rule (or anyone)
    already decided is turned over here, which those services refuse to do: the
    status flips, the worker's counters move from one side to the other, the
    decision fields name the requester, and an approval is handed on (the
    hand-off is idempotent; a hand-off already made by an approval now rejected is
    not undone). Confirming the same decision records the requester as its
    author. Every override is appended to ``review_details["overrides"]`` with the
    decision it replaced. Local assignments only (paid providers move money
    through their own services). Locking: the assignment row.
    """
    if decision not in (APPROVE, REJECT):
        raise DomainError("Decide approve or reject.", errors={"decision": [decision]})
    if decision == REJECT and not reason.strip():
        raise DomainError("A rejection needs a reason.", errors={"reason": ["required"]})
    target = AssignmentStatus.APPROVED if decision == APPROVE else AssignmentStatus.REJECTED
    now = timezone.now()
    with transaction.atomic():
        row = Assignment.objects.select_for_update().get(pk=assignment.pk)
        if platform_for(row).pays_workers:
            raise DomainError(
                "Assignments on paid providers are decided through their provider.",
                errors={"provider": [row.provider]},
            )
        if row.status not in (
            AssignmentStatus.SUBMITTED,
            AssignmentStatus.APPROVED,
            AssignmentStatus.REJECTED,
        ):
            raise DomainError(
                f"Only a submitted or decided assignment can be decided; this one is "
                f"{row.status!r}.",
                errors={"status": [row.status]},
            )
        history = {
            "at": now.isoformat(),
            "by": decided_by.pk,
            "decision": decision,
            "reason": reason,
            "replaced": {
                "status": row.status,
                "source": row.decision_source,
                "reason": row.decision_reason,
                "review": (row.review_details or {}).get("review", {}).get("decision"),
            },
        }
        details = dict(row.review_details or {})
        details["overrides"] = [*details.get("overrides", []), history]
        if row.status == AssignmentStatus.SUBMITTED:
            if decision == APPROVE:
                row = assignment_approve(
                    assignment=row, decided_by=decided_by, source="requester", reason=reason
                )
            else:
                row = assignment_reject(
                    assignment=row,
                    decided_by=decided_by,
                    source="requester",
                    reason=reason,
                    feedback=feedback,
                )
        else:
            flipped = row.status != target
            old = row.status
            row.status = target
            row.decided_at = now
            row.decided_by = decided_by  # type: ignore[assignment]
            row.decision_source = "requester"
            row.decision_reason = reason
            row.feedback = feedback
            row.save(
                update_fields=[
                    "status",
                    "decided_at",
                    "decided_by",
                    "decision_source",
                    "decision_reason",
                    "feedback",
                ]
            )
            if flipped:
                up = "approved_count" if target == AssignmentStatus.APPROVED else "rejected_count"
                down = "rejected_count" if old == AssignmentStatus.REJECTED else "approved_count"
                Worker.objects.filter(pk=row.worker_id).update(
                    **{up: F(up) + 1, down: Greatest(F(down) - 1, Value(0))}
                )
                if target == AssignmentStatus.APPROVED:
                    assignment_decided.announce(assignment_id=row.pk, approved=True)
        Assignment.objects.filter(pk=row.pk).update(review_details=details)
        row.review_details = details
    return row


# --- Gold actions --------------------------------------------------------------------------


def gold_actions_apply(
    *, stage: Stage, facts: StageFacts, workers: set[int] | None = None
) -> Counter[str]:
    """Apply the stage's ``gold_disqualify`` rules and ``gold_bonus`` bonus rules to the
    workers in ``facts`` (or only ``workers``); counts of what was newly done.

    Idempotent: a revoked grant stays revoked (``revoked_at`` is set once), a
    worker is blocked once per stage rule (a block the requester lifted is not
    renewed), and a bonus has the key ``gold_bonus:stage:<s>:worker:<w>:block:<n>``.
    On the local provider the bonus is a planned ``LedgerEntry`` (no money moves);
    on paid providers a pending ``ProviderOperation`` (kind bonus, same key) is
    written first and the ledger entry points at it. Revocations and blocks on paid
    providers are pending operations too (kinds revoke / block).
    """
    done: Counter[str] = Counter()
    campaign = stage.campaign
    paid = platform_for(campaign).pays_workers
    now = timezone.now()
    for rule in _rules(stage):
        if rule["rule"] != "gold_disqualify":
            continue
        p = params_of(rule)
        threshold = float(p["sentence_threshold"])
        failing = sorted(
            w
            for (thr, w), tally in facts.gold.items()
            if thr == threshold
            and (workers is None or w in workers)
            and tally.total >= p["min_gold"]
            and (tally.accuracy or 0.0) < p["min"]
        )
        if not failing:
            continue
        if p["qualification"] is not None:
            done["revoked"] += QualificationGrant.objects.filter(
                qualification_type_id=p["qualification"],
                qualification_type__owner_id=campaign.owner_id,
                worker_id__in=failing,
                revoked_at__isnull=True,
            ).update(revoked_at=now)
            if paid:
                _operations(
                    campaign=campaign,
                    kind=OperationKind.REVOKE,
                    rows=[
                        (
                            f"gold_revoke:qualification:{p['qualification']}:worker:{w}",
                            {"qualification_type": p["qualification"], "worker": w},
                        )
                        for w in failing
                    ],
                )
        if p["block"]:
            tag = f"gold_disqualify stage {stage.pk}:"
            already = set(
                WorkerBlock.objects.filter(
                    requester_id=campaign.owner_id, worker_id__in=failing, reason__startswith=tag
                ).values_list("worker_id", flat=True)
            )
            blocks = [
                WorkerBlock(
                    requester_id=campaign.owner_id,
                    worker_id=w,
                    reason=f"{tag} gold accuracy {facts.gold[(threshold, w)].correct}/"
                    f"{facts.gold[(threshold, w)].total} below {p['min']:.0%}",
                )
                for w in failing
                if w not in already
            ]
            done["blocked"] += len(WorkerBlock.objects.bulk_create(blocks, ignore_conflicts=True))
            if paid:
                _operations(
                    campaign=campaign,
                    kind=OperationKind.BLOCK,
                    rows=[
                        (
                            f"gold_block:stage:{stage.pk}:worker:{b.worker_id}",
                            {"worker": b.worker_id},
                        )
                        for b in blocks
                    ],
                )
    for rule in _bonus_rules(stage):
        done["bonuses"] += _gold_bonus(stage=stage, facts=facts, rule=rule, workers=workers)
    return done


def _operations(*, campaign: Any, kind: str, rows: list[tuple[str, dict[str, Any]]]) -> None:
    ProviderOperation.objects.bulk_create(
        [
            ProviderOperation(
                provider=campaign.provider,
                kind=kind,
                campaign=campaign,
                idempotency_key=key,
                payload=payload,
                state=OperationState.PENDING,
            )
            for key, payload in rows
        ],
        ignore_conflicts=True,
    )


def _gold_bonus(
    *, stage: Stage, facts: StageFacts, rule: Mapping[str, Any], workers: set[int] | None
) -> int:
    p = params_of(rule, BONUS_RULES)
    amount = Decimal(str(p["amount"]))
    threshold = float(p["sentence_threshold"])
    campaign = stage.campaign
    wanted: list[tuple[str, int, int, str]] = []  # key, worker, assignment, memo
    for (thr, worker_id), tally in sorted(facts.gold.items()):
        if thr != threshold or (workers is not None and worker_id not in workers):
            continue
        for n in gold_bonus_blocks(tally.outcomes, block=p["block"], correct=p["correct"]):
            keys = tally.keys[n * p["block"] : (n + 1) * p["block"]]
            if any(facts.submissions[a].status == AssignmentStatus.REJECTED for a, _ in keys):
                continue
            right = sum(tally.outcomes[n * p["block"] : (n + 1) * p["block"]])
            wanted.append(
                (
                    f"gold_bonus:stage:{stage.pk}:worker:{worker_id}:block:{n}",
                    worker_id,
                    keys[-1][0],
                    f"gold bonus: {right} of {p['block']} gold items right (block {n + 1})",
                )
            )
    if not wanted:
        return 0
    existing = set(
        LedgerEntry.objects.filter(key__in=[k for k, *_ in wanted]).values_list("key", flat=True)
    )
    wanted = [w for w in wanted if w[0] not in existing]
    if not wanted:
        return 0
    operation_ids: dict[str, int] = {}
    if platform_for(campaign).pays_workers:
        _operations(
            campaign=campaign,
            kind=OperationKind.BONUS,
            rows=[
                (
                    key,
                    {
                        "worker": worker,
                        "assignment": assignment,
                        "amount": str(amount),
                        "currency": campaign.currency,
                        "reason": memo,
                    },
                )
                for key, worker, assignment, memo in wanted
            ],
        )
        operation_ids = dict(
            ProviderOperation.objects.filter(
                provider=campaign.provider, idempotency_key__in=[k for k, *_ in wanted]
            ).values_list("idempotency_key", "pk")
        )
    made = LedgerEntry.objects.bulk_create(
        [
            LedgerEntry(
                campaign=campaign,
                stage=stage,
                kind=LedgerKind.BONUS,
                status=LedgerStatus.PLANNED,
                amount=amount,
                currency=campaign.currency,
                key=key,
                assignment_id=assignment,
                worker_id=worker,
                operation_id=operation_ids.get(key),
                memo=memo,
            )
            for key, worker, assignment, memo in wanted
        ],
        ignore_conflicts=True,
    )
    return len(made)


__all__ = [
    "HOLD",
    "NONE",
    "ReviewSummary",
    "assignment_override",
    "assignment_review",
    "gold_actions_apply",
    "stage_review",
]
