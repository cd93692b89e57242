"""Stage pages: edit a stage (what the campaign's state still allows), clone it, preview
the worker's page with the stage's own items, and download upload templates."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.clickjacking import xframe_options_sameorigin
from django.views.decorators.http import require_http_methods, require_POST

from campaigns.design.platform import platform_for
from campaigns.design.services import (
    EDITABLE_STATES,
    stage_clone,
    stage_fields_editable,
    stage_link,
    stage_update,
)
from campaigns.models import Campaign, CampaignState, Stage
from campaigns.payments.costs import stage_cost_estimate
from campaigns.payments.wages import stage_pilot_estimate_set
from campaigns.platforms.worker_pages import task_template_name
from campaigns.tasktypes import task_type_get
from campaigns.tasktypes.item_template import (
    item_columns,
    item_template_csv,
    item_template_jsonl,
)
from campaigns.work.selectors.access import stage_reward_shown
from frontend.stage_forms import StageEditForm
from frontend.views.common import add_domain_errors, campaign_or_404, detail_url, stage_or_404
from qaportal.errors import DomainError
from qaportal.middleware import policy_with

# What a change does, by campaign state: shown on the edit form.
EDIT_NOTES = {
    CampaignState.DRAFT: [
        "Nothing is published yet: every setting may change.",
        "Reward, assignments and items per HIT change the cost estimate shown below.",
    ],
    CampaignState.PILOT: [
        "Pilot HITs already published keep the reward, places, durations and "
        "qualification requirements they were made with; changes apply to HITs "
        "published from now on.",
        "Reward, assignments and items per HIT change the cost of the items not yet "
        "published (the estimate below).",
        "Instructions and the configuration show on every page opened from now on, "
        "also for published HITs.",
    ],
    CampaignState.LIVE: [
        "HITs are out: reward, places, items per HIT, durations, configuration, gold "
        "ratio, qualification requirements and the hand-off are fixed (workers accepted "
        "them; on MTurk they cannot change). To run the stage with other settings, add a "
        "new stage with them to a draft campaign.",
        "You may still rename the stage, reword its instructions (workers see them on "
        "pages opened from now on) and change the review, bonus and escalation rules: "
        "they apply to decisions still to come, and new bonus rules add to the cost.",
    ],
    CampaignState.COMPLETED: ["The campaign is completed: its stages are kept as they ran."],
}
EDIT_NOTES[CampaignState.PAUSED] = EDIT_NOTES[CampaignState.LIVE]


def _editable(campaign: Campaign) -> frozenset[str]:
    fields = stage_fields_editable(campaign=campaign)
    if campaign.state in EDITABLE_STATES:
        fields = fields | {"next_stage", "handoff"}
    return fields


def _sample_items(stage: Stage) -> list[dict[str, Any]]:
    """The stage's first items, as many as one HIT holds, shaped as ``hit_items``."""
    rows = stage.items.order_by("pk").values("pk", "external_id", "data")[: stage.items_per_hit]
    return [{"id": r["pk"], "external_id": r["external_id"], "data": r["data"]} for r in rows]


