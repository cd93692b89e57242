"""What a dataset's documentation says about how it was made, read from the campaign
with the very selectors its dashboard uses, so the card, the Croissant file and the
datasheet show the dashboard's figures and no others:

* per stage, ``validation.selectors.stage_quality`` (the *Quality* section: stored,
  approved and rejected work, approval rate, Krippendorff's alpha, percent agreement,
  gold accuracy, median work time, effective hourly wage) and, on linking stages,
  ``linking.selectors.stage_entity_agreement``;
* money, ``campaigns.insights.money.campaign_costs`` (the *Costs* section: spent,
  committed, cost per accepted example, accepted examples); with an export, the
  accepted examples are the rows it ships and the cost per accepted example is spent
  plus committed over them (``shipped_rows``);
* protocol arms, ``campaigns.insights.arms.campaign_arm_comparison``.

Workers are counted, never named. Survey stages' choice questions are summarised as
counts per option, with counts under ``SMALL_CELL`` shown as "< 5" so no worker stands
out.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from django.db.models import Count, Max, Min

from campaigns.design.platform import platform_for
from campaigns.exports.model_loop import campaign_uses_models
from campaigns.insights.arms import ArmRow, campaign_arm_comparison
from campaigns.insights.money import CampaignCosts, campaign_costs
from campaigns.models import Assignment, AssignmentStatus, Campaign, DetachedAnswer, Stage
from campaigns.recipes import RECIPES, Recipe
from campaigns.tasktypes import task_type_get
from linking.selectors import stage_entity_agreement
from qaportal.money import CENT
from validation.selectors import StageQuality, stage_quality

SMALL_CELL = 5
# Stage settings compared with the recipe's to list deviations from the source protocol.
COMPARED = (
    "reward",
    "assignments_per_hit",
    "items_per_hit",
    "qualification_requirements",
    "review_rules",
    "escalation_rule",
    "bonus_rules",
)


@dataclass(frozen=True)
class StageFacts:
    stage: Stage
    task_label: str
    quality: StageQuality | None  # None: no stored work yet
    entity_after_2: float | None
    entity_after_3: float | None
    workers: int
    rejected_by: dict[str, int]  # decision source -> rejected assignments
    survey: dict[str, dict[str, str]]  # question -> option -> count ("< 5" when small)


@dataclass(frozen=True)
class CampaignFacts:
    campaign: Campaign
    recipe: Recipe | None
    stages: list[StageFacts]
    costs: CampaignCosts
    arms: list[ArmRow]
    workers: int  # distinct workers with stored work, all stages
    first_submission: datetime | None
    last_submission: datetime | None
    deviations: list[str] = field(default_factory=list)
    # The rows of the export these facts document (every split), when known: the
    # accepted examples it ships, over which the cost per accepted example is counted.
    shipped_rows: int | None = None
    # The workforce is paid through qaportal, or the requester pays an in-house team the
    # stages' rewards some other way (``show_reward_to_local_workers``, a planning rate):
    # rewards and wages are facts of the data; otherwise only time is.
    paid: bool = True
    # The model in the loop (``campaigns.exports.model_loop.campaign_uses_models``).
    model_loop: dict[str, Any] = field(default_factory=dict)

    @property
    def currency(self) -> str:
        return self.campaign.currency

    @property
    def accepted_examples(self) -> int:
        """The export's rows when known, else the dashboard's accepted examples (the
        approved assignments of the campaign's last stage)."""
        return self.costs.accepted_examples if self.shipped_rows is None else self.shipped_rows

    @property
    def cost_per_accepted_example(self) -> Decimal | None:
        """What was spent and committed over ``accepted_examples``."""
        if self.shipped_rows is None:
            return self.costs.cost_per_accepted_example
        if not self.shipped_rows:
            return None
        return ((self.costs.spent + self.costs.committed) / self.shipped_rows).quantize(CENT)


def _rejections(stage: Stage) -> dict[str, int]:
    rows = (
        Assignment.objects.filter(hit__stage=stage, status=AssignmentStatus.REJECTED)
        .order_by()
        .values("decision_source")
        .annotate(n=Count("id"))
    )
    return {(r["decision_source"] or "unspecified"): r["n"] for r in rows}


def _small(n: int) -> str:
    return f"< {SMALL_CELL}" if 0 < n < SMALL_CELL else str(n)


def _survey(stage: Stage) -> dict[str, dict[str, str]]:
    """Counts per option of the stage's single and multiple choice questions, from its
    stored answers (kept apart from workers on anonymous stages)."""
    questions = [
        q
        for q in (stage.config or {}).get("questions", [])
        if isinstance(q, dict) and q.get("kind") in ("single", "multiple")
    ]
    if not questions:
        return {}
    counts: dict[str, Counter[str]] = {q["id"]: Counter() for q in questions}
    detached = DetachedAnswer.objects.filter(stage=stage).values_list("answers", flat=True)
    attached = Assignment.objects.filter(
        hit__stage=stage, status__in=(AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED)
    ).values_list("answers", flat=True)
    for source in (detached, attached):
        for answers in source.iterator(chunk_size=2000):
            responses = (answers or {}).get("responses") or {}
            for qid, counter in counts.items():
                value = responses.get(qid)
                for option in value if isinstance(value, list) else [value]:
                    if isinstance(option, str) and option:
                        counter[option] += 1
    return {
        q["text"]: {option: _small(counts[q["id"]][option]) for option in q.get("options", [])}
        for q in questions
        if sum(counts[q["id"]].values())
    }


def _deviations(recipe: Recipe | None, stages: list[Stage]) -> list[str]:
    """Where the campaign's stages differ from its recipe's (the source protocol)."""
    if recipe is None:
        return []
    out = []
    by_name = {s.name: s for s in stages}
    for spec in recipe.stages:
        stage = by_name.get(spec.name)
        if stage is None:
            out.append(f"Stage '{spec.name}' of the protocol was not run.")
            continue
        for name in COMPARED:
            ours, theirs = getattr(stage, name), getattr(spec, name)
            if isinstance(theirs, Decimal):
                differs = Decimal(ours) != theirs
            else:
                differs = (ours or None) != (theirs or None)
            if differs:
                out.append(
                    f"{spec.name}: {name.replace('_', ' ')} is {_text(ours)} "
                    f"(the protocol: {_text(theirs)})."
                )
    names = {spec.name for spec in recipe.stages}
    out.extend(
        f"Stage '{s.name}' was added to the protocol." for s in stages if s.name not in names
    )
    return out


def _text(value: Any) -> str:
    if value in (None, [], {}, ""):
        return "none"
    return str(value)


def campaign_facts(*, campaign: Campaign, shipped_rows: int | None = None) -> CampaignFacts:
    """Everything the card, the Croissant file and the datasheet say about how the
    campaign's data was made (see the module docstring); ``shipped_rows``, the rows of
    the export they go with. Reads only."""
    stages = list(campaign.stages.order_by("position", "id"))
    work = Assignment.objects.filter(
        hit__stage__campaign=campaign,
        status__in=(
            AssignmentStatus.SUBMITTED,
            AssignmentStatus.APPROVED,
            AssignmentStatus.REJECTED,
        ),
    )
    per_stage_workers = dict(
        work.order_by()
        .values("hit__stage_id")
        .annotate(n=Count("worker_id", distinct=True))
        .values_list("hit__stage_id", "n")
    )
    span = work.aggregate(first=Min("submitted_at"), last=Max("submitted_at"))
    stage_facts = []
    for stage in stages:
        quality = stage_quality(stage=stage) if per_stage_workers.get(stage.pk) else None
        entity = (
            stage_entity_agreement(stage=stage)
            if quality is not None and task_type_get(stage.task_type).links_entities
            else None
        )
        stage_facts.append(
            StageFacts(
                stage=stage,
                task_label=task_type_get(stage.task_type).label,
                quality=quality,
                entity_after_2=entity.after_2 if entity else None,
                entity_after_3=entity.after_3 if entity else None,
                workers=per_stage_workers.get(stage.pk, 0),
                rejected_by=_rejections(stage),
                survey=_survey(stage),
            )
        )
    recipe = RECIPES.get(campaign.recipe)
    return CampaignFacts(
        campaign=campaign,
        recipe=recipe,
        stages=stage_facts,
        costs=campaign_costs(campaign=campaign),
        arms=campaign_arm_comparison(campaign=campaign),
        workers=work.values("worker_id").distinct().count(),
        first_submission=span["first"],
        last_submission=span["last"],
        deviations=_deviations(recipe, stages),
        shipped_rows=shipped_rows,
        paid=platform_for(campaign).moves_money
        or any(s.show_reward_to_local_workers for s in stages),
        model_loop=campaign_uses_models(campaign=campaign),
    )


def day(value: datetime | date | None) -> str:
    return value.date().isoformat() if isinstance(value, datetime) else str(value or "")
