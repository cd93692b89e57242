"""The campaign's datasheet page: the pre-filled datasheet (Gebru et al.) to complete,
with the questions only the requester can answer marked; saved with the campaign and
put in every ``hf`` export."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from campaigns.exports.card_facts import campaign_facts
from campaigns.exports.datasheet import (
    TO_ANSWER,
    datasheet_open_questions,
    datasheet_prefill,
)
from campaigns.models import Datasheet
from campaigns.services import DomainError
from campaigns.services.datasheet import MAX_DATASHEET_CHARS, datasheet_reset, datasheet_save
from frontend.views.common import add_domain_errors, campaign_or_404


class DatasheetForm(forms.Form):
    text = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 40, "spellcheck": "true"}),
        max_length=MAX_DATASHEET_CHARS,
        strip=False,
        label="Datasheet (Markdown)",
    )


@login_required
@require_http_methods(["GET", "POST"])
def campaign_datasheet_view(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = campaign_or_404(request, slug)
    saved = Datasheet.objects.filter(campaign=campaign).select_related("updated_by").first()
    status = 200
    if request.method == "POST" and "reset" in request.POST:
        datasheet_reset(campaign=campaign)
        messages.success(request, "Reset: exports use the pre-filled datasheet again.")
        return redirect("frontend:campaign-datasheet", slug=slug)
    if request.method == "POST":
        form = DatasheetForm(request.POST)
        if form.is_valid():
            try:
                datasheet_save(
                    campaign=campaign, actor=request.user, text=form.cleaned_data["text"]
                )
            except DomainError as exc:
                add_domain_errors(form, exc)
            else:
                messages.success(request, "Saved: the next hf export includes this datasheet.")
                return redirect("frontend:campaign-datasheet", slug=slug)
        status = 400
        text = request.POST.get("text", "")
    else:
        text = saved.text if saved else datasheet_prefill(facts=campaign_facts(campaign=campaign))
        form = DatasheetForm(initial={"text": text})
    open_lines = [line for line in text.splitlines() if TO_ANSWER in line]
    context = {
        "campaign": campaign,
        "form": form,
        "saved": saved,
        "mark": TO_ANSWER,
        "open_count": datasheet_open_questions(text),
        "open_lines": open_lines,
    }
    return render(request, "frontend/campaign_datasheet.html", context, status=status)
