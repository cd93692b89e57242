"""Quality numbers of a campaign's stages for the detail page, from
``validation.selectors.stage_quality`` and, on linking stages,
``linking.selectors.stage_entity_agreement``.

Computed once per stage (a constant handful of queries each), never per row, and
only for stages with assignments: an empty stage has nothing to measure. The campaign
page loads them as a fragment after the page, so the overview stays fast.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from campaigns.design.selectors import stage_list_with_counts
from campaigns.insights.arms import campaign_arm_comparison
from campaigns.insights.workers import QUALITY_CACHE_SECONDS, stage_work_fingerprints
from campaigns.models import Stage
from campaigns.tasktypes import task_type_get
from frontend.views.common import campaign_or_404, shows_money, stage_or_404
from linking.selectors import stage_entity_agreement
from validation.selectors import AgreementPoint, stage_agreement_series, stage_quality
from validation.selectors.answers import stage_answer_agreement


def stage_quality_rows(
    stages: Iterable[Stage], *, fingerprints: dict[int, str] | None = None
) -> list[dict[str, Any]]:
    """``[{"stage", "quality": StageQuality, "entity": linking AgreementSummary | None}]``
    for the stages with stored work; ``stages`` carry ``assignment_count``
    (``campaigns.design.selectors.stage_list_with_counts``). With ``fingerprints`` (per stage,
    changing with every submission and decision) each stage's numbers are cached until
    its work changes, or for ``QUALITY_CACHE_SECONDS`` at most."""
    rows = []
    for stage in stages:
        if not getattr(stage, "assignment_count", 0):
            continue
        fingerprint = (fingerprints or {}).get(stage.pk)
        key = None
        if fingerprint is not None:
            digest = hashlib.sha256(fingerprint.encode()).hexdigest()[:32]
            key = f"qaportal:stage-quality-row:{stage.pk}:{digest}"
            found = cache.get(key)
            if found is not None:
                rows.append({"stage": stage, **found})
                continue
        quality = stage_quality(stage=stage)
        if not quality.assignments:
            continue
        entity = (
            stage_entity_agreement(stage=stage)
            if task_type_get(stage.task_type).links_entities
            else None
        )
        # WhyQA's measures (§3.2) on sentence-selection stages.
        answers = stage_answer_agreement(stage=stage)
        found = {"quality": quality, "entity": entity, "answers": answers}
        if key is not None:
            cache.set(key, found, QUALITY_CACHE_SECONDS)
        rows.append({"stage": stage, **found})
    return rows


@login_required
@require_GET
def campaign_quality_view(request: HttpRequest, slug: str) -> HttpResponse:
    """The quality section of the campaign page, loaded after the page itself (its
    numbers take longest on a large campaign; they are cached until the work changes)."""
    campaign = campaign_or_404(request, slug)
    stages = list(stage_list_with_counts(campaign=campaign))
    rows = stage_quality_rows(stages, fingerprints=stage_work_fingerprints(campaign=campaign))
    arms = campaign_arm_comparison(campaign=campaign)
    context = {
        "campaign": campaign,
        "quality_rows": rows,
        "arms": arms,
        # An unpaid workforce (in-house) shows time, not money: no wage, no cost.
        "moves_money": shows_money(campaign),
    }
    return render(request, "frontend/_quality.html", context)


CHART_POINTS = 12


@login_required
@require_GET
def stage_agreement_chart_view(request: HttpRequest, slug: str, stage_id: int) -> HttpResponse:
    """The stage's agreement over time as an SVG image (pygal): alpha and percent
    agreement over the answers submitted up to each point. Served as an image, so
    nothing in it runs; cached until the stage's work changes."""
    campaign = campaign_or_404(request, slug)
    stage = stage_or_404(campaign, stage_id)
    fingerprint = stage_work_fingerprints(campaign=campaign).get(stage.pk, "none")
    digest = hashlib.sha256(fingerprint.encode()).hexdigest()[:32]
    key = f"qaportal:agreement-chart:{stage.pk}:{digest}"
    svg = cache.get(key)
    if svg is None:
        svg = _agreement_svg(stage_agreement_series(stage=stage, points=CHART_POINTS))
        cache.set(key, svg, QUALITY_CACHE_SECONDS)
    response = HttpResponse(svg, content_type="image/svg+xml")
    response["Cache-Control"] = "private, max-age=60"
    return response


def _agreement_svg(series: list[AgreementPoint]) -> str:
    import pygal

    chart = pygal.Line(
        js=[],  # no script: the chart is shown as an image
        disable_xml_declaration=False,
        height=260,
        width=720,
        range=(-0.2, 1),
        show_dots=True,
        legend_at_bottom=True,
        x_label_rotation=20,
        no_data_text="No agreement yet: items need two annotators",
    )
    chart.x_labels = [p.at.strftime("%m-%d %H:%M") for p in series]
    chart.add("Krippendorff's alpha", [p.alpha for p in series])
    chart.add("Percent agreement", [p.percent_agreement for p in series])
    return str(chart.render(is_unicode=True))
