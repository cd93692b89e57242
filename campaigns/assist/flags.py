"""Answers a model wrote, flagged (issue 38, item 3).

A stage whose task type writes free text (``TaskType.writes_free_text``) may set
``config["llm_flag"] = {"endpoint": <model endpoint id>, "threshold": 0.6}``. Then:

1. ``llm_flags_request`` (on ``answer_stored``, in the submit's transaction, through
   ``campaigns.subscriptions``) asks the endpoint the same task for each item of the HIT
   the worker wrote text for (``TaskType.model_task``): one ``ModelCall`` of purpose
   ``llm_flag`` per (assignment, item), off the request path. Nothing waits on it.
2. ``llm_flag_record`` (after each such call is final: ``assist.model_call_run`` and the
   reconcile task call ``llm_flag_after_call``) scores each item with
   ``validation.llm_flag.llm_flag`` once all of the assignment's calls are final, and
   stores the combined flag with its evidence on ``Assignment.llm_flag``. When the stage
   has the ``llm_flag`` review rule, the assignment's HIT is reviewed again
   (``validation.review_submission``), so an answer held waiting for its flag is let go
   when the flag is clear.

A flag never rejects: the ``llm_flag`` rule can only hold (``validation.rules``).
Locking: ``llm_flag_record`` locks the assignment row while it writes the flag.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.utils import timezone

from campaigns.assist.calls import model_call_request
from campaigns.models import Assignment, ModelCall, ModelCallPurpose, ModelCallStatus, Stage
from campaigns.tasktypes import task_type_get
from campaigns.tasktypes.base import LLM_FLAG_KEY, TaskType, answer_for_item
from campaigns.work.selectors.loading import hit_items
from qaportal.errors import DomainError
from qaportal.outbox import task_after_commit
from validation.llm_flag import DEFAULT_THRESHOLD, flags_combine, llm_flag
from validation.projections import entry_texts

logger = logging.getLogger(__name__)

PURPOSE = ModelCallPurpose.LLM_FLAG.value
FINAL = (ModelCallStatus.DONE, ModelCallStatus.UNAVAILABLE)


def llm_flag_settings(*, stage: Stage) -> dict[str, Any] | None:
    """The stage's ``llm_flag`` setting with its default threshold, or None when off."""
    value = (stage.config or {}).get(LLM_FLAG_KEY)
    if not isinstance(value, Mapping) or not value.get("endpoint"):
        return None
    return {
        "endpoint": int(value["endpoint"]),
        "threshold": float(value.get("threshold", DEFAULT_THRESHOLD)),
    }


def _item_texts(task_type: TaskType, answers: Any, item: Mapping[str, Any]) -> list[str]:
    return entry_texts(answer_for_item(answers, item), fields=task_type.text_fields)


def llm_flags_request(*, assignment: Assignment, stage: Stage, task_type: TaskType) -> list[int]:
    """Ask the stage's model the same task for each item ``assignment`` wrote text for
    (in the caller's transaction; the calls run after commit). Returns the calls' ids.

    Nothing when the stage does not ask for the flag or the task type writes no free
    text. An answer with no text gets its flag at once (``status`` "no_text"); an
    endpoint the campaign may not use is logged and gives ``status`` "endpoint_refused":
    the worker's submission never fails for the flag. Idempotent (the calls' keys).
    """
    settings = llm_flag_settings(stage=stage)
    if settings is None or not task_type.writes_free_text:
        return []
    call_ids: list[int] = []
    for item in hit_items(hit=assignment.hit):
        if not _item_texts(task_type, assignment.answers, item):
            continue
        question, context = task_type.model_task(data=item["data"] or {}, config=stage.config)
        try:
            call = model_call_request(
                endpoint_id=settings["endpoint"],
                purpose=PURPOSE,
                item_id=item["id"],
                assignment_id=assignment.pk,
                question=question,
                context=context,
            )
        except DomainError as refused:
            logger.warning("llm flag: stage %s endpoint refused: %s", stage.pk, refused)
            _flag_write(assignment.pk, {"status": "endpoint_refused", "flagged": False})
            return []
        call_ids.append(call.pk)
    if not call_ids:
        _flag_write(assignment.pk, {**flags_combine([]), "at": timezone.now().isoformat()})
    return call_ids


