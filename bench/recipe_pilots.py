"""Run the WhyQA and Nangia recipes at their pilot size with the crowd simulator, then
export, and print what a requester checks: items, HITs, annotators per item, cost,
and the export's count of each field. Run by hand on a scratch database:

    DATABASE_URL=postgres://…/scratch CELERY_TASK_ALWAYS_EAGER=1 DEBUG=1 \\
        python manage.py migrate && python bench/recipe_pilots.py [whyqa] [nangia]

Nangia's requester side is scripted as in tests/campaigns/recipes/test_nangia_simulated.py: the
BASELINE and JUSTIFICATION workers are made experts, the tutorial's writing round
(every writer qualifies) and each training round are closed through the API with the
recipe's defaults once its writing is in, validation is published once every main
round is in (§4: the arms shuffled together); the pilot lowers
grades per example to 2 (experts) and 1 (crowd) and promotes half of CROWD's round-1
writers, as four writers per arm cannot give the paper's 3 and 5.
"""

from __future__ import annotations

import io
import json
import os
import sys
import time
from collections import Counter
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "qaportal.settings")

import django

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.db.models import Count, Sum  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402

from campaigns.design.services import campaign_create, stage_update  # noqa: E402
from campaigns.exports import export_write  # noqa: E402
from campaigns.models import (  # noqa: E402
    HIT,
    Assignment,
    AssignmentStatus,
    Campaign,
    CampaignWorker,
    Item,
    LedgerEntry,
    QualificationType,
)
from campaigns.platforms.publishing import campaign_start  # noqa: E402
from campaigns.platforms.workers import paid_qualification_grant  # noqa: E402
from campaigns.recipes.nangia import ARMS, EXPERT_GRADERS  # noqa: E402
from campaigns.recipes.services import recipe_apply, recipe_cost  # noqa: E402
from campaigns.simulate import simulate_crowd  # noqa: E402

STORED = (AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED, AssignmentStatus.REJECTED)


def _owner(name: str) -> User:
    user, _ = get_user_model().objects.get_or_create(username=name)
    return user


def _fresh(slug: str, name: str, owner: User) -> Campaign:
    Campaign.objects.filter(slug=slug).delete()
    return campaign_create(owner=owner, name=name, slug=slug)


def report(campaign: Campaign, recipe: str) -> dict[str, object]:
    """Items, HITs, annotators per item, cost and export field counts."""
    stages = []
    for stage in campaign.stages.order_by("position"):
        items = Item.objects.filter(stage=stage).count()
        hits = HIT.objects.filter(stage=stage).count()
        per_item = (
            Assignment.objects.filter(hit__stage=stage, status__in=STORED)
            .values("hit_id")
            .annotate(n=Count("worker_id", distinct=True))
        )
        counts = [r["n"] for r in per_item]
        approved_rows = Assignment.objects.filter(
            hit__stage=stage, status=AssignmentStatus.APPROVED
        )
        approved = approved_rows.count()
        rewards = approved_rows.aggregate(s=Sum("hit__reward"))["s"] or Decimal("0")
        stages.append(
            {
                "stage": stage.name,
                "items": items,
                "hits": hits,
                "assignments": sum(counts),
                "approved": approved,
                "annotators_per_hit": round(sum(counts) / len(counts), 2) if counts else 0,
                "rewards_approved": str(rewards),
            }
        )
    spent = LedgerEntry.objects.filter(campaign=campaign).values("kind").annotate(s=Sum("amount"))
    cost = {r["kind"]: str(r["s"]) for r in spent}
    total = sum((Decimal(v) for v in cost.values()), Decimal("0"))
    exports: dict[str, object] = {}
    for name in ("jsonl", "collection-metadata", "answer-agreement"):
        out = io.StringIO()
        rows = export_write(campaign=campaign, name=name, out=out)
        text = out.getvalue()
        if name == "jsonl":
            fields: Counter[str] = Counter()
            for line in text.splitlines():
                record = json.loads(line)
                fields.update(record.keys())
                fields.update(f"item_data.{k}" for k in record.get("item_data") or {})
            exports[name] = {"rows": rows, "fields": dict(sorted(fields.items()))}
        else:
            header = text.splitlines()[0].split(",") if text else []
            summary: dict[str, object] = {"rows": rows, "columns": len(header), "header": header}
            if name == "answer-agreement":
                summary["table"] = text.splitlines()[1:]
            exports[name] = summary
    pilot = recipe_cost(name=recipe, provider="mturk", scale="pilot")
    return {
        "campaign": campaign.slug,
        "stages": stages,
        "ledger": cost,
        "ledger_total": str(total),
        "rewards_approved_total": str(sum(Decimal(x["rewards_approved"]) for x in stages)),
        "stated_pilot_cost_mturk": str(pilot.total),
        "exports": exports,
    }


