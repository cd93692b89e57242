"""Helpers shared by the requester pages: lookups that answer 404, form errors, URLs."""

from __future__ import annotations

from django import forms
from django.contrib.auth.models import AnonymousUser, User
from django.http import Http404, HttpRequest
from django.urls import reverse

from campaigns.design.platform import platform_for
from campaigns.design.selectors import campaign_get_visible
from campaigns.models import Campaign, Stage
from qaportal.errors import DomainError


def request_user(request: HttpRequest) -> User:
    """The signed-in user of a view behind ``login_required``, typed for the services."""
    user = request.user
    assert not isinstance(user, AnonymousUser)
    return user


def campaign_or_404(request: HttpRequest, slug: str) -> Campaign:
    """The campaign if the user may see it; invisible and missing look the same (404)."""
    try:
        return campaign_get_visible(user=request.user, slug=slug)
    except Campaign.DoesNotExist:
        raise Http404("No such campaign.") from None


def stage_or_404(campaign: Campaign, stage_id: int) -> Stage:
    """The stage of this campaign with this id; 404 otherwise."""
    stage = campaign.stages.filter(pk=stage_id).first()
    if stage is None:
        raise Http404("No such stage in this campaign.")
    return stage


def detail_url(campaign: Campaign, anchor: str = "") -> str:
    """The campaign's detail page, optionally at an anchor."""
    url = reverse("frontend:campaign-detail", kwargs={"slug": campaign.slug})
    return f"{url}#{anchor}" if anchor else url


def add_domain_errors(form: forms.Form, exc: DomainError) -> None:
    """Put a service's refusal on the form: field details where a field matches, and the message."""
    details = exc.errors if isinstance(exc.errors, dict) else {}
    for field, problems in details.items():
        if field in form.fields:
            for problem in problems if isinstance(problems, list) else [problems]:
                form.add_error(field, str(problem))
    form.add_error(None, str(exc))


def shows_money(campaign: Campaign) -> bool:
    """Whether the pages state money for ``campaign``: its platform pays the workers, or
    the requester pays an unpaid (local) workforce some other way and said so on a stage
    (``show_reward_to_local_workers``: the reward as a planning rate). Otherwise the
    pages show time (work time, median time), not wages, earnings or bonuses."""
    if platform_for(campaign).moves_money:
        return True
    return campaign.stages.filter(show_reward_to_local_workers=True).exists()
