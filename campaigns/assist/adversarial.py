"""Adversarial writing (issue 38, after Dynabench): the worker writes a question and its
answer, a model answers it, the worker (or the app) judges, up to ``max_tries`` tries;
claimed fools go to a validation stage, and verified fools earn a bonus.

- ``adversarial_try_make``: the worker's question and answer are stored as a try in the
  same transaction as the model call asking about it (``model_call_request``); the model
  answers off the request path and ``judging.adversarial_try_settle`` records its answer
  (and, where the app can judge, whether it was fooled).
- ``adversarial_try_mark``: the worker says whether the model's answer is right.
- ``adversarial_answer_stored`` (on ``answer_stored``): what the writer claimed is added to
  the stored answer under ``"adversarial"``, for the hand-off to the validation stage.
- ``adversarial_fools_verify`` (on ``answer_stored`` of a ``verifies_fools`` stage): once
  all of an item's validators have answered, the majority confirms the fool or not, and
  the writing stage's ``verified_fool`` bonus rule pays a confirmed one through the
  platform's bonus door (``Platform.bonuses_pay``), once per try (key
  ``adversarial_fool:<try id>``).

Locking: a try is made with the assignment row locked (tries are numbered under it);
verification locks the try rows it sets.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from django.db import transaction
from django.utils import timezone

from campaigns.assist.calls import model_call_request
from campaigns.assist.selectors import (
    adversarial_tries,
    assignment_try_rows,
    tries_allow,
    try_views,
)
from campaigns.design.platform import BonusWanted, platform_for
from campaigns.models import (
    AdversarialJudge,
    AdversarialTry,
    Assignment,
    AssignmentStatus,
    ModelCallPurpose,
    Provider,
    Stage,
)
from campaigns.tasktypes import TaskType, task_type_get
from campaigns.tasktypes.base import adversarial_config, answer_for_item
from campaigns.work.selectors.loading import hit_items
from campaigns.work.selectors.next_hit import assignment_is_current
from campaigns.work.submission import SubmitRefusedError
from qaportal.errors import DomainError

BONUS_RULE = "verified_fool"
STORED = (AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED, AssignmentStatus.REJECTED)


@dataclass
class TryOutcome:
    """What a try came to: the try made, or the answer as parsed with its errors."""

    attempt: AdversarialTry | None
    answer: Any
    errors: dict[str, str] = field(default_factory=dict)


def adversarial_try_make(*, assignment: Assignment, form: Mapping[str, Any]) -> TryOutcome:
    """Store the worker's question and answer (the posted ``form``) as the next try of
    ``assignment``'s first item and ask the stage's model about it, in one transaction.

    The answer is checked as a submission would be (errors: nothing stored). Refused
    (``DomainError``) when the stage has no adversarial option, the assignment is not
    current, a try is still waiting for the model, the model was fooled already or the
    tries are used up. If the model cannot be asked at all (the endpoint was removed or
    is not the campaign owner's), the try is stored as "model unavailable"."""
    stage = assignment.hit.stage
    cfg = adversarial_config(stage.config)
    if cfg is None:
        raise DomainError("This task does not put questions to a model.")
    task_type = task_type_get(stage.task_type)
    items = hit_items(hit=assignment.hit)
    answer = task_type.parse_form(form=form, items=items, config=stage.config)
    problems = task_type.validate_answer(answer=answer, items=items, config=stage.config)
    if problems:
        return TryOutcome(None, answer, {p.path: p.message for p in problems})
    item = items[0]
    entry = task_type.adversarial_entry(
        entry=answer_for_item(answer, item) or {}, data=item["data"]
    )
    question, context = task_type.adversarial_question(entry=entry, data=item["data"])
    with transaction.atomic():
        locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
        if not assignment_is_current(locked):
            raise DomainError("This task is closed: it was returned or its time ran out.")
        tries = adversarial_tries(assignment_id=locked.pk)
        allowed = tries_allow(tries=tries, cfg=cfg)
        if not allowed.may_try:
            raise DomainError(allowed.why_not or "No more tries.")
        # The call first, so that the try is written once, with its call or marked
        # "model unavailable" when the model cannot be asked at all.
        try_number = len(tries) + 1
        try:
            call = model_call_request(
                endpoint_id=int(cfg["endpoint"]),
                purpose=ModelCallPurpose.ADVERSARIAL,
                item_id=item["id"],
                assignment_id=locked.pk,
                try_number=try_number,
                question=question,
                context=context,
            )
        except DomainError:
            call = None
        attempt = AdversarialTry.objects.create(
            assignment=locked,
            item_id=item["id"],
            stage=stage,
            worker_id=locked.worker_id,
            try_number=try_number,
            question=question,
            entry=entry,
            model_call=call,
            model_unavailable=call is None,
            judged_by=AdversarialJudge.NONE if call is None else "",
            judged_at=timezone.now() if call is None else None,
        )
    return TryOutcome(attempt, answer)


def adversarial_try_mark(
    *, assignment: Assignment, try_number: int, model_right: bool
) -> AdversarialTry:
    """The worker's judgement of try ``try_number``: the model's answer is right or
    wrong ("model fooled"). Only on a try the model answered and the app did not judge;
    marking the same way again changes nothing. Locks the try's row."""
    with transaction.atomic():
        attempt = (
            AdversarialTry.objects.select_for_update()
            .filter(assignment_id=assignment.pk, try_number=try_number)
            .first()
        )
        if attempt is None:
            raise DomainError("No such try.", errors={"try": [str(try_number)]})
        if attempt.judged_by == AdversarialJudge.WORKER and attempt.fooled == (not model_right):
            return attempt
        if attempt.judged_by or not attempt.model_answer:
            raise DomainError("This try cannot be marked.", errors={"try": [str(try_number)]})
        if assignment.status != AssignmentStatus.ACCEPTED:
            raise DomainError("This task is closed.")
        attempt.fooled = not model_right
        attempt.judged_by = AdversarialJudge.WORKER
        attempt.judged_at = timezone.now()
        attempt.save(update_fields=["fooled", "judged_by", "judged_at"])
    return attempt


def claimed_record(rows: list[dict[str, Any]], *, assignment_id: int) -> dict[str, Any] | None:
    """What a writer claims for an item, from its tries' rows (``adversarial_try_rows``,
    in order): the first try that fooled the model, else the last try (None: no try)."""
    if not rows:
        return None
    chosen = next((r for r in rows if r["fooled"] is True), rows[-1])
    return {
        "try": chosen["try_number"],
        "tries": len(rows),
        "assignment": assignment_id,
        "item": chosen["item_id"],
        "question": chosen["question"],
        "sentences": list(chosen["entry"].get("sentences", [])),
        "entry": chosen["entry"],
        "model_answer": chosen["model_answer"],
        "model_id": chosen["model_call__model_id"] or "",
        "model_version": chosen["model_call__model_version"] or "",
        "model_unavailable": chosen["model_unavailable"],
        "judged_by": chosen["judged_by"],
        "fooled": chosen["fooled"],
    }


# The workforces whose work page shows the panel (frontend.worker.adversarial.ENTRIES):
# their workers ask the model before submitting. MTurk's framed page, with no session,
# has no try routes: its workers go on without the model.
PANEL_PROVIDERS = frozenset({Provider.LOCAL, Provider.PROLIFIC})


def adversarial_submit_check(*, assignment: Assignment, stage: Stage, **_: Any) -> None:
    """``answer_submitting``'s handler: on an adversarial stage, refuse the submission
    while the tries do not allow it (no try yet, the model's answer awaited or
    unmarked). Other stages cost nothing: their config, loaded with the locked
    assignment, says they are not adversarial."""
    cfg = adversarial_config(stage.config)
    if cfg is None or assignment.provider not in PANEL_PROVIDERS:
        return
    tries = try_views(assignment_try_rows(assignment=assignment))
    allow = tries_allow(tries=tries, cfg=cfg)
    if not allow.may_submit:
        raise SubmitRefusedError(allow.why_not or "Ask the model your question first.")


def adversarial_answer_stored(
    *, assignment: Assignment, stage: Stage, task_type: TaskType, **_: Any
) -> None:
    """(``answer_stored``, in the submission's transaction) Add what the writer claimed,
    per item, to the stored answer under ``"adversarial"``; fools are verified later."""
    if not task_type.writes_adversarially or adversarial_config(stage.config) is None:
        return
    if not isinstance(assignment.answers, dict) or assignment.answers.get("detached"):
        return
    # The rows the submission's check read (the assignment's row is locked since).
    rows = assignment_try_rows(assignment=assignment)
    external_ids = {item["id"]: item["external_id"] for item in hit_items(hit=assignment.hit)}
    by_item: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        by_item.setdefault(row["item_id"], []).append(row)
    claimed = {}
    for item_id, item_rows in by_item.items():
        record = claimed_record(item_rows, assignment_id=assignment.pk)
        if record is not None and item_id in external_ids:
            claimed[external_ids[item_id]] = record
    assignment.answers = {**assignment.answers, "adversarial": claimed}
    Assignment.objects.filter(pk=assignment.pk).update(answers=assignment.answers)


def bonus_rule_amount(stage: Stage) -> Decimal | None:
    """The writing stage's ``verified_fool`` bonus (None: no such rule)."""
    for rule in stage.bonus_rules or []:
        if isinstance(rule, dict) and rule.get("rule") == BONUS_RULE:
            try:
                return Decimal(str(rule.get("amount")))
            except (InvalidOperation, ValueError):
                return None
    return None


def bonus_rules_validate(rules: Any) -> list[str]:
    """Problems with ``verified_fool`` bonus rules (``{"rule", "amount"}``, amount > 0)."""
    problems = []
    for rule in rules if isinstance(rules, list) else []:
        if not isinstance(rule, dict) or rule.get("rule") != BONUS_RULE:
            continue
        extra = sorted(set(rule) - {"rule", "amount"})
        if extra:
            problems.append(f"{BONUS_RULE}: unknown keys {', '.join(extra)}")
        try:
            amount = Decimal(str(rule.get("amount")))
        except (InvalidOperation, ValueError):
            amount = Decimal("0")
        if not amount.is_finite() or amount <= 0 or amount != amount.quantize(Decimal("0.01")):
            problems.append(f"{BONUS_RULE}: amount must be a positive sum in cents")
    return problems


def adversarial_fools_verify(
    *, assignment: Assignment, stage: Stage, task_type: TaskType, **_: Any
) -> list[int]:
    """(``answer_stored`` of a ``verifies_fools`` stage) For each item of the stored
    validation whose validators have all answered, confirm the claimed fool by the
    majority ("fooled" from more than half) and pay a confirmed one the writing stage's
    ``verified_fool`` bonus once. Returns the ids of the tries verified now."""
    if not task_type.verifies_fools:
        return []
    done = []
    for item in hit_items(hit=assignment.hit):
        source = item["data"].get("source") or {}
        if not source.get("assignment") or not source.get("try"):
            continue
        verdicts = []
        answers = Assignment.objects.filter(
            hit__items__pk=item["id"], status__in=STORED
        ).values_list("answers", flat=True)
        for answer in answers:
            verdict = task_type.fool_verdict(answer_for_item(answer, item))
            if verdict is not None:
                verdicts.append(verdict)
        if len(verdicts) < max(1, stage.assignments_per_hit):
            continue
        verified = sum(verdicts) * 2 > len(verdicts)
        attempt = _verify(
            assignment_id=int(source["assignment"]), try_number=int(source["try"]), ok=verified
        )
        if attempt is not None:
            done.append(attempt.pk)
    return done


def _verify(*, assignment_id: int, try_number: int, ok: bool) -> AdversarialTry | None:
    with transaction.atomic():
        attempt = (
            AdversarialTry.objects.select_for_update(of=("self",))
            .select_related("stage__campaign", "assignment")
            .filter(assignment_id=assignment_id, try_number=try_number)
            .first()
        )
        if attempt is None or attempt.verified is not None:
            return None
        attempt.verified = ok
        attempt.verified_at = timezone.now()
        attempt.save(update_fields=["verified", "verified_at"])
        amount = bonus_rule_amount(attempt.stage)
        if ok and attempt.fooled and amount:
            platform_for(attempt.stage).bonuses_pay(
                stage=attempt.stage,
                bonuses=[
                    BonusWanted(
                        key=f"adversarial_fool:{attempt.pk}",
                        assignment_id=attempt.assignment_id,
                        worker_id=attempt.worker_id,
                        amount=amount,
                        reason="Your question fooled the model (confirmed by validators).",
                    )
                ],
            )
    return attempt
