"""Requester pages: campaigns, their stages, state transitions and item uploads.

Views are thin: reads go through ``campaigns.selectors``, writes through
``campaigns.services``. A campaign the user may not see is a 404, never a 403,
so that the slugs of other requesters' campaigns do not leak.
"""

from __future__ import annotations

import importlib
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AnonymousUser, User
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from campaigns.models import Campaign, CampaignState, Stage
from campaigns.selectors import campaign_get_visible, campaign_list_visible, stage_list_with_counts
from campaigns.services import (
    DomainError,
    UploadRejected,
    campaign_create,
    stage_add,
)
from campaigns.services.campaigns import EDITABLE_STATES, TRANSITIONS
from campaigns.services.work import campaign_start
from frontend.forms import CampaignCreateForm, ItemUploadForm, StageAddForm

CAMPAIGNS_PER_PAGE = 50
# A rejected upload can have thousands of bad rows; the first ones show the pattern.
MAX_ROW_ERRORS_SHOWN = 50


def _optional_service(module: str, name: str) -> Any | None:
    """``module.name``, or None while that module has not landed yet.

    The cost and upload services are developed alongside these pages; the pages
    must work before they exist. Only the module's own absence is tolerated: an
    import error inside it is a bug and propagates.
    """
    try:
        loaded = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        return None
    return getattr(loaded, name)


def _user(request: HttpRequest) -> User:
    # Every view here is behind login_required; this narrows the type for the services.
    user = request.user
    assert not isinstance(user, AnonymousUser)
    return user


def _campaign_or_404(request: HttpRequest, slug: str) -> Campaign:
    try:
        return campaign_get_visible(user=request.user, slug=slug)
    except Campaign.DoesNotExist:
        raise Http404("No such campaign.") from None


def _stage_or_404(campaign: Campaign, stage_id: int) -> Stage:
    stage = campaign.stages.filter(pk=stage_id).first()
    if stage is None:
        raise Http404("No such stage in this campaign.")
    return stage


def _detail_url(campaign: Campaign, anchor: str = "") -> str:
    url = reverse("frontend:campaign-detail", kwargs={"slug": campaign.slug})
    return f"{url}#{anchor}" if anchor else url


def _add_domain_errors(form: forms.Form, exc: DomainError) -> None:
    """Put a service's refusal on the form: field details where a field matches, and the message."""
    details = exc.errors if isinstance(exc.errors, dict) else {}
    for field, problems in details.items():
        if field in form.fields:
            for problem in problems if isinstance(problems, list) else [problems]:
                form.add_error(field, str(problem))
    form.add_error(None, str(exc))


def _transition_buttons(campaign: Campaign) -> list[dict[str, str]]:
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
    return [{"state": state, "label": labels[CampaignState(state)]} for state in allowed]


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
            campaign = campaign_create(owner=_user(request), **form.cleaned_data)
        except DomainError as exc:
            _add_domain_errors(form, exc)
        else:
            messages.success(request, f"Campaign “{campaign.name}” created.")
            return redirect(_detail_url(campaign))
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
    context = {"page": page, "campaigns": page.object_list, "form": form}
    return render(request, "frontend/campaign_list.html", context, status=status)


@login_required
@require_GET
def campaign_detail(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = _campaign_or_404(request, slug)
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
    stages = list(stage_list_with_counts(campaign=campaign).select_related("next_stage"))
    estimate, estimate_error = None, ""
    estimate_fn = _optional_service("campaigns.services.costs", "campaign_cost_estimate")
    if estimate_fn is not None:
        try:
            estimate = estimate_fn(campaign=campaign)
        except DomainError as exc:
            estimate_error = str(exc)
    context = {
        "campaign": campaign,
        "stages": stages,
        "estimate": estimate,
        "estimate_available": estimate_fn is not None,
        "estimate_error": estimate_error,
        "transitions": _transition_buttons(campaign),
        "editable": campaign.state in EDITABLE_STATES,
        "stage_form": stage_form or StageAddForm(),
        "upload_available": _optional_service("campaigns.services.items", "items_upload")
        is not None,
        "upload_stage": upload_stage,
        "upload_form": upload_form,
        "rejection": rejection,
    }
    return render(request, "frontend/campaign_detail.html", context, status=status)


@login_required
@require_POST
def campaign_transition_view(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = _campaign_or_404(request, slug)
    try:
        campaign = campaign_start(campaign=campaign, to_state=request.POST.get("to_state", ""))
    except DomainError as exc:  # IllegalTransition included: its message says what is allowed
        messages.error(request, str(exc))
    else:
        messages.success(request, f"The campaign is now {campaign.get_state_display().lower()}.")
    return redirect(_detail_url(campaign))


@login_required
@require_POST
def stage_add_view(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = _campaign_or_404(request, slug)
    form = StageAddForm(request.POST)
    if form.is_valid():
        try:
            stage = stage_add(campaign=campaign, **form.cleaned_data)
        except DomainError as exc:
            _add_domain_errors(form, exc)
        else:
            messages.success(request, f"Stage “{stage.name}” added.")
            return redirect(_detail_url(campaign, f"stage-{stage.pk}"))
    return _render_detail(request, campaign, stage_form=form, status=400)


@login_required
@require_POST
def stage_upload_view(request: HttpRequest, slug: str, stage_id: int) -> HttpResponse:
    campaign = _campaign_or_404(request, slug)
    stage = _stage_or_404(campaign, stage_id)
    items_upload = _optional_service("campaigns.services.items", "items_upload")
    if items_upload is None:
        messages.error(request, "Item upload is not available on this server yet.")
        return redirect(_detail_url(campaign, f"stage-{stage.pk}"))
    form = ItemUploadForm(request.POST, request.FILES)
    if form.is_valid() and form.cleaned_data["file"].size > settings.ITEM_UPLOAD_MAX_BYTES:
        # Refused before reading, so an oversized file never sits in memory whole.
        form.add_error("file", f"The file is larger than {settings.ITEM_UPLOAD_MAX_BYTES} bytes.")
    if not form.is_valid():
        return _render_detail(request, campaign, upload_stage=stage, upload_form=form, status=400)
    upload = form.cleaned_data["file"]
    try:
        result = items_upload(stage=stage, content=upload.read(), filename=upload.name or "")
    except UploadRejected as exc:
        rows = exc.errors if isinstance(exc.errors, list) else []
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
    return redirect(_detail_url(campaign, f"stage-{stage.pk}"))
