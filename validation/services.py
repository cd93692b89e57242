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
  and ``gold_bonus`` (a bonus per 3-of-4 gold block), asked of the platform.

Decisions: approve/reject set the assignment's status with ``decision_source``
"rule:<name>[+<name>…]", ``decision_reason`` and, in ``review_details["review"]``,
every rule's verdict with its numbers; "hold" and "none" leave it submitted and
record the review there. Assignments on paid providers are never decided here:
the review is recorded as a proposal (``review_details["review"]["applied"]`` is
false) for the provider's review service, which moves the money.
"""

from __future__ import annotations

import gc
import logging
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from campaigns.design.platform import BonusWanted, platform_for
from campaigns.models import (
    Assignment,
    AssignmentStatus,
    Stage,
    WorkerBlock,
)
from campaigns.work.decisions import (
    assignment_approve,
    assignment_decision_flip,
    assignment_reject,
)
from qaportal.errors import DomainError
from validation.early_stopping import hit_early_stop
from validation.gold import gold_bonus_blocks
from validation.models import ReviewRun
from validation.review_batches import BatchWriter, ReviewSummary
from validation.rules.facts import StageFacts, Submission, facts_build
from validation.rules.settings import APPROVE, BONUS_RULES, HOLD, NONE, REJECT, RULES, params_of
from validation.rules.verdicts import Review, review_prepared, rules_prepare
from validation.selectors import stage_items_by_hit, stage_submissions

logger = logging.getLogger(__name__)

DEFAULT_BATCH = 1000
# ``stage_review`` decides this many batches' worth of assignments in id order, then
# writes them in batches grouped by worker (``_by_worker``).
WINDOW_BATCHES = 10


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
    items once, then per batch of ``batch_size`` decisions (``WINDOW_BATCHES`` batches
    decided in id order, then written grouped by worker) a constant number: on
    PostgreSQL one statement that locks, writes and counts between
    the transaction's BEGIN and COMMIT; hand-offs of approvals are enqueued after
    commit. Records a ``ReviewRun``. On PostgreSQL, outside a caller's transaction,
    the batches are written by writer threads (each with its own connection, two
    batches at once) while the next ones are decided
    (``validation.review_batches.BatchWriter``).

    Locking: each batch, in its own transaction, locks its assignment rows still
    submitted in id order (as ``platforms.review`` does for several, and
    ``assignment_approve`` for one), then their workers' rows in id order (after
    the assignments, as a single decision does), and decides only rows still
    submitted once locked: a requester's concurrent decision wins, two batches
    written at once wait for each other only at their common workers, and a second
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
        # The rules run in id order (a HIT's peers together: their shared facts are
        # still in the processor's caches), ``WINDOW_BATCHES`` batches at a time; the
        # window is then written grouped by worker. Each decided row moves its worker's
        # counters (``campaigns_worker``) and per-worker summary (one delta row per
        # worker and status, written by the assignments' trigger): a batch of 1,000 in
        # id order spans ~630 of 1,000 workers, ~1,230 such rows; grouped, ~100 workers
        # and ~200 rows, and the two writer threads' batches rarely share a worker (they
        # wait for each other there). The decisions do not depend on the order: the
        # facts are the stage's, read before the first batch.
        window = batch_size * WINDOW_BATCHES
        with BatchWriter(stage=stage, summary=summary) as writer:
            for first in range(0, len(subjects), window):
                reviews = [
                    (s, review_prepared(s, facts, prepared))
                    for s in subjects[first : first + window]
                ]
                reviews.sort(key=_by_worker)
                for start in range(0, len(reviews), batch_size):
                    writer.write(reviews[start : start + batch_size])
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


def _by_worker(pair: tuple[Submission, Review]) -> tuple[int, int]:
    """A review's place in a window written grouped by worker (``_stage_review``)."""
    return (pair[0].worker_id, pair[0].id)


# --- One submission -------------------------------------------------------------------------


