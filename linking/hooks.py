"""The two calls the campaign services make into linking, cheap for every other stage:
they look at the stage row they already hold and enqueue a task after commit.

- ``stage_published(stage=...)``: at the end of ``stage_publish`` (HITs made),
  prepares the linking stage (``linking.prefetch_stage``).
- ``answer_stored(stage=..., hit_id=...)``: at the end of a successful submit,
  judges entity agreement on the HIT (``linking.entity_agreement_check``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from linking.agreement import EscalationRule

if TYPE_CHECKING:
    from campaigns.models import Stage

LINKING_TASK_TYPES = frozenset({"answer_entity_linking", "question_entity_linking"})


def stage_published(*, stage: Stage) -> None:
    """Enqueue ``linking.prefetch_stage`` after commit when ``stage`` is a linking stage."""
    if stage.task_type in LINKING_TASK_TYPES:
        from linking.tasks import prefetch_stage_task

        prefetch_stage_task.delay_on_commit(stage.pk)


def answer_stored(*, stage: Stage, hit_id: int) -> None:
    """Enqueue ``linking.entity_agreement_check`` after commit when ``stage`` is a
    linking stage with an ``entity_agreement`` escalation rule."""
    if stage.task_type in LINKING_TASK_TYPES and EscalationRule.from_json(stage.escalation_rule):
        from linking.tasks import entity_agreement_check_task

        entity_agreement_check_task.delay_on_commit(hit_id)
