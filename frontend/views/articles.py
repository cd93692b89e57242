"""The stage page's "add a plain article" form (``campaigns.services.articles``)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from campaigns.services import DomainError
from campaigns.services.articles import article_items_upload
from frontend.views.common import campaign_or_404, detail_url, stage_or_404


@login_required
@require_POST
def stage_article_view(request: HttpRequest, slug: str, stage_id: int) -> HttpResponse:
    campaign = campaign_or_404(request, slug)
    stage = stage_or_404(campaign, stage_id)
    questions = request.POST.get("questions", "").splitlines()
    try:
        made = article_items_upload(
            stage=stage,
            text=request.POST.get("text", ""),
            article_id=request.POST.get("article_id", ""),
            questions=questions,
        )
    except DomainError as exc:
        messages.error(request, f"The article was not added: {exc}")
    else:
        messages.success(
            request,
            f"“{made.title}”: {made.sentences} numbered sentences, "
            f"{made.upload.created} item(s) added to “{stage.name}”.",
        )
    return redirect(detail_url(campaign, f"stage-{stage.pk}"))
