"""Reads: WhyQA's answer agreement for a sentence-selection stage (campaign page, API,
export). The measures are ``validation.answer_agreement``'s; this module loads the
answers: every stored, not rejected answer to each question the stage did not drop
(early stopping drops a question 2 of 3 workers found unanswerable, WhyQA §3.2), with
the text of its selected sentences.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable
from typing import Any

from django.db.models import Q

from campaigns.models import AssignmentStatus, Item, ItemStatus, Stage
from campaigns.tasktypes import task_type_reading
from validation.answer_agreement import Answer, AnswerAgreement, answer_agreement
from validation.projections import entries_by_item, sentence_set
from validation.selectors import stage_items_by_hit, stage_submissions


def stage_has_answer_agreement(*, stage: Stage) -> bool:
    """Whether ``stage`` collects sentence-selection answers (WhyQA's QAHIT)."""
    return task_type_reading(stage.task_type).selects_sentences


def stage_answer_agreement(*, stage: Stage, seed: int = 0) -> AnswerAgreement | None:
    """WhyQA's agreement measures over ``stage``'s answers (None for another kind of
    stage). Questions with fewer than two answers have no pair and do not count."""
    if not stage_has_answer_agreement(stage=stage):
        return None
    sentences: dict[int, list[Any]] = {
        pk: (data or {}).get("sentences") or []
        for pk, data in Item.objects.filter(stage=stage)
        .exclude(status=ItemStatus.DROPPED)
        .values_list("pk", "data")
    }
    items_by_hit = stage_items_by_hit(stage=stage)
    answers: dict[Hashable, list[Answer]] = defaultdict(list)
    for sub in stage_submissions(stage=stage, scope=~Q(status=AssignmentStatus.REJECTED)):
        refs = [
            {"id": i.id, "external_id": i.external_id} for i in items_by_hit.get(sub.hit_id, [])
        ]
        for item_id, entry in entries_by_item(sub.answers, refs).items():
            if item_id not in sentences:
                continue
            ids = sentence_set(entry)
            text = " ".join(
                str(sentences[item_id][i])
                for i in sorted(ids or ())
                if 0 <= i < len(sentences[item_id])
            )
            answers[item_id].append((ids, text))
    answered = {q: a for q, a in answers.items() if len(a) >= 2}
    return answer_agreement(answered, seed=seed)
