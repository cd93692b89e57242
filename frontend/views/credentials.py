"""The platform account a paid campaign uses: the environment's, or its own credentials."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from campaigns.design.access import campaign_can_manage
from campaigns.platforms.credentials import campaign_credentials_delete, campaign_credentials_set
from frontend.forms import CredentialsForm
from frontend.views.common import add_domain_errors, campaign_or_404
from frontend.views.confirm import confirm_first
from frontend.views.workforce import render_workforce
from qaportal.errors import DomainError


def _account_url(slug: str) -> str:
    return reverse("frontend:campaign-workforce", kwargs={"slug": slug}) + "#account"


@login_required
@require_POST
def credentials_set_view(request: HttpRequest, slug: str) -> HttpResponse:
    """Store the campaign's own credentials (owner or staff); the values are not shown again."""
    campaign = campaign_or_404(request, slug)
    form = CredentialsForm(request.POST, provider=campaign.provider)
    if form.is_valid():
        try:
            campaign_credentials_set(
                campaign=campaign, actor=request.user, values=form.cleaned_data
            )
        except DomainError as exc:
            add_domain_errors(form, exc)
        else:
            messages.success(request, "Saved: this campaign now uses its own platform account.")
            return redirect(_account_url(slug))
    return render_workforce(request, campaign, credentials_form=form, status=400)


@login_required
@require_POST
def credentials_delete_view(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = campaign_or_404(request, slug)
    if not campaign_can_manage(campaign=campaign, user=request.user):
        raise PermissionDenied("Only the owner can remove a campaign's platform credentials.")
    asked = confirm_first(
        request,
        title="Delete this campaign's credentials?",
        consequence=(
            "The stored credentials are deleted for good (they are not shown again, so keep "
            "a copy to restore them): from now on the campaign works through the platform "
            "account configured on this server, if there is one."
        ),
        button="Delete the credentials",
        cancel_url=_account_url(slug),
    )
    if asked is not None:
        return asked
    if not campaign_credentials_delete(campaign=campaign, actor=request.user):
        messages.info(request, "This campaign had no credentials of its own.")
    else:
        messages.success(request, "Removed: the campaign uses the configured platform account.")
    return redirect(_account_url(slug))
