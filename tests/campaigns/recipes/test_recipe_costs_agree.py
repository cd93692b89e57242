"""Issue 35, point 8: a recipe's cost agrees everywhere: the pilot is priced for the
items it loads, and README.md and docs/recipes.md quote what the app computes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from campaigns.design.services import campaign_create
from campaigns.payments.costs import stage_cost_estimate
from campaigns.recipes import recipe_names
from campaigns.recipes.services import recipe_apply, recipe_cost, recipe_paper_cost

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.django_db
def test_mintaka_pilot_is_priced_for_the_writing_items_it_loads(requester):
    campaign = campaign_create(owner=requester, name="Mintaka pilot", slug="mk-pilot")
    stages = recipe_apply(campaign=campaign, name="mintaka")
    write = stages[0]
    planned = recipe_cost(name="mintaka", provider="mturk").stages[0]
    loaded = stage_cost_estimate(stage=write)
    assert (planned.items, planned.hits, planned.assignments) == (
        loaded.items,
        loaded.hits,
        loaded.assignments,
    )
    assert planned.assignments == 160  # 80 writing items (72 cells, generic ones twice) x 2


def _money(value) -> str:
    return f"{value:,.2f}"


def test_docs_and_readme_quote_the_apps_costs():
    """docs/recipes.md's paper-scale table (MTurk and Prolific) and pilot list, and
    README's Mintaka and Nangia figures, are the app's numbers."""
    docs = (ROOT / "docs" / "recipes.md").read_text()
    readme = (ROOT / "README.md").read_text()
    table = docs[docs.index("## Cost at the paper's scale") : docs.index("## Pilots")]
    for name in recipe_names():
        row = next(line for line in table.splitlines() if line.startswith(f"| `{name}` |"))
        mturk = recipe_paper_cost(name=name, provider="mturk").total
        prolific = recipe_paper_cost(name=name, provider="prolific").total
        assert f"**{_money(mturk)}**" in row, name
        assert f"**{_money(prolific)}**" in row, name
        pilot = recipe_cost(name=name, provider="mturk").total
        pilots = docs[docs.index("## Pilots") :]
        assert re.search(rf"`{name}`[^*]*\*\*{re.escape(_money(pilot))}\*\*", pilots), name
    for name in ("mintaka", "nangia"):
        total = recipe_paper_cost(name=name, provider="mturk").total
        assert f"${_money(total)}" in readme, name
