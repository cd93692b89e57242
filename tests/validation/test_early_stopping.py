"""Issue 35, point 9 (WhyQA §2.2.2-2.2.3): a question dropped by early stopping (2 of 3
answers say "no answer") reaches no rephrasing, even when an answerable answer to it
was approved and handed on before the other two came in."""

from __future__ import annotations

import pytest

from campaigns.models import AssignmentStatus, Item, ItemStatus, Stage
from campaigns.work.handoff import handoffs_run
from tests.validation.db_helpers import hits, make_stage, submit, worker
from validation.early_stopping import DROPPED, hit_early_stop

pytestmark = pytest.mark.django_db

NO_ANSWER = {"sentences": [], "no_answer": True}
ANSWER = {"sentences": [1], "no_answer": False}


def test_what_an_early_answer_handed_on_is_dropped_with_its_question():
    answering = make_stage(
        items=1,
        task_type="sentence_selection_answer",
        data=lambda n: {"question": f"Why {n}?", "sentences": ["A.", "B.", "C."]},
        escalation_rule={"rule": "early_stop", "first": 3, "drop_if_no_answer": 2, "extend_to": 8},
    )
    # Rephrasing HITs of five questions: a lone question waits for its HIT.
    rephrasing = Stage.objects.create(
        campaign=answering.campaign,
        name="Rephrase",
        position=1,
        task_type="rephrase",
        items_per_hit=5,
    )
    answering.next_stage = rephrasing
    answering.save()
    (hit,) = hits(answering)
    early = submit(hit, worker("a0"), ANSWER, status=AssignmentStatus.APPROVED)
    assert handoffs_run(assignment_ids=[early.pk]) == 1
    handed = Item.objects.get(stage=rephrasing)
    assert handed.status == ItemStatus.PENDING
    submit(hit, worker("a1"), NO_ANSWER)
    submit(hit, worker("a2"), NO_ANSWER)
    assert hit_early_stop(hit=hit) == DROPPED
    handed.refresh_from_db()
    assert handed.status == ItemStatus.DROPPED
