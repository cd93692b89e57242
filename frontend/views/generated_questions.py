"""The generated-questions page (GraphQuestions): each proposal with its answers,
characteristics and SPARQL; the requester edits the canonical question, accepts or
rejects it, and sends the accepted ones to a paraphrasing stage."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from campaigns.models import Campaign
from campaigns.tasktypes import task_type_names
from frontend.views.common import campaign_or_404, request_user
from linking.graphquestions.services import (
    generated_question_edit,
    generated_questions_decide,
    generated_questions_send,
)
from linking.models import GeneratedQuestion, GeneratedQuestionStatus
from qaportal.errors import DomainError

PER_PAGE = 50


def _url(campaign: Campaign) -> str:
    return reverse("frontend:generated-questions", kwargs={"slug": campaign.slug})


@login_required
@require_GET
def generated_questions_view(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = campaign_or_404(request, slug)
    status = request.GET.get("status", "")
    queryset = campaign.generated_questions.order_by("pk")
    if status:
        if status not in GeneratedQuestionStatus.values:
            raise Http404("No such status.")
        queryset = queryset.filter(status=status)
    page = Paginator(queryset, PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "campaign": campaign,
        "page": page,
        "questions": page.object_list,
        "status": status,
        "statuses": GeneratedQuestionStatus.choices,
        "stages": campaign.stages.filter(
            task_type__in=task_type_names(takes_generated_questions=True)
        ).order_by("position"),
        "accepted": campaign.generated_questions.filter(
            status=GeneratedQuestionStatus.ACCEPTED
        ).count(),
    }
    return render(request, "frontend/generated_questions.html", context)


@login_required
@require_POST
def generated_question_act_view(request: HttpRequest, slug: str, question_id: int) -> HttpResponse:
    """Save an edited canonical question and/or accept or reject it."""
    campaign = campaign_or_404(request, slug)
    question = GeneratedQuestion.objects.filter(campaign=campaign, pk=question_id).first()
    if question is None:
        raise Http404("No such generated question in this campaign.")
    try:
        text = request.POST.get("canonical_question")
        if text is not None and text.strip() != question.canonical_question:
            generated_question_edit(question=question, canonical_question=text)
        decision = request.POST.get("decision")
        if decision in ("accept", "reject"):
            generated_questions_decide(
                questions=[question], accept=decision == "accept", user=request_user(request)
            )
    except DomainError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Question {question.pk} saved.")
    return redirect(f"{_url(campaign)}#q-{question.pk}")


@login_required
@require_POST
def generated_questions_send_view(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = campaign_or_404(request, slug)
    stage = campaign.stages.filter(pk=request.POST.get("stage") or 0).first()
    if stage is None:
        messages.error(request, "Choose a paraphrasing stage of this campaign.")
        return redirect(_url(campaign))
    try:
        sent = generated_questions_send(campaign=campaign, stage=stage)
    except DomainError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request, f"Sent {sent} question{'s' if sent != 1 else ''} to “{stage.name}”."
        )
    return redirect(_url(campaign))
