"""Recipes: a published protocol's stages put into a draft campaign, and its cost at the
paper's scale.

``recipe_apply`` goes through ``stage_add`` / ``stage_link`` / ``items_upload``, so a
recipe's values are checked exactly as a requester's would be; the requester edits the
stages afterwards like any others.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db import transaction

from campaigns.models import (
    Campaign,
    CampaignState,
    QualificationKind,
    QualificationType,
    Stage,
)
from campaigns.providers import currency_for
from campaigns.recipes import Recipe, recipe_get
from campaigns.recipes.base import PAPER, PILOT, SCALES
from campaigns.services.campaigns import campaign_create, stage_add, stage_link
from campaigns.services.costs import EXPECTED_OUTPUTS_KEY, StageCost, stage_plan_cost
from campaigns.services.errors import DomainError, StateConflict
from campaigns.services.items import items_upload
from campaigns.services.quizzes import quiz_qualification_type


def _recipe(name: str) -> Recipe:
    try:
        return recipe_get(name)
    except KeyError as exc:
        raise DomainError(str(exc.args[0]), errors={"recipe": ["unknown recipe"]}) from None


def _scale(scale: str) -> str:
    if scale not in SCALES:
        raise DomainError(
            f"The scale is {PILOT} (a small pilot, the default) or {PAPER} (the paper's sizes).",
            errors={"scale": [f"one of {', '.join(SCALES)}"]},
        )
    return scale


def recipe_apply(
    *, campaign: Campaign, name: str, sample: bool = True, scale: str = PILOT
) -> list[Stage]:
    """Add recipe ``name``'s stages, links and (with ``sample``) sample items to ``campaign``.

    ``scale`` is ``pilot`` (the default: each stage's pilot overrides, a few HITs per
    cell, at the cost ``recipe_cost(scale="pilot")`` states) or ``paper`` (the sizes the
    paper ran).

    The campaign must be a draft without stages (``StateConflict`` otherwise): a recipe
    is a starting point, not something merged into a design. All or nothing: one
    transaction under the campaign's row lock. Sets ``campaign.recipe``.
    """
    recipe = _recipe(name)
    scale = _scale(scale)
    with transaction.atomic():
        locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
        if locked.state != CampaignState.DRAFT or locked.stages.exists():
            raise StateConflict(
                "A recipe goes into a draft campaign without stages; create a new campaign for it.",
                errors={"recipe": [f"campaign is {locked.state} with stages"]},
            )
        stages: dict[str, Stage] = {}
        for spec in (s.at(scale) for s in recipe.stages):
            requirements = [
                _requirement_resolved(r, stages=stages, campaign=locked)
                for r in spec.qualification_requirements
            ]
            stages[spec.name] = stage_add(
                campaign=locked,
                name=spec.name,
                task_type=spec.task_type,
                config=dict(spec.config),
                instructions=spec.instructions,
                reward=spec.reward,
                assignments_per_hit=spec.assignments_per_hit,
                items_per_hit=spec.items_per_hit,
                assignment_duration=spec.assignment_duration,
                lifetime=spec.lifetime,
                gold_ratio=spec.gold_ratio,
                qualification_requirements=requirements,
                escalation_rule=dict(spec.escalation_rule),
                review_rules=[_rule_resolved(r, stages=stages) for r in spec.review_rules],
                bonus_rules=[dict(r) for r in spec.bonus_rules],
            )
        # A round's grading stage is named in the writing stage's config.round; it is
        # added after the writing, so its id is known only now.
        for stage in stages.values():
            round_config = (stage.config or {}).get("round")
            if isinstance(round_config, dict) and isinstance(
                round_config.get("grading_stage"), str
            ):
                grading = stages[round_config["grading_stage"]].pk
                stage.config = {**stage.config, "round": {**round_config, "grading_stage": grading}}
                Stage.objects.filter(pk=stage.pk).update(config=stage.config)
        for spec in recipe.stages:
            if spec.feeds is not None:
                stage_link(
                    stage=stages[spec.name],
                    next_stage=stages[spec.feeds],
                    handoff=dict(spec.handoff),
                )
        if sample:
            for stage_name, rows in recipe.sample_items.items():
                content = "\n".join(json.dumps(row, ensure_ascii=False) for row in rows)
                items_upload(
                    stage=stages[stage_name],
                    content=content.encode(),
                    filename=f"{recipe.name}-sample.jsonl",
                )
        locked.recipe = recipe.name
        locked.save(update_fields=["recipe", "updated_at"])
    return [stages[spec.name] for spec in recipe.stages]


def _requirement_resolved(
    req: dict[str, Any], *, stages: dict[str, Stage], campaign: Campaign
) -> dict[str, Any]:
    """A recipe's requirement with stage names made ids (``quiz_stage``, ``round_stage``,
    ``graders_stage`` name an earlier stage of the recipe) and ``{"qualification":
    name}`` made the owner's manual qualification type of that name (created empty: the
    requester grants it, e.g. to their expert graders)."""
    out = dict(req)
    for key in ("quiz_stage", "round_stage", "graders_stage"):
        if isinstance(out.get(key), str):
            out[key] = stages[out[key]].pk
    if "qualification" in out:
        qt, _ = QualificationType.objects.get_or_create(
            owner_id=campaign.owner_id,
            name=str(out.pop("qualification"))[:120],
            defaults={"kind": QualificationKind.MANUAL},
        )
        out["qualification_type_id"] = qt.pk
    return out


def _rule_resolved(rule: dict[str, Any], *, stages: dict[str, Stage]) -> dict[str, Any]:
    """A recipe's review rule with ``quiz_stage`` (an earlier quiz stage's name) made
    ``qualification``: the id of the qualification that quiz grants."""
    out = dict(rule)
    if isinstance(out.get("quiz_stage"), str):
        quiz = stages[out.pop("quiz_stage")]
        out["qualification"] = quiz_qualification_type(stage=quiz).pk
    return out


def campaign_create_with_recipe(
    *, owner: Any, recipe: str = "", sample: bool = True, scale: str = PILOT, **fields: Any
) -> Campaign:
    """Create a draft campaign (``campaign_create`` with ``fields``) and, when ``recipe``
    is given, put the recipe's stages into it at ``scale``; both or neither (one
    transaction)."""
    with transaction.atomic():
        campaign = campaign_create(owner=owner, **fields)
        if recipe:
            recipe_apply(campaign=campaign, name=recipe, sample=sample, scale=scale)
            campaign.refresh_from_db()
    return campaign


@dataclass(frozen=True)
class RecipeCost:
    recipe: str
    provider: str
    scale: str
    currency: str
    stages: list[StageCost]
    total_rewards: Decimal
    total_fees: Decimal
    total: Decimal


def recipe_paper_cost(*, name: str, provider: str) -> RecipeCost:
    """``recipe_cost`` at the paper's scale."""
    return recipe_cost(name=name, provider=provider, scale=PAPER)