def _render_edit(
    request: HttpRequest, campaign: Campaign, stage: Stage, form: StageEditForm, status: int = 200
) -> HttpResponse:
    try:
        cost = stage_cost_estimate(stage=stage)
    except DomainError:
        cost = None
    context = {
        "campaign": campaign,
        "stage": stage,
        "form": form,
        "notes": EDIT_NOTES[CampaignState(campaign.state)],
        "can_clone": campaign.state in EDITABLE_STATES,
        "anything_editable": bool(stage_fields_editable(campaign=campaign)),
        "cost": cost,
        "moves_money": platform_for(campaign.provider).moves_money,
        "published_hits": stage.hits.exclude(status="pending").count(),
        "task_type": task_type_get(stage.task_type),
    }
    return render(request, "frontend/stage_edit.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def stage_edit_view(request: HttpRequest, slug: str, stage_id: int) -> HttpResponse:
    campaign = campaign_or_404(request, slug)
    stage = stage_or_404(campaign, stage_id)
    editable = _editable(campaign)
    if request.method == "GET":
        return _render_edit(request, campaign, stage, StageEditForm(stage=stage, editable=editable))
    form = StageEditForm(request.POST, stage=stage, editable=editable)
    if form.adding:  # *Add*: the form again with one more row to fill, nothing saved
        return _render_edit(request, campaign, stage, form)
    if not form.is_valid():
        return _render_edit(request, campaign, stage, form, status=400)
    changes = form.changes()
    link = form.link_change()
    try:
        if changes:
            stage = stage_update(stage=stage, actor=request.user, **changes)
        if link is not None:
            next_id, handoff = link
            next_stage = campaign.stages.filter(pk=next_id).first() if next_id else None
            stage = stage_link(stage=stage, next_stage=next_stage, handoff=handoff)
    except DomainError as exc:
        add_domain_errors(form, exc)
        form.rows_place_errors()
        stage.refresh_from_db()
        return _render_edit(request, campaign, stage, form, status=400)
    if changes or link is not None:
        messages.success(request, f"Stage “{stage.name}” saved.")
    else:
        messages.info(request, "Nothing changed.")
    return redirect(detail_url(campaign, f"stage-{stage.pk}"))


@login_required
@require_POST
def stage_clone_view(request: HttpRequest, slug: str, stage_id: int) -> HttpResponse:
    campaign = campaign_or_404(request, slug)
    stage = stage_or_404(campaign, stage_id)
    try:
        copy = stage_clone(stage=stage)
    except DomainError as exc:
        messages.error(request, str(exc))
        return redirect(detail_url(campaign, f"stage-{stage.pk}"))
    messages.success(request, f"Stage “{copy.name}” added as a copy of “{stage.name}”.")
    return redirect("frontend:stage-edit", slug=campaign.slug, stage_id=copy.pk)


@login_required
@require_POST
def stage_estimate_from_pilot_view(request: HttpRequest, slug: str, stage_id: int) -> HttpResponse:
    """The stage's estimated minutes from its pilot's median time
    (``stage_pilot_estimate_set``), said with the pay against the platform's minimum."""
    campaign = campaign_or_404(request, slug)
    stage = stage_or_404(campaign, stage_id)
    try:
        estimate = stage_pilot_estimate_set(stage=stage)
    except DomainError as exc:
        messages.error(request, str(exc))
        return redirect(detail_url(campaign, f"stage-{stage.pk}"))
    said = (
        f"“{stage.name}” now estimates {estimate.estimated_minutes} min per assignment "
        f"(the median of {estimate.assignments} pilot assignments, "
        f"{round(estimate.median_seconds)} s)."
    )
    if estimate.minimum_hourly is None:
        messages.success(request, said)
    elif estimate.meets_minimum:
        messages.success(
            request,
            f"{said} The reward pays {estimate.hourly_rate} {estimate.currency} an hour: "
            f"it meets the minimum of {estimate.minimum_hourly} {estimate.currency}.",
        )
    else:
        messages.warning(
            request,
            f"{said} The reward no longer meets the hourly minimum: {estimate.problem}",
        )
    return redirect(detail_url(campaign, f"stage-{stage.pk}"))


@login_required
@xframe_options_sameorigin  # shown in a frame beside the edit form
@require_http_methods(["GET", "POST"])
def stage_preview_view(request: HttpRequest, slug: str, stage_id: int) -> HttpResponse:
    """The worker's page of this stage with its first items, nothing submittable. A POST
    (the edit form, not saved) previews its instructions and configuration instead."""
    campaign = campaign_or_404(request, slug)
    stage = stage_or_404(campaign, stage_id)
    problems: list[str] = []
    if request.method == "POST":
        form = StageEditForm(request.POST, stage=stage, editable=_editable(campaign))
        form.is_valid()
        # Show the draft even if other fields have errors; only a bad config stays out.
        if "config" in form.cleaned_data and not form.has_error("config_json"):
            stage.config = form.cleaned_data["config"]
        stage.instructions = request.POST.get("instructions", stage.instructions)
        stage.name = request.POST.get("name", stage.name) or stage.name
        problems = [
            f"{form[f].label}: {' '.join(str(m) for m in e)}"
            for f, e in form.errors.items()
            if f in form.fields
        ]
    task_type = task_type_get(stage.task_type)
    template = task_template_name(task_type)
    items = _sample_items(stage)
    context = {
        "campaign": campaign,
        "stage": stage,
        "task_type": task_type,
        "task_template": template,
        "task_ready": bool(items),
        "items": items,
        "config": task_type.effective_config(stage.config),
        "answer": {},
        "errors": {},
        "preview": False,
        "problems": problems,
        "show_reward": stage_reward_shown(stage=stage),
    }
    response = render(request, "frontend/stage_preview.html", context)
    # The edit page shows this in a frame; the site's policy forbids frames otherwise.
    response["Content-Security-Policy"] = policy_with(frame_ancestors=["'self'"], form_action=[])
    return response


@login_required
def stage_item_template_view(
    request: HttpRequest, slug: str, stage_id: int, fmt: str
) -> HttpResponse:
    """A CSV or JSONL file with the columns this stage's items need and one example row
    (the stage's first item when it has one)."""
    if fmt not in ("csv", "jsonl"):
        raise Http404("Templates come as .csv or .jsonl.")
    campaign = campaign_or_404(request, slug)
    stage = stage_or_404(campaign, stage_id)
    task_type = task_type_get(stage.task_type)
    first = stage.items.order_by("pk").values_list("data", flat=True).first()
    if fmt == "csv":
        body, content_type = item_template_csv(task_type, sample=first), "text/csv"
    else:
        body, content_type = item_template_jsonl(task_type, sample=first), "application/jsonl"
    response = HttpResponse(body, content_type=f"{content_type}; charset=utf-8")
    filename = f"{campaign.slug}-{stage.pk}-items-template.{fmt}"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def stage_upload_help(stage: Stage) -> list[Any]:
    """The item columns of ``stage``'s task type, for the upload field's side."""
    return item_columns(task_type_get(stage.task_type))
