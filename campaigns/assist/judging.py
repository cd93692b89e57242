"""Judging a try of adversarial writing once the model has answered (issue 38).

``adversarial_try_settle`` runs in the transaction that finishes the model call (the
call row locked first, then the try's): it copies the model's answer onto the try and,
where the stage lets the app judge and the task type can compare the answers
(``TaskType.model_answer_judge``: sentence ids, entity ids, numbers, dates, options),
records whether the model was fooled. Otherwise the worker marks it
(``adversarial.adversarial_try_mark``). A call that ends unavailable marks the try
``model_unavailable``: the worker goes on without the check.
"""

from __future__ import annotations

from django.utils import timezone

from campaigns.models import (
    AdversarialJudge,
    AdversarialTry,
    ModelCall,
    ModelCallPurpose,
    ModelCallStatus,
)
from campaigns.tasktypes import task_type_get
from campaigns.tasktypes.base import adversarial_config


def adversarial_try_settle(*, call: ModelCall) -> AdversarialTry | None:
    """Record call ``call``'s outcome on its adversarial try (None: no such try, or the
    call is not final). Idempotent: a try already judged keeps its judgement. Locks the
    try's row; the caller holds the call's."""
    if call.purpose != ModelCallPurpose.ADVERSARIAL or call.status not in (
        ModelCallStatus.DONE,
        ModelCallStatus.UNAVAILABLE,
    ):
        return None
    attempt = (
        AdversarialTry.objects.select_for_update(of=("self",))
        .select_related("item", "stage")
        .filter(model_call_id=call.pk)
        .first()
    )
    if attempt is None or attempt.judged_by:
        return attempt
    now = timezone.now()
    if call.status == ModelCallStatus.UNAVAILABLE:
        attempt.model_unavailable = True
        attempt.judged_by = AdversarialJudge.NONE
        attempt.judged_at = now
        attempt.save(update_fields=["model_unavailable", "judged_by", "judged_at"])
        return attempt
    attempt.model_answer = call.answer
    attempt.model_unavailable = False
    fields = ["model_answer", "model_unavailable"]
    cfg = adversarial_config(attempt.stage.config) or {}
    if cfg.get("judge", "auto") == "auto":
        right = task_type_get(attempt.stage.task_type).model_answer_judge(
            entry=attempt.entry, data=attempt.item.data, model_answer=call.answer
        )
        if right is not None:
            attempt.fooled = not right
            attempt.judged_by = AdversarialJudge.AUTO
            attempt.judged_at = now
            fields += ["fooled", "judged_by", "judged_at"]
    attempt.save(update_fields=fields)
    return attempt