def _flag_write(assignment_id: int, flag: dict[str, Any]) -> None:
    Assignment.objects.filter(pk=assignment_id).update(llm_flag=flag)


def _stage_has_rule(stage: Stage) -> bool:
    rules = stage.review_rules if isinstance(stage.review_rules, list) else []
    return any(isinstance(r, Mapping) and r.get("rule") == "llm_flag" for r in rules)


def llm_flag_record(*, assignment_id: int) -> dict[str, Any] | None:
    """Score and store ``assignment_id``'s flag once all its ``llm_flag`` calls are final.

    Each item's text is compared with its call's answer (a call the model could not
    answer gives that item ``status`` "model_unavailable", never flagged); the flag
    keeps per item the score, its components, the thresholds, the model's text and
    its id and version. Returns the stored flag, or None while calls are pending.
    Idempotent: recomputed from the same rows gives the same flag (``at`` aside).
    """
    calls = list(
        ModelCall.objects.filter(assignment_id=assignment_id, purpose=PURPOSE).order_by(
            "item_id", "try_number"
        )
    )
    if not calls or any(c.status not in FINAL for c in calls):
        return None
    assignment = Assignment.objects.select_related("hit__stage").get(pk=assignment_id)
    stage = assignment.hit.stage
    task_type = task_type_get(stage.task_type)
    settings = llm_flag_settings(stage=stage) or {"threshold": DEFAULT_THRESHOLD}
    items = {item["id"]: item for item in hit_items(hit=assignment.hit)}
    per_item = []
    for call in calls:
        item = items.get(call.item_id)
        texts = _item_texts(task_type, assignment.answers, item) if item else []
        model = {
            "call": call.pk,
            "model_id": call.model_id,
            "model_version": call.model_version,
            "item": item["external_id"] if item else "",
        }
        if call.status != ModelCallStatus.DONE:
            per_item.append(
                {"status": "model_unavailable", "flagged": False, "score": None, **model}
            )
            continue
        flag = llm_flag(
            worker_texts=texts,
            model_text=call.answer,
            telemetry=assignment.telemetry,
            threshold=settings["threshold"],
        )
        per_item.append({**flag, **model})
    flag = {**flags_combine(per_item), "at": timezone.now().isoformat()}
    with transaction.atomic():
        Assignment.objects.select_for_update().filter(pk=assignment_id).first()
        _flag_write(assignment_id, flag)
        if _stage_has_rule(stage):
            task_after_commit("validation.review_submission", assignment_id)
    return flag


def llm_flag_after_call(*, call: ModelCall | None) -> dict[str, Any] | None:
    """After a model call ran: record its assignment's flag if it was the last of its
    ``llm_flag`` calls to become final (for the Celery tasks)."""
    if (
        call is None
        or call.purpose != PURPOSE
        or call.status not in FINAL
        or call.assignment_id is None
    ):
        return None
    return llm_flag_record(assignment_id=call.assignment_id)


def llm_flags_reconcile(*, limit: int = 200) -> list[int]:
    """Record the flags a lost run left unrecorded (for beat): assignments without a
    flag whose ``llm_flag`` calls are all final. Returns the assignments recorded."""
    waiting = (
        ModelCall.objects.filter(
            purpose=PURPOSE, assignment__isnull=False, assignment__llm_flag__isnull=True
        )
        .values_list("assignment_id", flat=True)
        .distinct()[: limit * 4]
    )
    pending = set(
        ModelCall.objects.filter(purpose=PURPOSE, assignment_id__in=list(waiting))
        .exclude(status__in=FINAL)
        .values_list("assignment_id", flat=True)
    )
    recorded = []
    for assignment_id in sorted(set(waiting) - pending)[:limit]:
        if llm_flag_record(assignment_id=assignment_id) is not None:
            recorded.append(assignment_id)
    return recorded
