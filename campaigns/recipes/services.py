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
from decimal import ROUND_CEILING, Decimal, InvalidOperation
from typing import Any

from django.db import transaction

from campaigns.assist.endpoints import model_endpoint_baseline
from campaigns.design.items import items_upload
from campaigns.design.platform import platform_for
from campaigns.design.services import campaign_create, stage_add, stage_link
from campaigns.models import (
    Campaign,
    CampaignState,
    QualificationKind,
    QualificationType,
    Stage,
)
from campaigns.payments.costs import EXPECTED_OUTPUTS_KEY, StageCost, stage_plan_cost
from campaigns.payments.currency import Conversion, usd_conversion
from campaigns.platforms import currency_for
from campaigns.recipes import Recipe, recipe_get
from campaigns.recipes.base import PAPER, PILOT, SCALES, StageSpec
from campaigns.workforce.qualification_types import quiz_qualification_type
from qaportal.errors import DomainError, StateConflict
from qaportal.money import CENT

# Hand-off keys a recipe fills with a stage's name (made its id when applied).
STAGE_NAME_KEYS = frozenset({"unlinked_to", "translate_to"})


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


def _reward_at_minimum(
    *, provider: str, currency: str, reward: Decimal, config: dict[str, Any], spec_duration: Any
) -> Decimal:
    """The paper's reward, or the platform's minimum for the stage's estimated minutes
    when the paper's is below it (a quiz or a grading stage paying nothing included, on
    a platform that pays every task). A raise is noted in ``config["reward_raised"]``
    (the paper's amount, the minimum, the minutes): docs/recipes.md lists them."""
    rules = platform_for(provider).rules()
    check = rules.pay_check(
        reward=reward, currency=currency, config=config, assignment_duration=spec_duration
    )
    if not check.below_minimum or check.minimum_hourly is None:
        return reward
    least = (check.minimum_hourly * check.estimated_minutes / 60).quantize(
        CENT, rounding=ROUND_CEILING
    )
    config["reward_raised"] = {
        "paper": str(reward),
        "to": str(least),
        "currency": currency,
        "minimum_hourly": str(check.minimum_hourly),
        "estimated_minutes": check.estimated_minutes,
        "platform": rules.name,
    }
    return least


def _priced(
    spec: StageSpec, *, provider: str, currency: str, conversion: Conversion | None
) -> tuple[Decimal, dict[str, Any], list[dict[str, Any]]]:
    """The reward, config and bonus rules stage ``spec`` is loaded with on ``provider``
    paying in ``currency``: converted from dollars (``conversion``), then raised to the
    platform's hourly minimum (``_reward_at_minimum``). ``recipe_apply`` loads them and
    ``recipe_cost`` prices them, so a quote is what the loaded campaign estimates."""
    config = dict(spec.config)
    reward = spec.reward
    bonus_rules = [dict(r) for r in spec.bonus_rules]
    if spec.estimated_minutes is not None:
        config.setdefault("estimated_minutes", spec.estimated_minutes)
    if conversion is not None:
        reward = conversion.convert(spec.reward)
        bonus_rules = [_rule_converted(r, conversion) for r in bonus_rules]
        config["priced_in"] = {**conversion.as_dict(), "reward": str(spec.reward)}
        if "pass_bonus" in config:
            config["pass_bonus"] = str(conversion.convert(Decimal(str(config["pass_bonus"]))))
    reward = _reward_at_minimum(
        provider=provider,
        currency=currency,
        reward=reward,
        config=config,
        spec_duration=spec.assignment_duration,
    )
    return reward, config, bonus_rules


def _model_endpoint_resolved(config: dict[str, Any], *, campaign: Campaign) -> dict[str, Any]:
    """A stage's ``adversarial`` option without an endpoint gets the campaign owner's
    built-in baseline (registered on first use)."""
    adversarial = config.get("adversarial")
    if not isinstance(adversarial, dict) or "endpoint" in adversarial:
        return config
    endpoint = model_endpoint_baseline(owner=campaign.owner)
    return {**config, "adversarial": {**adversarial, "endpoint": endpoint.pk}}


