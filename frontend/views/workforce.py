"""Local workforce pages: invite links for workers without an account, and grants to
logged-in annotators."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from campaigns.design.access import campaign_can_manage
from campaigns.design.platform import platform_for
from campaigns.models import Campaign, InviteLink
from campaigns.platforms.credentials import campaign_credentials_summary
from campaigns.work.invites import (
    invite_create,
    invite_quiz_retake_warning,
    invite_revoke,
    invite_url,
    local_grant_add,
    local_grant_remove,
)
from campaigns.work.selectors.access import invite_list
from campaigns.work.selectors.review import local_grant_list
from frontend.forms import CredentialsForm, GrantAddForm, InviteCreateForm
from frontend.views.common import add_domain_errors, campaign_or_404, request_user, stage_or_404
from frontend.views.confirm import confirm_first
from qaportal.errors import DomainError

INVITES_PER_PAGE = 50


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


def render_workforce(
    request: HttpRequest,
    campaign: Campaign,
    *,
    invite_form: InviteCreateForm | None = None,
    grant_form: GrantAddForm | None = None,
    credentials_form: CredentialsForm | None = None,
    status: int = 200,
) -> HttpResponse:
    is_local = platform_for(campaign).hosts_workforce
    context: dict[str, Any] = {"campaign": campaign, "is_local": is_local}
    if not is_local:
        context.update(
            {
                "account": campaign_credentials_summary(campaign=campaign),
                "can_manage": campaign_can_manage(campaign=campaign, user=request.user),
                "credentials_form": credentials_form or CredentialsForm(provider=campaign.provider),
            }
        )
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
    return render_workforce(request, campaign_or_404(request, slug))


@login_required
@require_POST
def invite_create_view(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = campaign_or_404(request, slug)
    form = InviteCreateForm(request.POST, stages=_stage_choices(campaign))
    if form.is_valid():
        stage_id = form.cleaned_data["stage"]
        try:
            invite = invite_create(
                campaign=campaign,
                stage=stage_or_404(campaign, stage_id) if stage_id is not None else None,
                created_by=request_user(request),
                expires_in=timedelta(days=form.cleaned_data["expires_in_days"]),
                max_uses=form.cleaned_data["max_uses"],
            )
        except DomainError as exc:
            add_domain_errors(form, exc)
        else:
            messages.success(
                request,
                f"Invite link created; send it to your workers: {invite_url(invite=invite)}",
            )
            warning = invite_quiz_retake_warning(invite=invite)
            if warning:
                messages.warning(request, warning)
            return redirect(_workforce_url(campaign, f"invite-{invite.pk}"))
    return render_workforce(request, campaign, invite_form=form, status=400)


@login_required
@require_POST
def invite_revoke_view(request: HttpRequest, slug: str, invite_id: int) -> HttpResponse:
    campaign = campaign_or_404(request, slug)
    invite = campaign.invite_links.filter(pk=invite_id).first()
    if invite is None:
        raise Http404("No such invite link in this campaign.")
    asked = confirm_first(
        request,
        title="Revoke this invite link?",
        consequence=(
            f"Revoking is final: nobody can join through this link any more, and the "
            f"{invite.use_count} worker{'s' if invite.use_count != 1 else ''} who joined "
            "through it can take no more tasks. Their past work stays. A new link can be "
            "made, but it is a different link."
        ),
        button="Revoke the link",
        cancel_url=_workforce_url(campaign, "invites"),
    )
    if asked is not None:
        return asked
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
    campaign = campaign_or_404(request, slug)
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
                local_grant_add(campaign=campaign, user=user, granted_by=request_user(request))
            except DomainError as exc:
                add_domain_errors(form, exc)
            else:
                messages.success(
                    request, f"{username} may now work on this campaign when logged in."
                )
                return redirect(_workforce_url(campaign, "grants"))
    return render_workforce(request, campaign, grant_form=form, status=400)


@login_required
@require_POST
def grant_remove_view(request: HttpRequest, slug: str, grant_id: int) -> HttpResponse:
    campaign = campaign_or_404(request, slug)
    grant = campaign.local_grants.select_related("user").filter(pk=grant_id).first()
    if grant is None:
        raise Http404("No such grant in this campaign.")
    asked = confirm_first(
        request,
        title=f"Remove {grant.user.get_username()}'s access?",
        consequence=(
            f"{grant.user.get_username()} can take no more tasks in this campaign; "
            "their past work stays. Access can be granted again."
        ),
        button="Remove access",
        cancel_url=_workforce_url(campaign, "grants"),
    )
    if asked is not None:
        return asked
    local_grant_remove(campaign=campaign, user=grant.user)
    messages.success(
        request,
        f"{grant.user.get_username()} can take no more tasks in this campaign; "
        "their past work stays.",
    )
    return redirect(_workforce_url(campaign, "grants"))
