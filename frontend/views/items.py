"""An item's drill-down page: its whole history across stages (who wrote, who linked,
who validated, each decision), from ``campaigns.work.lineage``."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from campaigns.models import Item
from campaigns.work.lineage import item_history
from frontend.views.common import campaign_or_404
from frontend.views.review import outline


@login_required
@require_GET
def item_history_view(request: HttpRequest, slug: str, item_id: int) -> HttpResponse:
    campaign = campaign_or_404(request, slug)
    try:
        steps = item_history(campaign=campaign, item_id=item_id)
    except Item.DoesNotExist:
        raise Http404("No such item in this campaign.") from None
    rows = [
        {
            "step": step,
            "data": outline(step.item.data),
            "gold": outline(step.item.gold) if step.item.gold is not None else None,
            "work": [
                {
                    "a": work.assignment,
                    "answer": outline(work.assignment.answers),
                    "produced": work.produced,
                }
                for work in step.assignments
            ],
        }
        for step in steps
    ]
    item = next(step.item for step in steps if step.depth == 0)
    context = {"campaign": campaign, "item": item, "rows": rows}
    return render(request, "frontend/item_history.html", context)
