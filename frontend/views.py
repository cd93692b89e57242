"""Requester pages: campaigns, their stages, state transitions and item uploads;
the local workforce (invite links, grants) and the review queue.

Views are thin: reads go through ``campaigns.selectors``, writes through
``campaigns.services``. A campaign the user may not see is a 404, never a 403,
so that the slugs of other requesters' campaigns do not leak.
"""

from __future__ import annotations

import importlib
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AnonymousUser, User
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from campaigns.models import (
    Assignment,
    AssignmentStatus,
    Campaign,
    CampaignState,
    InviteLink,
    Provider,
    Stage,
)
from campaigns.selectors import campaign_get_visible, campaign_list_visible, stage_list_with_counts
from campaigns.selectors_review import (
    assignment_list_for_campaign,
    assignment_review_queue,
    hit_items_by_hit,
    local_grant_list,
    telemetry_summary,
)
from campaigns.selectors_work import invite_list
from campaigns.services import (
    DomainError,
    UploadRejected,
    campaign_create,
    stage_add,
)
from campaigns.services.campaigns import EDITABLE_STATES, TRANSITIONS
from campaigns.services.invites import (
    invite_create,
    invite_revoke,
    invite_url,
    local_grant_add,
    local_grant_remove,
)
from campaigns.services.work import (
    DECIDED_STATES,
    assignment_approve,
    assignment_reject,
    campaign_start,
)
from frontend.forms import (
    BulkReviewForm,
    CampaignCreateForm,
    GrantAddForm,
    InviteCreateForm,
    ItemUploadForm,
    ReviewDecisionForm,
    StageAddForm,
)

CAMPAIGNS_PER_PAGE = 50
# A rejected upload can have thousands of bad rows; the first ones show the pattern.
MAX_ROW_ERRORS_SHOWN = 50
INVITES_PER_PAGE = 50
REVIEWS_PER_PAGE = 25
# Answers are JSON of any shape; past this depth the page shows the rest as text.
MAX_OUTLINE_DEPTH = 6
# PostgreSQL's jsonb does not keep key order; these read best first, the rest follow.
OUTLINE_FIRST_KEYS = ("title", "text", "question", "answer")


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
        "is_local": campaign.provider == Provider.LOCAL,
        "awaiting_review": assignment_review_queue(campaign=campaign).count(),
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


# --- Local workforce: invite links and grants ------------------------------------------


def _workforce_url(campaign: Campaign, anchor: str = "") -> str:
    url = reverse("frontend:campaign-workforce", kwargs={"slug": campaign.slug})
    return f"{url}#{anchor}" if anchor else url


def _site_url(path: str) -> str:
    # The same base as invite links, so every URL a requester hands out looks alike.
    return settings.SITE_URL.rstrip("/") + path


def _invite_state(invite: InviteLink) -> str:
    if invite.revoked_at is not None:
        return "revoked"
    if invite.expires_at <= timezone.now():
        return "expired"
    if invite.max_uses is not None and invite.use_count >= invite.max_uses:
        return "used up"
    return "active"


def _stage_choices(campaign: Campaign) -> list[tuple[int, str]]:
    return [(s.pk, s.name) for s in campaign.stages.order_by("position")]


def _render_workforce(
    request: HttpRequest,
    campaign: Campaign,
    *,
    invite_form: InviteCreateForm | None = None,
    grant_form: GrantAddForm | None = None,
    status: int = 200,
) -> HttpResponse:
    is_local = campaign.provider == Provider.LOCAL
    context: dict[str, Any] = {"campaign": campaign, "is_local": is_local}
    if is_local:
        page = Paginator(invite_list(campaign=campaign), INVITES_PER_PAGE).get_page(
            request.GET.get("page")
        )
        stages = list(campaign.stages.order_by("position"))
        context.update(
            {
                "invite_page": page,
                "invites": [
                    {"invite": i, "url": invite_url(invite=i), "state": _invite_state(i)}
                    for i in page.object_list
                ],
                "grants": list(local_grant_list(campaign=campaign)),
                "stages": [
                    {
                        "stage": s,
                        "url": _site_url(reverse("worker:stage", kwargs={"stage_id": s.pk})),
                    }
                    for s in stages
                ],
                "invite_form": invite_form
                or InviteCreateForm(stages=[(s.pk, s.name) for s in stages]),
                "grant_form": grant_form or GrantAddForm(),
            }
        )
    return render(request, "frontend/campaign_workforce.html", context, status=status)