def recipe_cost(*, name: str, provider: str, scale: str = PILOT) -> RecipeCost:
    """What recipe ``name`` costs at ``scale`` on ``provider`` (rewards and fees).

    A stage's items are its items at that scale (``StageSpec.items_at``), or for a fed
    stage the feeding stage's assignments x its ``expected_outputs_per_assignment``
    (rounded up). Escalations, extensions and bonuses are not included, as in
    ``stage_cost_estimate``. Reads nothing from the database.
    """
    recipe = _recipe(name)
    scale = _scale(scale)
    produced: dict[str, int] = {}
    costs: list[StageCost] = []
    for base in recipe.stages:
        spec = base.at(scale)
        own = base.items_at(scale)
        items = own if own is not None else produced.get(spec.name, 0)
        cost = stage_plan_cost(
            name=spec.name,
            reward=spec.reward,
            assignments_per_hit=spec.assignments_per_hit,
            items_per_hit=spec.items_per_hit,
            items=items,
            provider=provider,
        )
        costs.append(cost)
        per_assignment = spec.config.get(EXPECTED_OUTPUTS_KEY)
        if spec.feeds is not None and per_assignment is not None:
            produced[spec.feeds] = produced.get(spec.feeds, 0) + math.ceil(
                cost.assignments * Decimal(str(per_assignment))
            )
    rewards = sum((c.rewards for c in costs), Decimal("0.00"))
    fees = sum((c.fees for c in costs), Decimal("0.00"))
    return RecipeCost(
        recipe=recipe.name,
        provider=provider,
        scale=scale,
        currency=currency_for(provider),
        stages=costs,
        total_rewards=rewards,
        total_fees=fees,
        total=rewards + fees,
    )