def assignment_review(
    *,
    assignment: Assignment,
    fresh: bool = False,
    held: dict[int, Review] | None = None,
) -> dict[int, Review]:
    """Review the submitted assignments of ``assignment``'s HIT after it was submitted.

    Facts come from that HIT's stored assignments and the worker's in the stage
    (peers, gold accuracy, "no answer" rate, duplicates among those texts: the
    stage-wide duplicate search is ``stage_review``'s). Decisions go through
    ``assignment_approve`` / ``assignment_reject``; then the worker's gold actions.
    Idempotent (decided assignments are left alone). Returns {assignment id: review}.
    ``fresh``: ``assignment`` was just read with its HIT, stage and campaign (the task
    ``validation.review_submission``), so it is not read again. ``held``: the reviews
    that decide nothing are put there (assignment id -> its latest review) for the
    caller to write once (``reviews_write``) instead of being written here
    (``assignments_review``).
    """
    if not fresh:
        assignment = Assignment.objects.select_related("hit__stage__campaign").get(pk=assignment.pk)
    stage = assignment.hit.stage
    rules = _rules(stage)
    scope = Q(hit_id=assignment.hit_id) | Q(worker_id=assignment.worker_id)
    submissions = stage_submissions(stage=stage, scope=scope, few=True)
    facts = _facts(stage, submissions, {s.hit_id for s in submissions})
    results: dict[int, Review] = {}
    prepared = rules_prepare(rules)
    if prepared:
        mine = [
            s
            for s in submissions
            if s.hit_id == assignment.hit_id and s.status == AssignmentStatus.SUBMITTED
        ]
        for sub in mine:
            results[sub.id] = review_prepared(sub, facts, prepared)
        pending: dict[int, Review] = {} if held is None else held
        for sub in mine:
            result = results[sub.id]
            if _applies(sub.provider, result):
                pending.pop(sub.id, None)  # decided now, with this review
                _apply_one(assignment_id=sub.id, result=result)
            else:
                pending[sub.id] = result
        if held is None:
            reviews_write(pending)
    gold_actions_apply(stage=stage, facts=facts, workers={assignment.worker_id})
    return results


def assignments_review(*, assignment_ids: list[int]) -> None:
    """``validation.review_submission`` for each of ``assignment_ids`` in turn (a queue
    of them drained at once: the crowd simulator's round), each review's decisions made
    as it runs; the reviews that decide nothing are written once at the end, each
    assignment's latest, instead of after each review. A HIT with many places (a
    Mintaka writing HIT has 50) reviews its submitted peers again after each submission:
    one write per peer and review made a new version of each row every time, most of a
    paper-sized dry run's writes. The stored outcome is the one of the reviews run one
    after the other (the latest review of each assignment; a decision when one decides)."""
    held: dict[int, Review] = {}
    for assignment_id in assignment_ids:
        assignment = (
            Assignment.objects.select_related("hit__stage__campaign")
            .filter(pk=assignment_id)
            .first()
        )
        if assignment is None:
            continue
        assignment_review(assignment=assignment, fresh=True, held=held)
        hit_early_stop(hit=assignment.hit)
    reviews_write(held)


def _applies(provider: str, result: Review) -> bool:
    """Whether ``result`` decides its assignment here (local workforce, approve/reject)."""
    return result.decision in (APPROVE, REJECT) and platform_for(provider).decides_at_once


def _apply_one(*, assignment_id: int, result: Review) -> None:
    now = timezone.now()
    with transaction.atomic():
        row = Assignment.objects.select_for_update().get(pk=assignment_id)
        if row.status != AssignmentStatus.SUBMITTED:
            return
        applies = platform_for(row).decides_at_once and result.decision in (APPROVE, REJECT)
        details = _details(row.review_details, result, applied=applies, now=now)
        if applies and result.decision == APPROVE:
            row = assignment_approve(assignment=row, source=result.source, reason=result.reason)
        elif applies:
            row = assignment_reject(
                assignment=row, decided_by=None, source=result.source, reason=result.reason
            )
        Assignment.objects.filter(pk=row.pk).update(review_details=details)


