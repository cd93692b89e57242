"""Recipes: the published protocols a campaign can start from, with their paper-scale cost."""

from __future__ import annotations

from typing import Any

from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from campaigns.design.platform import platform_names
from campaigns.models import Provider
from campaigns.recipes import RECIPES, Recipe
from campaigns.recipes.base import PAPER, PILOT, StageSpec
from campaigns.recipes.services import RecipeCost, recipe_cost
from validation.rules.settings import rules_approving

PROVIDER_PARAM = OpenApiParameter(
    "provider",
    str,
    enum=platform_names(),
    description="Whose fees the paper-scale cost uses (default mturk, as the papers ran).",
)


class RecipeOutput(serializers.Serializer):
    """A recipe as the API shows it (documentation only: ``recipe_out`` builds it)."""

    name = serializers.CharField()
    title = serializers.CharField()
    citation = serializers.CharField()
    summary = serializers.CharField()
    paper_scale = serializers.CharField()
    pilot_scale = serializers.CharField()
    export_format = serializers.CharField()
    stages = serializers.ListField(child=serializers.DictField())
    sample_items = serializers.DictField(child=serializers.IntegerField())
    pilot_cost = serializers.DictField(
        help_text="What loading the recipe (the pilot, the default) costs at most."
    )
    paper_cost = serializers.DictField(
        help_text='The paper\'s scale: create the campaign with "scale": "paper".'
    )


def stage_approval(spec: StageSpec) -> str:
    """Who approves the stage's work: the review rules that can, else a person."""
    approving = rules_approving(spec.review_rules)
    if approving:
        return "rule: " + ", ".join(approving)
    return "person" + (f" ({spec.approval_note})" if spec.approval_note else "")


def _cost_out(cost: RecipeCost) -> dict[str, Any]:
    return {
        "provider": cost.provider,
        "scale": cost.scale,
        "currency": cost.currency,
        "stages": [
            {
                "name": c.stage_name,
                "items": c.items,
                "hits": c.hits,
                "assignments": c.assignments,
                "rewards": str(c.rewards),
                "fees": str(c.fees),
                "total": str(c.total),
            }
            for c in cost.stages
        ],
        "rewards": str(cost.total_rewards),
        "fees": str(cost.total_fees),
        "total": str(cost.total),
    }


def recipe_out(recipe: Recipe, *, provider: str) -> dict[str, Any]:
    return {
        "name": recipe.name,
        "title": recipe.title,
        "citation": recipe.citation,
        "summary": recipe.summary,
        "paper_scale": recipe.paper_scale,
        "pilot_scale": recipe.pilot_scale,
        "export_format": recipe.export_format,
        "stages": [
            {
                "name": s.name,
                "task_type": s.task_type,
                "source": s.source,
                "reward": str(s.reward),
                "assignments_per_hit": s.assignments_per_hit,
                "items_per_hit": s.items_per_hit,
                "pilot": {
                    k: v if k == "config" else str(v) if not isinstance(v, int) else v
                    for k, v in s.pilot.items()
                },
                "qualification_requirements": s.qualification_requirements,
                "escalation_rule": s.escalation_rule,
                "review_rules": s.review_rules,
                "approval": stage_approval(s),
                "bonus_rules": s.bonus_rules,
                "feeds": s.feeds,
            }
            for s in recipe.stages
        ],
        "sample_items": {name: len(rows) for name, rows in recipe.sample_items.items()},
        "pilot_cost": _cost_out(recipe_cost(name=recipe.name, provider=provider, scale=PILOT)),
        "paper_cost": _cost_out(recipe_cost(name=recipe.name, provider=provider, scale=PAPER)),
    }


def _provider(request: Request) -> str:
    provider = request.query_params.get("provider", Provider.MTURK)
    if provider not in platform_names():
        raise serializers.ValidationError({"provider": [f"One of {', '.join(platform_names())}."]})
    return provider


class RecipeListApi(APIView):
    """The recipes, each with its stages (and the paper section each comes from) and cost."""

    @extend_schema(
        parameters=[PROVIDER_PARAM],
        responses={200: RecipeOutput(many=True)},
    )
    def get(self, request: Request) -> Response:
        provider = _provider(request)
        return Response([recipe_out(RECIPES[n], provider=provider) for n in sorted(RECIPES)])


class RecipeDetailApi(APIView):
    @extend_schema(
        parameters=[PROVIDER_PARAM],
        responses={200: RecipeOutput},
    )
    def get(self, request: Request, name: str) -> Response:
        recipe = RECIPES.get(name)
        if recipe is None:
            raise Http404("No such recipe.")
        return Response(recipe_out(recipe, provider=_provider(request)))
