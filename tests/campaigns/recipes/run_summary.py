"""What a simulated recipe run produced, as the issue's closing note reports it: items,
HITs, annotators per item, cost, and the counts of each field in the export."""

from __future__ import annotations

import io
import json
from collections import Counter
from typing import Any

from campaigns.exports import export_write
from campaigns.insights.money import campaign_costs
from campaigns.models import HIT, Assignment, AssignmentStatus, Campaign, HITItem, Item

ANSWERED = (AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED, AssignmentStatus.REJECTED)


def _field_counts(rows: list[dict[str, Any]], prefix: str = "") -> Counter[str]:
    counts: Counter[str] = Counter()
    for row in rows:
        for key, value in row.items():
            path = f"{prefix}{key}"
            if value not in (None, [], {}, ""):
                counts[path] += 1
            if isinstance(value, dict) and key != "graph_query":
                counts.update(_field_counts([value], prefix=f"{path}."))
            if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
                for v in value:
                    counts.update(_field_counts([v], prefix=f"{path}[]."))
    return counts


def run_summary(*, campaign: Campaign, export: str) -> dict[str, Any]:
    stages = []
    for stage in campaign.stages.order_by("position"):
        per_item = Counter(
            HITItem.objects.filter(
                hit__stage=stage, hit__assignments__status__in=ANSWERED
            ).values_list("item_id", flat=True)
        )
        items = Item.objects.filter(stage=stage).count()
        spread = Counter(per_item.values())
        answered = Assignment.objects.filter(hit__stage=stage, status__in=ANSWERED).count()
        stages.append(
            {
                "stage": stage.name,
                "rewards": str(stage.reward * answered),
                "items": items,
                "hits": HIT.objects.filter(stage=stage).count(),
                "assignments": Assignment.objects.filter(
                    hit__stage=stage, status__in=ANSWERED
                ).count(),
                "annotators_per_item": dict(sorted(spread.items())),
            }
        )
    costs = campaign_costs(campaign=campaign)
    out = io.StringIO()
    rows_written = export_write(campaign=campaign, name=export, out=out)
    text = out.getvalue()
    rows = json.loads(text) if export == "mintaka" else [json.loads(x) for x in text.splitlines()]
    return {
        "stages": stages,
        "cost": {"spent": str(costs.spent), "committed": str(costs.committed),
                 "planned": str(costs.planned), "forecast_total": str(costs.forecast_total)},
        "export_rows": rows_written,
        "export_fields": dict(sorted(_field_counts(rows).items())),
        "rows": rows,
    }  # fmt: skip