def reviews_write(reviews: Mapping[int, Review]) -> None:
    """Record reviews that decide nothing (hold, none, or a proposal for a paid
    provider) on their assignments still submitted: the rows locked in id order and
    written with one UPDATE, in one transaction."""
    if not reviews:
        return
    now = timezone.now()
    with transaction.atomic():
        rows = (
            Assignment.objects.select_for_update()
            .filter(pk__in=list(reviews), status=AssignmentStatus.SUBMITTED)
            .order_by("pk")
            .values_list("pk", "review_details")
        )
        written = [
            Assignment(pk=pk, review_details=_details(old, reviews[pk], applied=False, now=now))
            for pk, old in rows
        ]
        if len(written) == 1:
            Assignment.objects.filter(pk=written[0].pk).update(
                review_details=written[0].review_details
            )
        elif written:
            Assignment.objects.bulk_update(written, ["review_details"])


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
    already decided is turned over by ``campaigns.work.decisions.
    assignment_decision_flip``, which those services refuse to do: the status flips,
    the worker's counters move from one side to the other, the decision fields name
    the requester, and an approval is handed on. Confirming the same decision records
    the requester as its author. Every override is appended to
    ``review_details["overrides"]`` with the decision it replaced. Local assignments
    only (paid providers move money through their own services). Locking: the
    assignment row.
    """
    if decision not in (APPROVE, REJECT):
        raise DomainError("Decide approve or reject.", errors={"decision": [decision]})
    if decision == REJECT and not reason.strip():
        raise DomainError("A rejection needs a reason.", errors={"reason": ["required"]})
    now = timezone.now()
    with transaction.atomic():
        row = Assignment.objects.select_for_update().get(pk=assignment.pk)
        if not platform_for(row).decides_at_once:
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
            row = assignment_decision_flip(
                assignment=row,
                approve=decision == APPROVE,
                decided_by=decided_by,
                reason=reason,
                feedback=feedback,
            )
        Assignment.objects.filter(pk=row.pk).update(review_details=details)
        row.review_details = details
    return row


# --- Gold actions --------------------------------------------------------------------------


def gold_actions_apply(
    *, stage: Stage, facts: StageFacts, workers: set[int] | None = None
) -> Counter[str]:
    """Apply the stage's ``gold_disqualify`` rules and ``gold_bonus`` bonus rules to the
    workers in ``facts`` (or only ``workers``); counts of what was newly done.

    Validation decides who; the platform acts (``Platform.qualifications_revoke``,
    ``workers_block``, ``bonuses_pay``): on a paid platform each revocation, block and
    bonus is an operation the outbox carries out after commit; on the local workforce
    they are qaportal's rows and the bonuses are planned in the ledger.
    Idempotent: a revoked grant stays revoked (``revoked_at`` is set once), a
    worker is blocked once per stage rule (a block the requester lifted is not
    renewed), and a bonus has the key ``gold_bonus:stage:<s>:worker:<w>:block:<n>``.
    """
    done: Counter[str] = Counter()
    campaign = stage.campaign
    platform = platform_for(campaign)
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
            done["revoked"] += platform.qualifications_revoke(
                campaign=campaign, qualification_type_id=p["qualification"], worker_ids=failing
            )
        if p["block"]:
            tag = f"gold_disqualify stage {stage.pk}:"
            already = set(
                WorkerBlock.objects.filter(
                    requester_id=campaign.owner_id, worker_id__in=failing, reason__startswith=tag
                ).values_list("worker_id", flat=True)
            )
            reasons = {
                w: f"{tag} gold accuracy {facts.gold[(threshold, w)].correct}/"
                f"{facts.gold[(threshold, w)].total} below {p['min']:.0%}"
                for w in failing
                if w not in already
            }
            if reasons:
                done["blocked"] += platform.workers_block(campaign=campaign, reasons=reasons)
    for rule in _bonus_rules(stage):
        done["bonuses"] += _gold_bonus(stage=stage, facts=facts, rule=rule, workers=workers)
    return done


def _gold_bonus(
    *, stage: Stage, facts: StageFacts, rule: Mapping[str, Any], workers: set[int] | None
) -> int:
    p = params_of(rule, BONUS_RULES)
    amount = Decimal(str(p["amount"]))
    threshold = float(p["sentence_threshold"])
    wanted: list[BonusWanted] = []
    for (thr, worker_id), tally in sorted(facts.gold.items()):
        if thr != threshold or (workers is not None and worker_id not in workers):
            continue
        for n in gold_bonus_blocks(tally.outcomes, block=p["block"], correct=p["correct"]):
            keys = tally.keys[n * p["block"] : (n + 1) * p["block"]]
            if any(facts.submissions[a].status == AssignmentStatus.REJECTED for a, _ in keys):
                continue
            right = sum(tally.outcomes[n * p["block"] : (n + 1) * p["block"]])
            wanted.append(
                BonusWanted(
                    key=f"gold_bonus:stage:{stage.pk}:worker:{worker_id}:block:{n}",
                    assignment_id=keys[-1][0],
                    worker_id=worker_id,
                    amount=amount,
                    reason=f"gold bonus: {right} of {p['block']} gold items right (block {n + 1})",
                )
            )
    if not wanted:
        return 0
    return platform_for(stage).bonuses_pay(stage=stage, bonuses=wanted)


__all__ = [
    "HOLD",
    "NONE",
    "ReviewSummary",
    "assignment_override",
    "assignment_review",
    "gold_actions_apply",
    "stage_review",
]
