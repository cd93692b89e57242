"""Quality numbers of a campaign's stages for the detail page, from
``validation.selectors.stage_quality`` and, on linking stages,
``linking.selectors.stage_entity_agreement``.

Computed once per stage (a constant handful of queries each), never per row, and
only for stages with assignments: an empty stage has nothing to measure.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from campaigns.models import Stage
from linking.hooks import LINKING_TASK_TYPES
from linking.selectors import stage_entity_agreement
from validation.selectors import stage_quality


def stage_quality_rows(stages: Iterable[Stage]) -> list[dict[str, Any]]:
    """``[{"stage", "quality": StageQuality, "entity": linking AgreementSummary | None}]``
    for the stages with stored work; ``stages`` carry ``assignment_count``
    (``campaigns.selectors.stage_list_with_counts``)."""
    rows = []
    for stage in stages:
        if not getattr(stage, "assignment_count", 0):
            continue
        quality = stage_quality(stage=stage)
        if not quality.assignments:
            continue
        entity = (
            stage_entity_agreement(stage=stage) if stage.task_type in LINKING_TASK_TYPES else None
        )
        rows.append({"stage": stage, "quality": quality, "entity": entity})
    return rows
