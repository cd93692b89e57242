"""The campaign page's charts as SVG images (pygal, no script inside): submissions and
approvals over time, spend against the budget over time, and how long work takes."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from campaigns.design.platform import platform_for
from campaigns.insights.charts import (
    campaign_activity_series,
    campaign_spend_series,
    campaign_work_time_histogram,
)
from frontend.views.common import campaign_or_404

CHART_SIZE = {"width": 720, "height": 280}


def _chart(kind: str, **options: Any) -> Any:
    import pygal  # heavy: loaded on the first chart only
    from pygal.style import DefaultStyle

    cls = {"line": pygal.Line, "bar": pygal.Bar}[kind]
    return cls(
        # Axis text stays readable when the 720 px image shrinks to a phone's width.
        style=DefaultStyle(
            no_data_font_size=22,
            background="transparent",
            label_font_size=15,
            major_label_font_size=15,
            legend_font_size=16,
            title_font_size=17,
        ),
        js=[],  # shown as an image: nothing in it runs
        disable_xml_declaration=False,
        legend_at_bottom=True,
        x_label_rotation=20,
        show_minor_x_labels=False,
        truncate_label=-1,
        **CHART_SIZE,
        **options,
    )


def _svg(chart: Any) -> HttpResponse:
    response = HttpResponse(str(chart.render(is_unicode=True)), content_type="image/svg+xml")
    response["Cache-Control"] = "private, max-age=30"
    return response


def _labels(times: list[Any]) -> list[str]:
    return [t.strftime("%m-%d %H:%M") for t in times]


@login_required
@require_GET
def campaign_activity_chart_view(request: HttpRequest, slug: str) -> HttpResponse:
    """Submitted and approved assignments over time (cumulative)."""
    campaign = campaign_or_404(request, slug)
    series = campaign_activity_series(campaign=campaign)
    chart = _chart("line", no_data_text="Nothing submitted yet", show_dots=len(series) < 40)
    chart.x_labels = _labels([p.at for p in series])
    chart.x_labels_major_every = max(1, len(series) // 8)
    chart.add("Submitted", [p.submitted for p in series])
    chart.add("Approved", [p.approved for p in series])
    return _svg(chart)


@login_required
@require_GET
def campaign_spend_chart_view(request: HttpRequest, slug: str) -> HttpResponse:
    """Money paid or committed over time (cumulative), against the budget cap."""
    campaign = campaign_or_404(request, slug)
    if not platform_for(campaign.provider).moves_money:
        raise Http404("The local workforce moves no money to chart.")
    series = campaign_spend_series(campaign=campaign)
    chart = _chart(
        "line",
        no_data_text="No money committed yet",
        show_dots=len(series) < 40,
        value_formatter=lambda v: f"{v:.2f} {campaign.currency}",
    )
    chart.x_labels = _labels([p.at for p in series])
    chart.x_labels_major_every = max(1, len(series) // 8)
    chart.add(f"Spent and committed ({campaign.currency})", [float(p.spent) for p in series])
    if campaign.budget_cap is not None and series:
        chart.add("Budget cap", [float(campaign.budget_cap)] * len(series), show_dots=False)
    return _svg(chart)


@login_required
@require_GET
def campaign_work_time_chart_view(request: HttpRequest, slug: str) -> HttpResponse:
    """How many submitted assignments took how long."""
    campaign = campaign_or_404(request, slug)
    histogram = campaign_work_time_histogram(campaign=campaign)
    chart = _chart(
        "bar",
        no_data_text="No work time recorded yet",
        show_legend=False,
        x_title="Work time of one assignment",
        y_title="Assignments",
    )
    chart.x_labels = [label for label, _ in histogram]
    # Every bucket is named (a bar chart's labels are all "minor"), counts are whole.
    chart.x_labels_major = list(chart.x_labels)
    counts = [n for _, n in histogram]
    top = max(counts, default=0)
    chart.y_labels = list(range(0, top + 1, max(1, -(-top // 5))))
    chart.add("Assignments", counts if any(counts) else [])
    return _svg(chart)