@login_required
@require_GET
def campaign_workforce(request: HttpRequest, slug: str) -> HttpResponse:
    """Invite links, grants to logged-in annotators and the worker-page URLs."""
    return _render_workforce(request, _campaign_or_404(request, slug))


@login_required
@require_POST
def invite_create_view(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = _campaign_or_404(request, slug)
    form = InviteCreateForm(request.POST, stages=_stage_choices(campaign))
    if form.is_valid():
        stage_id = form.cleaned_data["stage"]
        try:
            invite = invite_create(
                campaign=campaign,
                stage=_stage_or_404(campaign, stage_id) if stage_id is not None else None,
                created_by=_user(request),
                expires_in=timedelta(days=form.cleaned_data["expires_in_days"]),
                max_uses=form.cleaned_data["max_uses"],
            )
        except DomainError as exc:
            _add_domain_errors(form, exc)
        else:
            messages.success(
                request,
                f"Invite link created; send it to your workers: {invite_url(invite=invite)}",
            )
            return redirect(_workforce_url(campaign, f"invite-{invite.pk}"))
    return _render_workforce(request, campaign, invite_form=form, status=400)


@login_required
@require_POST
def invite_revoke_view(request: HttpRequest, slug: str, invite_id: int) -> HttpResponse:
    campaign = _campaign_or_404(request, slug)
    invite = campaign.invite_links.filter(pk=invite_id).first()
    if invite is None:
        raise Http404("No such invite link in this campaign.")
    was_revoked = invite.revoked_at is not None
    invite_revoke(invite=invite)
    if was_revoked:
        messages.info(request, "This invite link was already revoked.")
    else:
        messages.success(
            request,
            "Invite link revoked: nobody can join through it, and the workers who joined "
            "through it can take no more tasks.",
        )
    return redirect(_workforce_url(campaign, "invites"))


@login_required
@require_POST
def grant_add_view(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = _campaign_or_404(request, slug)
    form = GrantAddForm(request.POST)
    if form.is_valid():
        user_model = get_user_model()
        username = form.cleaned_data["username"].strip()
        user = user_model.objects.filter(
            **{user_model.USERNAME_FIELD: username, "is_active": True}
        ).first()
        if user is None:
            form.add_error("username", f"No active account with the username “{username}”.")
        else:
            try:
                local_grant_add(campaign=campaign, user=user, granted_by=_user(request))
            except DomainError as exc:
                _add_domain_errors(form, exc)
            else:
                messages.success(
                    request, f"{username} may now work on this campaign when logged in."
                )
                return redirect(_workforce_url(campaign, "grants"))
    return _render_workforce(request, campaign, grant_form=form, status=400)


@login_required
@require_POST
def grant_remove_view(request: HttpRequest, slug: str, grant_id: int) -> HttpResponse:
    campaign = _campaign_or_404(request, slug)
    grant = campaign.local_grants.select_related("user").filter(pk=grant_id).first()
    if grant is None:
        raise Http404("No such grant in this campaign.")
    local_grant_remove(campaign=campaign, user=grant.user)
    messages.success(
        request,
        f"{grant.user.get_username()} can take no more tasks in this campaign; "
        "their past work stays.",
    )
    return redirect(_workforce_url(campaign, "grants"))


# --- Review queue ----------------------------------------------------------------------


def _outline_key_rank(entry: tuple[Any, Any]) -> int:
    key = entry[0]
    return OUTLINE_FIRST_KEYS.index(key) if key in OUTLINE_FIRST_KEYS else len(OUTLINE_FIRST_KEYS)


def _outline(value: Any, depth: int = 0) -> dict[str, Any]:
    """Any JSON value as a tree the template draws: objects as definition lists, arrays
    as numbered lists, scalars as text. Generic, so every task type's answer reads."""
    if depth >= MAX_OUTLINE_DEPTH:
        return {"kind": "text", "value": str(value)}
    if isinstance(value, dict):
        if not value:
            return {"kind": "empty"}
        return {
            "kind": "dict",
            "entries": [
                {"key": str(k).replace("_", " "), "value": _outline(v, depth + 1)}
                for k, v in sorted(value.items(), key=_outline_key_rank)
            ],
        }
    if isinstance(value, list):
        if not value:
            return {"kind": "empty"}
        return {"kind": "list", "items": [_outline(v, depth + 1) for v in value]}
    if value is None or value == "":
        return {"kind": "empty"}
    if isinstance(value, bool):
        return {"kind": "text", "value": "yes" if value else "no"}
    return {"kind": "text", "value": str(value)}


def _review_url(campaign: Campaign, *, stage_id: int | None = None, page: int | None = None) -> str:
    url = reverse("frontend:campaign-review", kwargs={"slug": campaign.slug})
    query = {k: v for k, v in (("stage", stage_id), ("page", page)) if v}
    return f"{url}?{urlencode(query)}" if query else url


def _int_or_none(raw: str | None) -> int | None:
    return int(raw) if raw and raw.isdigit() else None


def _back_to_review(request: HttpRequest, campaign: Campaign) -> HttpResponse:
    """Back to the queue the decision came from (its stage filter and page)."""
    return redirect(
        _review_url(
            campaign,
            stage_id=_int_or_none(request.POST.get("stage")),
            page=_int_or_none(request.POST.get("page")),
        )
    )


@login_required
@require_GET
def campaign_review(request: HttpRequest, slug: str) -> HttpResponse:
    """Submitted assignments awaiting a decision, oldest first, with answers and telemetry."""
    campaign = _campaign_or_404(request, slug)
    stages = list(campaign.stages.order_by("position"))
    stage = None
    if request.GET.get("stage"):
        stage_id = _int_or_none(request.GET.get("stage"))
        stage = next((s for s in stages if s.pk == stage_id), None)
        if stage is None:
            raise Http404("No such stage in this campaign.")
    queue = assignment_review_queue(campaign=campaign, stage=stage)
    page = Paginator(queue, REVIEWS_PER_PAGE).get_page(request.GET.get("page"))
    assignments: list[Assignment] = list(page.object_list)
    items = hit_items_by_hit(hit_ids=[a.hit_id for a in assignments])
    rows = [
        {
            "assignment": a,
            "stage": a.hit.stage,
            "telemetry": telemetry_summary(a.telemetry),
            "answer": _outline(a.answers),
            "items": [
                {"external_id": i["external_id"], "data": _outline(i["data"])}
                for i in items.get(a.hit_id, [])
            ],
        }
        for a in assignments
    ]
    context = {
        "campaign": campaign,
        "stages": stages,
        "stage": stage,
        "page": page,
        "rows": rows,
        "can_decide": campaign.provider == Provider.LOCAL,
    }
    return render(request, "frontend/campaign_review.html", context)


def _decided_message(assignment: Assignment) -> str:
    by = (
        assignment.decided_by.get_username()
        if assignment.decided_by is not None
        else assignment.decision_source or "a rule"
    )
    when = assignment.decided_at.strftime("%Y-%m-%d %H:%M UTC") if assignment.decided_at else ""
    return (
        f"Assignment #{assignment.pk} was already {assignment.status} by {by}"
        f"{' on ' + when if when else ''}; nothing changed."
    )


def _review_decide(
    *, assignment: Assignment, user: User, decision: str, feedback: str
) -> tuple[str, str]:
    """Apply one requester decision: ("decided" | "already" | "refused", message).

    The status is read fresh first, so a second click says what happened before;
    the services lock the row and stay idempotent if two reviewers race.
    """
    assignment.refresh_from_db()
    if assignment.status in DECIDED_STATES:
        return "already", _decided_message(assignment)
    if assignment.status != AssignmentStatus.SUBMITTED:
        return "refused", (
            f"Assignment #{assignment.pk} is {assignment.status}, not submitted: "
            "there is nothing to decide."
        )
    try:
        if decision == "approve":
            assignment_approve(
                assignment=assignment, decided_by=user, source="requester", reason=feedback
            )
        else:
            assignment_reject(
                assignment=assignment,
                decided_by=user,
                source="requester",
                reason=feedback,
                feedback=feedback,
            )
    except DomainError as exc:
        return "refused", f"Assignment #{assignment.pk}: {exc}"
    verb = "approved" if decision == "approve" else "rejected"
    return "decided", f"Assignment #{assignment.pk} {verb}."


@login_required
@require_POST
def review_decide_view(request: HttpRequest, slug: str, assignment_id: int) -> HttpResponse:
    campaign = _campaign_or_404(request, slug)
    assignment = assignment_list_for_campaign(campaign=campaign).filter(pk=assignment_id).first()
    if assignment is None:
        raise Http404("No such assignment in this campaign.")
    form = ReviewDecisionForm(request.POST)
    if not form.is_valid():
        for errors in form.errors.values():
            for error in errors:
                messages.error(request, f"Assignment #{assignment.pk}: {error}")
        return _back_to_review(request, campaign)
    decision = form.cleaned_data["decision"]
    outcome, message = _review_decide(
        assignment=assignment,
        user=_user(request),
        decision=decision,
        feedback=form.cleaned_data["feedback"].strip(),
    )
    if outcome == "decided":
        next_stage = assignment.hit.stage.next_stage
        if decision == "approve" and next_stage is not None:
            message += f" Its answer goes on to “{next_stage.name}”."
        messages.success(request, message)
    elif outcome == "already":
        messages.warning(request, message)
    else:
        messages.error(request, message)
    return _back_to_review(request, campaign)


@login_required
@require_POST
def review_bulk_view(request: HttpRequest, slug: str) -> HttpResponse:
    """Approve or reject the selected assignments, one decision (and feedback) for all."""
    campaign = _campaign_or_404(request, slug)
    form = BulkReviewForm(request.POST)
    if not form.is_valid():
        for errors in form.errors.values():
            for error in errors:
                messages.error(request, str(error))
        return _back_to_review(request, campaign)
    ids = form.cleaned_data["ids"]
    found = {a.pk: a for a in assignment_list_for_campaign(campaign=campaign).filter(pk__in=ids)}
    counts = {"decided": 0, "already": 0, "refused": 0}
    problems: list[str] = []
    for assignment_id in ids:
        assignment = found.get(assignment_id)
        if assignment is None:
            problems.append(f"Assignment #{assignment_id} was not found in this campaign.")
            continue
        outcome, message = _review_decide(
            assignment=assignment,
            user=_user(request),
            decision=form.cleaned_data["decision"],
            feedback=form.cleaned_data["feedback"].strip(),
        )
        counts[outcome] += 1
        if outcome != "decided":
            problems.append(message)
    verb = "Approved" if form.cleaned_data["decision"] == "approve" else "Rejected"
    if counts["decided"]:
        n = counts["decided"]
        messages.success(request, f"{verb} {n} assignment{'s' if n != 1 else ''}.")
    for problem in problems:
        messages.warning(request, problem)
    return _back_to_review(request, campaign)
