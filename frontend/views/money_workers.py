"""The campaign's Costs page and Workers page (table, filters, actions), thin over
``campaigns.insights.money``, ``campaigns.insights.workers`` and
``campaigns.platforms.worker_actions``. Workers appear by pseudonym only."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from campaigns.design.access import campaign_can_manage
from campaigns.design.platform import platform_for
from campaigns.insights.money import campaign_costs
from campaigns.insights.workers import (
    ORDERING_FIELDS,
    campaign_worker_table,
    campaign_workers_by_pseudonym,
)
from campaigns.models import AssignmentStatus, Campaign, LedgerKind, QualificationType
from campaigns.platforms.worker_actions import (
    MAX_MESSAGE_WORKERS,
    worker_block,
    worker_qualification_set,
    worker_unblock,
    workers_message,
)
from frontend.views.common import add_domain_errors, campaign_or_404, request_user, shows_money
from qaportal.errors import DomainError

WORKERS_PER_PAGE = 100


@login_required
@require_GET
def campaign_costs_view(request: HttpRequest, slug: str) -> HttpResponse:
    """The ledger by stage and kind, the forecast, the budget and the wage per stage."""
    campaign = campaign_or_404(request, slug)
    costs = campaign_costs(campaign=campaign)
    kinds = [{"label": label, "sums": costs.by_kind[kind]} for kind, label in LedgerKind.choices]
    stages = [
        {
            "row": row,
            "kinds": [
                {"label": label, "sums": row.by_kind[kind]}
                for kind, label in LedgerKind.choices
                if any(row.by_kind[kind].values())
            ],
        }
        for row in costs.stages
    ]
    return render(
        request,
        "frontend/campaign_costs.html",
        {
            "campaign": campaign,
            "costs": costs,
            "kinds": kinds,
            "stages": stages,
            "moves_money": platform_for(campaign.provider).moves_money,
        },
    )


# The ordering list in words (the keys stay the API's).
ORDERING_LABELS = {
    "pseudonym": "Worker",
    "arm": "Arm",
    "submitted": "Submitted",
    "approved": "Approved",
    "rejected": "Rejected",
    "awaiting": "Awaiting review",
    "approval_rate": "Approval rate",
    "gold_accuracy": "Gold accuracy",
    "agreement": "Agreement",
    "median_work_seconds": "Median time",
    "paste_share": "Paste share",
    "earnings": "Earnings",
}
LOW_FIRST, HIGH_FIRST = "lowest first", "highest first"


class WorkerFilterForm(forms.Form):
    status = forms.ChoiceField(
        choices=[("", "any"), *AssignmentStatus.choices],
        required=False,
        label="Has work that is",
    )
    min_approval = forms.FloatField(
        min_value=0, max_value=1, required=False, label="Approval rate at least (0 to 1)"
    )
    blocked = forms.NullBooleanField(
        required=False,
        widget=forms.Select(choices=[("unknown", "any"), ("true", "blocked"), ("false", "not")]),
    )
    arm = forms.CharField(max_length=40, required=False)
    ordering = forms.ChoiceField(
        choices=[
            (o, label)
            for f in ORDERING_FIELDS
            for o, label in (
                (f, f"{ORDERING_LABELS.get(f, f)}, {LOW_FIRST}"),
                (f"-{f}", f"{ORDERING_LABELS.get(f, f)}, {HIGH_FIRST}"),
            )
        ],
        required=False,
        initial="pseudonym",
        label="Order by",
    )


class WorkerActionForm(forms.Form):
    ACTIONS = [
        ("message", "Send a message"),
        ("grant", "Grant a qualification"),
        ("revoke", "Revoke a qualification"),
        ("block", "Block"),
        ("unblock", "Unblock"),
    ]
    action = forms.ChoiceField(choices=ACTIONS)
    workers = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Pseudonyms, one per line (tick rows in the table to fill this in).",
    )
    subject = forms.CharField(max_length=200, required=False)
    body = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)
    reason = forms.CharField(max_length=5000, required=False, help_text="Why, for a block.")
    qualification_type = forms.ModelChoiceField(
        queryset=QualificationType.objects.none(), required=False
    )

    def __init__(self, *args: Any, campaign: Campaign, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["qualification_type"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = QualificationType.objects.filter(owner_id=campaign.owner_id)

    def clean_workers(self) -> list[str]:
        names = [n.strip() for n in self.cleaned_data["workers"].split() if n.strip()]
        names = list(dict.fromkeys(names))
        if not names:
            raise forms.ValidationError("Choose at least one worker.")
        if len(names) > MAX_MESSAGE_WORKERS:
            raise forms.ValidationError(f"At most {MAX_MESSAGE_WORKERS} workers at once.")
        return names

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        action = data.get("action")
        if action == "message" and not (data.get("body") or "").strip():
            self.add_error("body", "A message needs a body.")
        if action == "block" and not (data.get("reason") or "").strip():
            self.add_error("reason", "A block needs a reason.")
        if action in ("grant", "revoke") and data.get("qualification_type") is None:
            self.add_error("qualification_type", "Choose a qualification type.")
        return data


def _workers_url(campaign: Campaign) -> str:
    return reverse("frontend:campaign-workers", kwargs={"slug": campaign.slug})


def _render_workers(
    request: HttpRequest,
    campaign: Campaign,
    *,
    action_form: WorkerActionForm | None = None,
    status: int = 200,
) -> HttpResponse:
    filters = WorkerFilterForm(request.GET or None)
    chosen: dict[str, Any] = {}
    if filters.is_bound and filters.is_valid():
        chosen = {k: v for k, v in filters.cleaned_data.items() if v not in (None, "")}
    number = request.GET.get("page") or "1"
    hint = None
    if number.isdigit() and int(number) >= 1:  # the page the paginator will slice
        hint = ((int(number) - 1) * WORKERS_PER_PAGE, WORKERS_PER_PAGE)
    rows = campaign_worker_table(campaign=campaign, **chosen, page_hint=hint)
    page = Paginator(rows, WORKERS_PER_PAGE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "frontend/campaign_workers.html",
        {
            "campaign": campaign,
            "filters": filters,
            "page": page,
            "rows": page.object_list,
            "query": query.urlencode(),
            "quality_as_of": rows.quality_as_of,
            "action_form": action_form or WorkerActionForm(campaign=campaign),
            "can_block": campaign_can_manage(campaign=campaign, user=request.user),
            "moves_money": shows_money(campaign),
        },
        status=400 if filters.is_bound and not filters.is_valid() else status,
    )


@login_required
@require_GET
def campaign_workers_view(request: HttpRequest, slug: str) -> HttpResponse:
    """The workers table with its filters and the action form."""
    return _render_workers(request, campaign_or_404(request, slug))


@login_required
@require_POST
def campaign_workers_act_view(request: HttpRequest, slug: str) -> HttpResponse:
    """Message, qualify, block or unblock the chosen workers through the services."""
    campaign = campaign_or_404(request, slug)
    form = WorkerActionForm(request.POST, campaign=campaign)
    if not form.is_valid():
        return _render_workers(request, campaign, action_form=form, status=400)
    data = form.cleaned_data
    found = campaign_workers_by_pseudonym(campaign=campaign, pseudonyms=data["workers"])
    unknown = [p for p in data["workers"] if p not in found]
    if unknown:
        form.add_error("workers", f"Not workers of this campaign: {', '.join(unknown)}.")
        return _render_workers(request, campaign, action_form=form, status=400)
    workers = [found[p] for p in data["workers"]]
    user = request_user(request)
    action = data["action"]
    try:
        if action == "message":
            workers_message(
                campaign=campaign,
                actor=user,
                workers=workers,
                subject=data["subject"],
                body=data["body"],
            )
        for worker in workers if action != "message" else []:
            if action == "block":
                worker_block(campaign=campaign, actor=user, worker=worker, reason=data["reason"])
            elif action == "unblock":
                worker_unblock(campaign=campaign, actor=user, worker=worker)
            else:
                worker_qualification_set(
                    campaign=campaign,
                    worker=worker,
                    qualification_type=data["qualification_type"],
                    granted=action == "grant",
                )
    except DomainError as exc:
        add_domain_errors(form, exc)
        return _render_workers(request, campaign, action_form=form, status=400)
    except PermissionDenied as exc:
        form.add_error(None, str(exc))
        return _render_workers(request, campaign, action_form=form, status=403)
    label = dict(WorkerActionForm.ACTIONS)[action]
    messages.success(request, f"{label}: done for {len(workers)} worker(s).")
    return redirect(_workers_url(campaign))
