"""Print each recipe's size and cost as the app computes them (``recipe_cost``): per
stage its items, HITs, annotators per item (places per HIT) and assignments, then the
recipe's rewards, fees and total on the local workforce, on Prolific and on MTurk.
Reads nothing from the database; no scratch database needed:

    DEBUG=1 python bench/recipe_scale.py         # the paper's scale, every recipe
    DEBUG=1 python bench/recipe_scale.py --scale pilot  # the pilot a recipe loads by default
    DEBUG=1 python bench/recipe_scale.py nangia mintaka  # some recipes

Escalations, extensions, 10-way raises and bonuses are not included (they depend on
agreement), as in ``recipe_cost``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "qaportal.settings")

import django

django.setup()

from campaigns.recipes import recipe_names  # noqa: E402
from campaigns.recipes.base import PAPER, SCALES  # noqa: E402
from campaigns.recipes.services import recipe_cost  # noqa: E402

PROVIDERS = ("local", "prolific", "mturk")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("recipes", nargs="*", choices=[[], *recipe_names()], default=[])
    parser.add_argument("--scale", choices=SCALES, default=PAPER)
    args = parser.parse_args()
    for name in args.recipes or recipe_names():
        costs = {p: recipe_cost(name=name, provider=p, scale=args.scale) for p in PROVIDERS}
        base = costs["local"]
        print(f"\n## {name} ({args.scale} scale)\n")
        print(f"{'stage':44} {'items':>7} {'HITs':>6} {'per item':>8} {'assignments':>11}")
        for stage in base.stages:
            # Every item of a HIT gets each of its places: annotators per item.
            per_item = stage.assignments / stage.hits if stage.hits else 0
            print(
                f"{stage.stage_name[:44]:44} {stage.items:>7,} {stage.hits:>6,} "
                f"{per_item:>8.2f} {stage.assignments:>11,}"
            )
        items = sum(s.items for s in base.stages)
        hits = sum(s.hits for s in base.stages)
        assignments = sum(s.assignments for s in base.stages)
        print(f"{'all stages':44} {items:>7,} {hits:>6,} {'':>8} {assignments:>11,}")
        for provider, cost in costs.items():
            print(
                f"  {provider:9} {cost.currency} rewards {cost.total_rewards:>10,.2f}  fees "
                f"{cost.total_fees:>9,.2f}  total {cost.total:>10,.2f}"
            )


if __name__ == "__main__":
    main()
