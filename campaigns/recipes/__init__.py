"""Ready-to-run recipes for published protocols, by name (see ``base.Recipe``)."""

from __future__ import annotations

from campaigns.recipes.adversarial_qa import RECIPE as ADVERSARIAL_QA
from campaigns.recipes.base import Recipe, StageSpec
from campaigns.recipes.graphquestions import RECIPE as GRAPHQUESTIONS
from campaigns.recipes.mintaka import RECIPE as MINTAKA
from campaigns.recipes.nangia import RECIPE as NANGIA
from campaigns.recipes.whyqa import RECIPE as WHYQA

RECIPES: dict[str, Recipe] = {
    r.name: r for r in (MINTAKA, WHYQA, GRAPHQUESTIONS, NANGIA, ADVERSARIAL_QA)
}


def recipe_names() -> list[str]:
    return sorted(RECIPES)


def recipe_get(name: str) -> Recipe:
    """The recipe called ``name``; ``KeyError`` naming the known ones otherwise."""
    try:
        return RECIPES[name]
    except KeyError:
        raise KeyError(f"No recipe {name!r}; known: {', '.join(recipe_names())}.") from None


__all__ = ["RECIPES", "Recipe", "StageSpec", "recipe_get", "recipe_names"]