def run_whyqa() -> dict[str, object]:
    owner = _owner("bench-whyqa")
    campaign = _fresh("bench-whyqa", "WhyQA pilot", owner)
    recipe_apply(campaign=campaign, name="whyqa")
    campaign = campaign_start(campaign=campaign, to_state="pilot")
    started = time.monotonic()
    result = simulate_crowd(
        campaign=campaign, workers=14, seed=2, approve_all=True, shares={"good": 1.0}
    )
    out = report(campaign, "whyqa")
    out["simulation"] = {"ok": result.ok, "seconds": round(time.monotonic() - started, 1)}
    return out


def run_nangia() -> dict[str, object]:
    owner = _owner("bench-nangia")
    campaign = _fresh("bench-nangia", "Nangia pilot", owner)
    stages = {s.name: s for s in recipe_apply(campaign=campaign, name="nangia")}
    for arm in ("CROWD", "EXPERT"):
        stage_update(stage=stages[f"{arm}: Tutorial grading"], assignments_per_hit=2)
        for number in (1, 2, 3):
            stage_update(stage=stages[f"{arm}: Round {number}"], assignments_per_hit=3)
            crowd = arm == "CROWD" and number > 1
            stage_update(
                stage=stages[f"{arm}: Grading {number}"], assignments_per_hit=1 if crowd else 2
            )
    campaign = campaign_start(campaign=campaign, to_state="pilot")
    api = APIClient()
    api.force_authenticate(owner)
    closed: set[str] = set()
    experts: list[int] = []

    def requester(c: Campaign) -> bool:
        if not experts:
            qt = QualificationType.objects.get(owner=owner, name=EXPERT_GRADERS)
            for place in CampaignWorker.objects.filter(
                campaign=c, arm__in=["BASELINE", "JUSTIFICATION"]
            ).select_related("worker"):
                paid_qualification_grant(qualification_type=qt, worker=place.worker, source="bench")
                experts.append(place.worker_id)
            if experts:
                return True
        for arm in ("CROWD", "EXPERT"):
            for name in (f"{arm}: Tutorial writing", *(f"{arm}: Round {n}" for n in (1, 2, 3))):
                number = 0 if name.endswith("writing") else int(name[-1])
                if name in closed:
                    continue
                writing = stages[name]
                if not Assignment.objects.filter(
                    hit__stage=writing, status=AssignmentStatus.APPROVED
                ).exists():
                    break
                first = arm == "CROWD" and number == 1
                body = {"preview": False, **({"graders_share": 0.5} if first else {})}
                if not number:  # a pilot's few tutorial writers all go on to round 1
                    body["qualify_share"] = 1.0
                response = api.post(f"/api/v1/stages/{writing.pk}/rounds/", body, format="json")
                if response.status_code != 200:
                    print(f"{name}: {response.status_code} {response.content[:300]!r}")
                    return False
                closed.add(name)
                return True
        validation = stages["Validation"]
        mains = [stages[f"{arm}: Main round"] for arm in ARMS]
        if "Validation" not in closed and all(
            Assignment.objects.filter(hit__stage=s, status=AssignmentStatus.APPROVED).exists()
            for s in mains
        ):
            # §4: the requester publishes validation once the main rounds are in.
            api.post(f"/api/v1/stages/{validation.pk}/publish/", {}, format="json")
            closed.add("Validation")
            return True
        return False

    started = time.monotonic()
    result = simulate_crowd(
        campaign=campaign,
        workers=16,
        seed=3,
        approve_all=True,
        shares={"good": 1.0},
        requester=requester,
    )
    out = report(campaign, "nangia")
    out["simulation"] = {
        "ok": result.ok,
        "seconds": round(time.monotonic() - started, 1),
        "rounds_closed": sorted(closed),
    }
    return out


if __name__ == "__main__":
    wanted = sys.argv[1:] or ["whyqa", "nangia"]
    for name in wanted:
        if name.startswith("report:"):  # report on a campaign already simulated
            recipe = name.split(":", 1)[1]
            slug = f"bench-{recipe}"
            print(json.dumps(report(Campaign.objects.get(slug=slug), recipe), indent=1))
            continue
        data = {"whyqa": run_whyqa, "nangia": run_nangia}[name]()
        print(json.dumps({name: data}, indent=1, ensure_ascii=False))
