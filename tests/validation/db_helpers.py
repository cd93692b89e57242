"""Building stages with stored assignments directly (no pages), for the service tests."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.db.models import F
from django.utils import timezone

from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    Item,
    ItemSource,
    Provider,
    Stage,
    Worker,
)
from campaigns.work.publishing import stage_publish
from tests.factories import CampaignFactory

OPTIONS = ["red", "green", "blue", "grey"]


def mc_item(n: int) -> dict[str, Any]:
    return {"passage": f"Passage {n}.", "question": f"Question {n}?", "options": OPTIONS}


def make_stage(
    *,
    items: int = 3,
    gold: dict[int, Any] | None = None,
    task_type: str = "mc_validation",
    data: Any = mc_item,
    per_hit: int = 3,
    **fields: Any,
) -> Stage:
    campaign = CampaignFactory.create(state="live", provider=Provider.LOCAL)
    stage = Stage.objects.create(
        campaign=campaign,
        name="Validate",
        task_type=task_type,
        assignments_per_hit=per_hit,
        reward=fields.pop("reward", Decimal("0.50")),
        **fields,
    )
    for n in range(items):
        Item.objects.create(
            stage=stage,
            external_id=f"i{n}",
            data=data(n),
            gold=(gold or {}).get(n),
            source=ItemSource.UPLOADED,
        )
    stage_publish(stage=stage)
    return stage


def worker(name: str) -> Worker:
    return Worker.objects.get_or_create(provider=Provider.LOCAL, external_id=name)[0]


def hits(stage: Stage) -> list[HIT]:
    return list(HIT.objects.filter(stage=stage).order_by("pk"))


def submit(
    hit: HIT,
    who: Worker,
    entry: dict[str, Any],
    *,
    seconds: int = 60,
    telemetry: dict[str, Any] | None = None,
    status: str = AssignmentStatus.SUBMITTED,
    at: Any = None,
) -> Assignment:
    """A stored assignment: ``entry`` for each item of the HIT (plus its external id)."""
    submitted = at or timezone.now()
    items = list(hit.items.order_by("hititem__position"))
    answers = {"items": [{"external_id": i.external_id, **entry} for i in items]}
    HIT.objects.filter(pk=hit.pk, places_left__gt=0).update(places_left=F("places_left") - 1)
    return Assignment.objects.create(
        hit=hit,
        worker=who,
        provider=Provider.LOCAL,
        status=status,
        answers=answers,
        accepted_at=submitted - timedelta(seconds=seconds),
        submitted_at=submitted,
        work_seconds=seconds,
        telemetry=telemetry or {},
    )
