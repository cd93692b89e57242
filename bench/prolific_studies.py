"""How many Prolific studies a multi-stage campaign creates, by publishing mechanism.

    PYTHONPATH=. python bench/prolific_studies.py

Prolific rate-limits creating many studies with few places (api-reference/studies) and
points such work at Taskflow. This prints, for the Mintaka recipe at the paper's scale
and for a small pilot, each stage's places (recipe arithmetic: HITs x assignments, fed
stages from ``expected_outputs_per_assignment``) and the calls each mechanism makes:

- batched studies (qaportal before issue 22): the first stage one study, every fed
  stage one new study per hand-off batch of ``PAID_HANDOFF_BATCH_PLACES`` places;
- one study per stage that grows (now): one ``POST /studies/`` per stage, then one
  ``PATCH total_available_places`` per later batch;
- Taskflow (``access_details``): one study per stage too, with one URL per variant;
  qaportal allocates tasks itself behind one URL, so it would add nothing but a list.
Reads no database; nothing is sent anywhere.
"""

from __future__ import annotations

import math
import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "qaportal.settings")
os.environ.setdefault("DEBUG", "1")  # reads no secret, serves nothing
django.setup()

from campaigns.services.recipes import recipe_paper_cost  # noqa: E402

BATCH = int(os.environ.get("PAID_HANDOFF_BATCH_PLACES", "50"))


def report(title: str, places: list[tuple[str, int]]) -> None:
    print(f"\n{title} (hand-off batch {BATCH} places)")
    print(f"{'stage':<26}{'places':>8}{'batched: studies':>18}{'grown: studies':>16}{'PATCH':>7}")
    batched_total = grown_total = patches = 0
    for n, (name, count) in enumerate(places):
        batches = 1 if n == 0 else max(1, math.ceil(count / BATCH))
        batched_total += batches
        grown_total += 1
        patches += batches - 1
        print(f"{name:<26}{count:>8}{batches:>18}{1:>16}{batches - 1:>7}")
    print(f"{'total':<26}{'':>8}{batched_total:>18}{grown_total:>16}{patches:>7}")


def main() -> None:
    paper = recipe_paper_cost(name="mintaka", provider="prolific")
    report("Mintaka at the paper's scale", [(s.stage_name, s.assignments) for s in paper.stages])
    # The pilot of tests/simulate/test_prolific_mintaka_pilot.py, scaled to a real one:
    # 72 cells (8 topics x 9 types) with 1 writer each, then the recipe's yields.
    cells, writers = 72, 1
    write = cells * writers
    answers = math.ceil(write * 4) * 2  # 4 linkable answers per HIT, 2 annotators
    questions = math.ceil(answers * 0.5) * 2
    report(
        "Mintaka pilot (72 cells, 1 writer each)",
        [
            ("Write questions", write),
            ("Link answer entities", answers),
            ("Link question entities", questions),
        ],
    )


if __name__ == "__main__":
    main()
