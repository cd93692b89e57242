"""The four recipes piloted small in the ``make run`` configuration, as a requester
would: ``load_recipe`` (the recipe's stages and sample items), the pilot shrunk (fewer
items and places, as a requester does before a dry run), started, worked by the crowd
simulator through the real worker pages, the work approved. Run as a script with the
environment of ``make run`` (the embedded SQLite database under ``QAPORTAL_VAR_DIR``,
Celery eager, the local workforce), next to the running server, by
``tests/infra/test_make_run_lane.py``; prints one JSON line: per campaign slug, its
recipe, the simulator's figures and the approved assignments.

    DEBUG=1 QAPORTAL_VAR_DIR=var python tests/infra/lane_pilots.py OWNER
"""

from __future__ import annotations

import io
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "qaportal.settings")

import django

django.setup()

from django.core.management import call_command  # noqa: E402

from campaigns.design.services import stage_update  # noqa: E402
from campaigns.models import Assignment, AssignmentStatus, Campaign, Item  # noqa: E402
from campaigns.platforms.publishing import campaign_start  # noqa: E402
from campaigns.simulate import simulate_crowd  # noqa: E402

# recipe -> (items kept per stage with items, places per HIT per stage, workers,
# simulation's time cap in seconds). Stages not named keep the recipe's settings.
PILOTS: dict[str, dict[str, Any]] = {
    "mintaka": {
        "items": {"Write questions": 4},
        "places": {"Write questions": 1},
        "workers": 6,
    },
    "whyqa": {
        "places": {
            "Qualification quiz": 4,
            "Write why-questions": 3,
            "Rephrase why-questions": 2,
        },
        "workers": 6,
    },
    "graphquestions": {
        "items": {"Paraphrase canonical questions": 2},
        "places": {"Paraphrase canonical questions": 2},
        "workers": 4,
    },
    "nangia": {
        "items": {
            name: 1
            for arm in ("BASELINE", "JUSTIFICATION", "CROWD", "EXPERT")
            for name in (f"{arm}: Main round",)
        },
        "places": {"CROWD: Tutorial": 2, "EXPERT: Tutorial": 2, "Validation quiz": 4},
        "workers": 8,
        "max_seconds": 60,
    },
}


def pilot(name: str, owner: str) -> dict[str, Any]:
    slug = f"lane-{name}"
    started = time.monotonic()
    call_command("load_recipe", name, "--campaign", slug, "--owner", owner, stdout=io.StringIO())
    campaign = Campaign.objects.get(slug=slug)
    plan = PILOTS[name]
    stages = {s.name: s for s in campaign.stages.all()}
    for stage_name, keep in plan.get("items", {}).items():
        items = Item.objects.filter(stage=stages[stage_name])
        kept = list(items.order_by("pk").values_list("pk", flat=True)[:keep])
        items.exclude(pk__in=kept).delete()
    for stage_name, places in plan.get("places", {}).items():
        stage_update(stage=stages[stage_name], assignments_per_hit=places)
    campaign = campaign_start(campaign=campaign, to_state="pilot")
    result = simulate_crowd(
        campaign=campaign,
        workers=plan["workers"],
        seed=1,
        approve_all=True,
        shares={"good": 1.0},
        max_seconds=plan.get("max_seconds"),
    )
    approved = Assignment.objects.filter(
        hit__stage__campaign=campaign, status=AssignmentStatus.APPROVED
    ).count()
    return {
        "recipe": name,
        "slug": slug,
        "ok": result.ok,
        "server_errors": result.server_errors(),
        "approved": approved,
        "seconds": round(time.monotonic() - started, 1),
        "lines": result.lines()[-5:],
    }


def main() -> None:
    owner = sys.argv[1]
    names = sys.argv[2:] or list(PILOTS)
    sys.stdout.write(json.dumps({name: pilot(name, owner) for name in names}) + "\n")


if __name__ == "__main__":
    main()
