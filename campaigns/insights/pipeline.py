"""The pipeline at a glance: a campaign's stages as a flow, with protocol arms side by side.

Stages in position order fall into segments: a stage that names no arm is a step every
worker shares; consecutive stages that name arms form one block with a column per arm
(Nangia et al.'s BASELINE / JUSTIFICATION / CROWD / EXPERT run side by side). Counts come
from ``campaign_progress``, one read for the whole campaign.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from campaigns.insights.progress import CampaignProgress, StageProgress, campaign_progress
from campaigns.models import Campaign, Stage
from campaigns.tasktypes import task_type_get
from qaportal.dbrouter import replica_reads


@dataclass
class FlowStage:
    """One stage in the flow with what the requester checks first."""

    stage_id: int
    name: str
    task_type_label: str
    next_stage_id: int | None
    items: int
    assignments_done: int
    assignments_total: int
    percent: float | None


@dataclass
class FlowSegment:
    """Either one shared stage (``stage``) or a block of arms (``arms``: arm -> stages)."""

    stage: FlowStage | None = None
    arms: dict[str, list[FlowStage]] = field(default_factory=dict)


def _flow_stage(
    *, stage_id: int, name: str, task_type: str, next_id: int | None, progress: StageProgress
) -> FlowStage:
    return FlowStage(
        stage_id=stage_id,
        name=name,
        task_type_label=task_type_get(task_type).label,
        next_stage_id=next_id,
        items=sum(progress.items.values()),
        assignments_done=progress.done,
        assignments_total=progress.total,
        percent=progress.percent_or_none,
    )


@replica_reads()
def campaign_pipeline_flow(
    *,
    campaign: Campaign,
    progress: CampaignProgress | None = None,
    stages: list[Stage] | None = None,
) -> list[FlowSegment]:
    """``campaign``'s stages as flow segments in pipeline order (see the module doc);
    ``stages``: all of the campaign's, when the caller has read them."""
    progress = progress or campaign_progress(campaign=campaign)
    by_id = {p.stage_id: p for p in progress.stages}
    if stages is None:
        stages = list(campaign.stages.order_by("position", "id"))
    else:
        stages = sorted(stages, key=lambda s: (s.position, s.pk))
    arms = _stage_arms(stages)
    segments: list[FlowSegment] = []
    for stage in stages:
        node = _flow_stage(
            stage_id=stage.pk,
            name=stage.name,
            task_type=stage.task_type,
            next_id=stage.next_stage_id,
            progress=by_id[stage.pk],
        )
        arm = arms[stage.pk]
        if not arm:
            segments.append(FlowSegment(stage=node))
            continue
        if not segments or segments[-1].stage is not None:
            segments.append(FlowSegment())
        segments[-1].arms.setdefault(arm, []).append(node)
    return segments


def _stage_arms(stages: list[Stage]) -> dict[int, str]:
    """Each stage's arm: the one its config names (as ``campaigns.workforce.arms``), else
    the one arm of the stages feeding it (an arm's grading stage, whose graders join no
    arm), else "" (shared, like a validation stage every arm feeds)."""
    own = {s.pk: str((s.config or {}).get("arm") or "") for s in stages}
    arms = dict(own)
    for stage in stages:
        if own[stage.pk]:
            continue
        feeders = {own[s.pk] for s in stages if s.next_stage_id == stage.pk}
        if len(feeders) == 1:
            arms[stage.pk] = feeders.pop()
    return arms
