"""Campaign pages: the list, creation, the detail page, state transitions, stages and
item uploads."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_POST

from campaigns.design.items import items_upload, items_upload_check
from campaigns.design.platform import platform_for, platform_names, platforms_registered
from campaigns.design.selectors import campaign_list_visible
from campaigns.design.services import EDITABLE_STATES, TRANSITIONS, stage_add
from campaigns.exports import FORMATS
from campaigns.exports.mintaka import SPLITS
from campaigns.insights.adversarial import campaign_fooled_rates
from campaigns.insights.pipeline import campaign_pipeline_flow
from campaigns.insights.progress import campaign_progress
from campaigns.jobs import job_upload_start
from campaigns.models import Campaign, CampaignState, ItemStatus, Provider, Stage
from campaigns.payments.costs import campaign_cost_estimate, transition_commits_money
from campaigns.platforms.platform_rules import stage_platform_rules
from campaigns.platforms.publishing import (
    campaign_rules_problems,
    campaign_start,
    stage_publish_waiting,
)
from campaigns.recipes import RECIPES
from campaigns.recipes.base import PAPER, PILOT
from campaigns.recipes.services import campaign_create_with_recipe, recipe_cost
from campaigns.tasktypes import task_type_get
from campaigns.tasktypes.item_template import item_columns
from campaigns.work.selectors.access import WORKABLE_STATES
from campaigns.workforce.selectors import qualification_type_choices
from campaigns.workforce.unenforced import stage_unenforced_requirements
from frontend.forms import CampaignCreateForm, ItemUploadForm, StageAddForm
from frontend.stage_summary import SETTING_TITLES, summary_lines
from frontend.views.common import (
    add_domain_errors,
    campaign_or_404,
    detail_url,
    request_user,
    stage_or_404,
)
from frontend.views.confirm import confirm_first
from qaportal.errors import DomainError, StorageUnavailable, UploadRejected

CAMPAIGNS_PER_PAGE = 50
STAGES_SHOWN_OPEN = 4
# The progress section refreshes itself this often while work can come in.
LIVE_SECONDS = 5
LIVE_STATES = (CampaignState.PILOT, CampaignState.LIVE)
# A rejected upload can have thousands of bad rows; the first ones show the pattern.
MAX_ROW_ERRORS_SHOWN = 50


def _transition_buttons(campaign: Campaign) -> list[dict[str, Any]]:
    """The transitions the state machine allows from here, labelled for a requester."""
    labels = {
        CampaignState.DRAFT: "Back to draft",
        CampaignState.PILOT: "Start pilot",
        CampaignState.LIVE: "Resume" if campaign.state == CampaignState.PAUSED else "Go live",
        CampaignState.PAUSED: "Pause",
        CampaignState.COMPLETED: "Complete (final)",
    }
    order = list(CampaignState.values)
    allowed = sorted(TRANSITIONS[campaign.state], key=order.index)
    return [
        {
            "state": state,
            "label": labels[CampaignState(state)],
            "confirm": transition_commits_money(campaign=campaign, to_state=state),
        }
        for state in allowed
    ]


@login_required
@require_GET
def campaign_list(request: HttpRequest) -> HttpResponse:
    return _render_list(request, form=CampaignCreateForm())


@login_required
@require_POST
def campaign_new(request: HttpRequest) -> HttpResponse:
    form = CampaignCreateForm(request.POST)
    if form.is_valid():
        try:
            campaign = campaign_create_with_recipe(owner=request_user(request), **form.cleaned_data)
        except DomainError as exc:
            if isinstance(exc.errors, dict) and exc.errors.get("name") == ["taken"]:
                # The whole sentence beside the name: it suggests a free one.
                form.add_error("name", str(exc))
            else:
                add_domain_errors(form, exc)
        else:
            messages.success(request, f"Campaign “{campaign.name}” created.")
            return redirect(detail_url(campaign))
    return _render_list(request, form=form, status=400)


def _render_list(
    request: HttpRequest, *, form: CampaignCreateForm, status: int = 200
) -> HttpResponse:
    # Explicit order: Meta.ordering does not apply to a query with GROUP BY.
    campaigns = (
        campaign_list_visible(user=request.user)
        .annotate(stage_count=Count("stages", distinct=True))
        .order_by("-created_at", "-id")
    )
    page = Paginator(campaigns, CAMPAIGNS_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "page": page,
        "campaigns": page.object_list,
        "form": form,
        "recipe_costs": _recipe_costs(),
        # A sandbox flag means something where money moves.
        "money_providers": [p.name for p in platforms_registered() if p.moves_money],
        # The form ticks "sandbox" for these providers only (campaign_new.js).
        "sandbox_providers": [p for p in platform_names() if platform_for(p).has_sandbox],
    }
    return render(request, "frontend/campaign_list.html", context, status=status)


def _prolific_pilot(name: str) -> Any:
    """The recipe's pilot quoted on Prolific; None when Prolific's currency has no
    dollar rate configured (the table then leaves the figure out, the page still works)."""
    try:
        return recipe_cost(name=name, provider=Provider.PROLIFIC, scale=PILOT)
    except DomainError:
        return None


def _recipe_costs() -> list[dict[str, Any]]:
    """Each recipe's pilot (what loading it sets up) and paper-scale cost, on MTurk, and
    its pilot on Prolific (the raised rewards, in Prolific's currency)."""
    rows = []
    for recipe in sorted(RECIPES.values(), key=lambda r: r.name):
        pilot = recipe_cost(name=recipe.name, provider=Provider.MTURK, scale=PILOT)
        paper = recipe_cost(name=recipe.name, provider=Provider.MTURK, scale=PAPER)
        rows.append(
            {
                "recipe": recipe,
                "pilot": pilot,
                "prolific_pilot": _prolific_pilot(recipe.name),
                "paper": paper,
                "pilot_hits": sum(c.hits for c in pilot.stages),
                "paper_hits": sum(c.hits for c in paper.stages),
            }
        )
    return rows


def _stage_groups(stages: list[Stage], *, open_stage: Stage | None) -> list[dict[str, Any]]:
    """The stage cards grouped by protocol arm (``config.arm``, in the order the arms
    first appear; stages of no arm are "shared steps"), each group folded unless it
    holds ``open_stage``. A campaign without two arms is one group with no heading."""
    arms: dict[str, list[Stage]] = {}
    for stage in stages:
        arms.setdefault(str((stage.config or {}).get("arm") or ""), []).append(stage)
    if len([a for a in arms if a]) < 2:
        return [{"arm": None, "stages": stages, "open": True}]
    return [
        {
            "arm": arm,
            "stages": group,
            "open": open_stage is not None and any(s.pk == open_stage.pk for s in group),
        }
        for arm, group in arms.items()
    ]


@login_required
@require_GET
def campaign_detail(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = campaign_or_404(request, slug)
    return _render_detail(request, campaign)


def _render_detail(
    request: HttpRequest,
    campaign: Campaign,
    *,
    stage_form: StageAddForm | None = None,
    upload_stage: Stage | None = None,
    upload_form: ItemUploadForm | None = None,
    rejection: dict[str, Any] | None = None,
    status: int = 200,
) -> HttpResponse:
    # One progress read gives every count the page shows (four grouped queries), so
    # no per-stage count subqueries run on a large campaign.
    progress = campaign_progress(campaign=campaign)
    counts = {p.stage_id: p for p in progress.stages}
    stages = list(campaign.stages.select_related("next_stage").order_by("position"))
    stage_names = {s.pk: s.name for s in stages}
    qualification_names = dict(qualification_type_choices(owner_id=campaign.owner_id))
    for stage in stages:
        p = counts[stage.pk]
        said = summary_lines(
            stage, stage_names=stage_names, qualification_names=qualification_names
        )
        stage.settings_summary = [(t, said[k]) for k, t in SETTING_TITLES]  # type: ignore[attr-defined]
        stage.item_count = sum(p.items.values())  # type: ignore[attr-defined]
        stage.hit_count = sum(p.hits.values())  # type: ignore[attr-defined]
        stage.assignment_count = sum(p.assignments.values())  # type: ignore[attr-defined]
        stage.waiting_count = p.items.get(ItemStatus.PENDING, 0)  # type: ignore[attr-defined]
        stage.platform_rules = stage_platform_rules(stage=stage)  # type: ignore[attr-defined]
        stage.campaign = campaign
        stage.unenforced = stage_unenforced_requirements(stage=stage)  # type: ignore[attr-defined]
        stage.takes_articles = task_type_get(stage.task_type).takes_articles  # type: ignore[attr-defined]
        stage.upload_columns = item_columns(task_type_get(stage.task_type))  # type: ignore[attr-defined]
    estimate, estimate_error = None, ""
    stage_groups = _stage_groups(stages, open_stage=upload_stage)
    try:
        estimate = campaign_cost_estimate(
            campaign=campaign,
            stages=stages,
            item_counts={p.stage_id: sum(p.items.values()) for p in progress.stages},
        )
    except DomainError as exc:
        estimate_error = str(exc)
    context = {
        "campaign": campaign,
        "stages": stages,
        "stage_groups": stage_groups,
        "estimate": estimate,
        "estimate_error": estimate_error,
        "transitions": _transition_buttons(campaign),
        "editable": campaign.state in EDITABLE_STATES,
        "stage_form": stage_form or StageAddForm(),
        "upload_stage": upload_stage,
        "upload_form": upload_form,
        "rejection": rejection,
        "is_local": platform_for(campaign).hosts_workforce,
        "moves_money": platform_for(campaign.provider).moves_money,
        "flow": campaign_pipeline_flow(campaign=campaign, progress=progress, stages=stages),
        # A long pipeline (Nangia's 19 stages) shows its stage cards folded.
        "stages_open": len(stages) <= STAGES_SHOWN_OPEN,
        "awaiting_review": sum(p.assignments.get("submitted", 0) for p in progress.stages),
        "progress": progress,
        "fooled": campaign_fooled_rates(campaign=campaign),
        "live": campaign.state in LIVE_STATES,
        "live_seconds": LIVE_SECONDS,
        # Plain values: a template would call ``ExportFormat.stream`` instead of testing it.
        "export_formats": [
            {
                "name": f.name,
                "title": f.title,
                "description": f.description,
                "stream": f.stream is not None,
            }
            for f in FORMATS.values()
        ],
        "export_splits": SPLITS,
    }
    return render(request, "frontend/campaign_detail.html", context, status=status)


@login_required
@require_GET
def campaign_progress_view(request: HttpRequest, slug: str) -> HttpResponse:
    """The progress section alone, for the campaign page's live refresh."""
    campaign = campaign_or_404(request, slug)
    context = {"campaign": campaign, "progress": campaign_progress(campaign=campaign)}
    return render(request, "frontend/_progress.html", context)


@login_required
@require_GET
def campaign_transition_confirm_view(request: HttpRequest, slug: str) -> HttpResponse:
    """Before a step that commits money: places, rewards, fees and the total, from the
    cost estimate, and the button that takes the step."""
    campaign = campaign_or_404(request, slug)
    to_state = request.GET.get("to_state", "")
    labels = {t["state"]: t["label"] for t in _transition_buttons(campaign)}
    if to_state not in labels:
        messages.error(
            request, f"A {campaign.get_state_display().lower()} campaign cannot do that."
        )
        return redirect(detail_url(campaign))
    estimate, estimate_error = None, ""
    try:
        estimate = campaign_cost_estimate(campaign=campaign)
    except DomainError as exc:
        estimate_error = str(exc)
    platform = platform_for(campaign.provider)
    context = {
        "campaign": campaign,
        "to_state": to_state,
        "label": labels[to_state],
        "estimate": estimate,
        "estimate_error": estimate_error,
        "places": sum(s.assignments for s in estimate.stages) if estimate else 0,
        "no_real_money": campaign.sandbox and platform.has_sandbox,
        # Stages the platform would refuse: named, and the step is not offered.
        "refused": (
            campaign_rules_problems(campaign=campaign) if to_state in WORKABLE_STATES else {}
        ),
        # No sandbox, but test participants: the pilot can go to them, at no cost.
        "test_participants": to_state == CampaignState.PILOT
        and not platform.has_sandbox
        and platform.rules().test_participants,
    }
    return render(request, "frontend/campaign_confirm.html", context)


def _completion_consequence(campaign: Campaign) -> str:
    """What completing does, in the campaign's own numbers."""
    progress = campaign_progress(campaign=campaign)
    total = sum(s.items_total for s in progress.stages)
    done = sum(s.items_done for s in progress.stages)
    open_hits = sum(s.hits_open for s in progress.stages)
    return (
        f"Completing is final: the campaign cannot be resumed, edited or published again. "
        f"Its workers can take no more tasks and read that it takes no more work; "
        f"{open_hits} open HIT{'s' if open_hits != 1 else ''} close, and {total - done} of "
        f"{total} item{'s' if total != 1 else ''} stay unfinished. Work already submitted "
        "stays in the campaign, to review and export."
    )


@login_required
@require_POST
def campaign_transition_view(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = campaign_or_404(request, slug)
    to_state = request.POST.get("to_state", "")
    if transition_commits_money(campaign=campaign, to_state=to_state) and (
        request.POST.get("confirmed") != "yes"
    ):
        # No money moves without the page that states how much.
        url = reverse("frontend:campaign-transition-confirm", kwargs={"slug": campaign.slug})
        return redirect(f"{url}?{urlencode({'to_state': to_state})}")
    if to_state == CampaignState.COMPLETED and to_state in TRANSITIONS[campaign.state]:
        asked = confirm_first(
            request,
            title=f"Complete “{campaign.name}”?",
            consequence=_completion_consequence(campaign),
            button="Complete the campaign (final)",
            cancel_url=detail_url(campaign),
        )
        if asked is not None:
            return asked
    try:
        campaign = campaign_start(
            campaign=campaign,
            to_state=to_state,
            test_study=request.POST.get("test_study") == "yes",
        )
    except DomainError as exc:  # IllegalTransition included: its message says what is allowed
        messages.error(request, str(exc))
    else:
        messages.success(request, f"The campaign is now {campaign.get_state_display().lower()}.")
    return redirect(detail_url(campaign))


@login_required
@require_POST
def stage_add_view(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = campaign_or_404(request, slug)
    form = StageAddForm(request.POST)
    if form.is_valid():
        try:
            stage = stage_add(campaign=campaign, actor=request.user, **form.cleaned_data)
        except DomainError as exc:
            add_domain_errors(form, exc)
        else:
            messages.success(request, f"Stage “{stage.name}” added.")
            return redirect(detail_url(campaign, f"stage-{stage.pk}"))
    return _render_detail(request, campaign, stage_form=form, status=400)


@login_required
@require_POST
def stage_publish_view(request: HttpRequest, slug: str, stage_id: int) -> HttpResponse:
    """The stage card's Publish: its waiting items get HITs now."""
    campaign = campaign_or_404(request, slug)
    stage = stage_or_404(campaign, stage_id)
    stage.campaign = campaign
    try:
        made = stage_publish_waiting(stage=stage)
    except DomainError as exc:
        messages.error(request, f"Not published: {exc}")
    else:
        messages.success(
            request,
            f"Stage “{stage.name}”: published"
            + (
                f" {made} HIT{'s' if made != 1 else ''}."
                if made
                else "; the platform makes the HITs."
            ),
        )
    return redirect(detail_url(campaign, f"stage-{stage.pk}"))


@login_required
@require_POST
def stage_upload_view(request: HttpRequest, slug: str, stage_id: int) -> HttpResponse:
    campaign = campaign_or_404(request, slug)
    stage = stage_or_404(campaign, stage_id)
    form = ItemUploadForm(request.POST, request.FILES)
    if form.is_valid() and form.cleaned_data["file"].size > settings.ITEM_UPLOAD_MAX_BYTES:
        # Refused before reading, so an oversized file never sits in memory whole.
        form.add_error("file", f"The file is larger than {settings.ITEM_UPLOAD_MAX_BYTES} bytes.")
    if not form.is_valid():
        return _render_detail(request, campaign, upload_stage=stage, upload_form=form, status=400)
    upload = form.cleaned_data["file"]
    if upload.size > settings.ITEM_UPLOAD_INLINE_MAX_BYTES:
        # A large file is stored by a background job (still all or nothing).
        try:
            items_upload_check(stage=stage)
        except DomainError as exc:
            messages.error(request, str(exc))
            return redirect(detail_url(campaign, f"stage-{stage.pk}"))
        try:
            job = job_upload_start(
                stage=stage, content=upload.read(), filename=upload.name or "", actor=request.user
            )
        except StorageUnavailable as exc:  # nothing recorded: the same file may be sent again
            messages.error(request, str(exc))
            return redirect(detail_url(campaign, f"stage-{stage.pk}"))
        return redirect("frontend:job-detail", job_id=job.id)
    try:
        result = items_upload(stage=stage, content=upload.read(), filename=upload.name or "")
    except UploadRejected as exc:
        rows = exc.errors if isinstance(exc.errors, list) else []
        # A one-line refusal is said once, in the message, not again as a table row.
        rows = [r for r in rows if not (r.get("row") is None and r.get("message") == str(exc))]
        rejection = {
            "message": str(exc),
            "filename": upload.name,
            "rows": rows[:MAX_ROW_ERRORS_SHOWN],
            "more": max(0, len(rows) - MAX_ROW_ERRORS_SHOWN),
        }
        return _render_detail(
            request, campaign, upload_stage=stage, rejection=rejection, status=400
        )
    except DomainError as exc:
        messages.error(request, str(exc))
    else:
        created = result.created
        messages.success(
            request,
            f"Stored {created} item{'s' if created != 1 else ''} from {upload.name} "
            f"in stage “{stage.name}”.",
        )
    return redirect(detail_url(campaign, f"stage-{stage.pk}"))