def recipe_apply(
    *,
    campaign: Campaign,
    name: str,
    sample: bool = True,
    scale: str = PILOT,
    usd_rate: Any = None,
) -> list[Stage]:
    """Add recipe ``name``'s stages, links and (with ``sample``) sample items to ``campaign``.

    ``scale`` is ``pilot`` (the default: each stage's pilot overrides, a few HITs per
    cell, at the cost ``recipe_cost(scale="pilot")`` states) or ``paper`` (the sizes the
    paper ran).

    The campaign must be a draft without stages (``StateConflict`` otherwise): a recipe
    is a starting point, not something merged into a design. All or nothing: one
    transaction under the campaign's row lock. Sets ``campaign.recipe``.

    Recipe rewards and bonus amounts are US dollars; a campaign paying in another
    currency gets them converted (``usd_conversion``: ``usd_rate`` or the setting), each
    converted stage noting ``config["priced_in"]`` (the dollar amount and the rate).
    """
    recipe = _recipe(name)
    conversion = usd_conversion(currency=campaign.currency, usd_rate=usd_rate)
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
            reward, config, bonus_rules = _priced(
                spec, provider=locked.provider, currency=locked.currency, conversion=conversion
            )
            config = _model_endpoint_resolved(config, campaign=locked)
            stages[spec.name] = stage_add(
                campaign=locked,
                name=spec.name,
                task_type=spec.task_type,
                config=config,
                instructions=spec.instructions,
                reward=reward,
                assignments_per_hit=spec.assignments_per_hit,
                items_per_hit=spec.items_per_hit,
                assignment_duration=spec.assignment_duration,
                lifetime=spec.lifetime,
                gold_ratio=spec.gold_ratio,
                qualification_requirements=requirements,
                escalation_rule=dict(spec.escalation_rule),
                review_rules=[_rule_resolved(r, stages=stages) for r in spec.review_rules],
                bonus_rules=bonus_rules,
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
                    handoff={
                        k: stages[v].pk if k in STAGE_NAME_KEYS and isinstance(v, str) else v
                        for k, v in spec.handoff.items()
                    },
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


# Bonus-rule keys that hold money (recipes write them in US dollars).
_MONEY_KEYS = ("amount", "bonus", "hourly", "per_entity", "per_item")


def _rule_converted(rule: dict[str, Any], conversion: Conversion) -> dict[str, Any]:
    """A bonus rule with its dollar amounts in the campaign's currency."""
    out = dict(rule)
    for key in _MONEY_KEYS:
        if key in out and not isinstance(out[key], bool):
            try:
                out[key] = str(conversion.convert(Decimal(str(out[key]))))
            except (InvalidOperation, ValueError):
                continue
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
    *,
    owner: Any,
    recipe: str = "",
    sample: bool = True,
    scale: str = PILOT,
    usd_rate: Any = None,
    **fields: Any,
) -> Campaign:
    """Create a draft campaign (``campaign_create`` with ``fields``) and, when ``recipe``
    is given, put the recipe's stages into it at ``scale``; both or neither (one
    transaction). ``usd_rate``: the requester's rate for the recipe's dollar prices
    (``recipe_apply``)."""
    with transaction.atomic():
        campaign = campaign_create(owner=owner, **fields)
        if recipe:
            recipe_apply(
                campaign=campaign, name=recipe, sample=sample, scale=scale, usd_rate=usd_rate
            )
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


def recipe_cost(
    *, name: str, provider: str, scale: str = PILOT, usd_rate: Any = None
) -> RecipeCost:
    """What recipe ``name`` costs at ``scale`` on ``provider`` (rewards and fees), in the
    provider's currency.

    Each stage is priced at the reward ``recipe_apply`` loads it with on ``provider``:
    the paper's dollars converted (``usd_rate`` or the setting, as ``recipe_apply``)
    and raised to the platform's hourly minimum where the paper's is below it
    (Prolific), so the quote equals the loaded campaign's ``campaign_cost_estimate``.

    A stage's items are its items at that scale (``StageSpec.items_at``), or for a fed
    stage the feeding stage's assignments x its ``expected_outputs_per_assignment``
    (rounded up). Escalations, extensions and bonuses are not included, as in
    ``stage_cost_estimate``. Reads nothing from the database.
    """
    recipe = _recipe(name)
    scale = _scale(scale)
    currency = currency_for(provider)
    conversion = usd_conversion(currency=currency, usd_rate=usd_rate)
    produced: dict[str, int] = {}
    costs: list[StageCost] = []
    for base in recipe.stages:
        spec = base.at(scale)
        own = base.items_at(scale)
        items = own if own is not None else produced.get(spec.name, 0)
        reward, _config, _bonus_rules = _priced(
            spec, provider=provider, currency=currency, conversion=conversion
        )
        cost = stage_plan_cost(
            name=spec.name,
            reward=reward,
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
        currency=currency,
        stages=costs,
        total_rewards=rewards,
        total_fees=fees,
        total=rewards + fees,
    )
