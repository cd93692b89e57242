"""The review queue: submitted assignments with their answers, telemetry and rule
verdicts; the requester's approve/reject decisions, one at a time or in bulk; the
override of a decision a rule (or anyone) already made; and running a stage's
review rules.

Overriding is its own form and view on purpose: a second click on a stale page's
"Reject" must not turn over an approval, so the plain decision keeps answering
"already decided" and only the override form (with its required reason) goes
through ``validation.services.assignment_override``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import F, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from campaigns.design.access import campaign_can_manage
from campaigns.design.platform import platform_for
from campaigns.models import Assignment, AssignmentStatus, Campaign
from campaigns.platforms import fee_model_for
from campaigns.platforms.worker_actions import assignment_bonus_pay, worker_block
from campaigns.platforms.worker_pages import task_context_readonly
from campaigns.tasktypes import task_type_get
from campaigns.work.decisions import assignment_decide
from campaigns.work.selectors.review import (
    assignment_list_for_campaign,
    assignment_review_queue,
    hit_items_by_hit,
    queue_page,
    review_queue_size,
    telemetry_summary,
    worker_history_in_campaign,
)
from campaigns.work.submission import DECIDED_STATES
from frontend.forms import BulkReviewForm, ReviewDecisionForm
from frontend.views.common import (
    campaign_or_404,
    detail_url,
    request_user,
    shows_money,
    stage_or_404,
)
from frontend.views.confirm import confirm_first
from frontend.views.link_review import (
    answer_qids,
    link_review_rows,
    linked_answer,
    review_anchor,
)
from linking.selectors import entity_labels
from qaportal.errors import DomainError
from qaportal.money import MoneyFormatError, money_parse
from qaportal.outbox import task_after_commit
from validation.services import assignment_override

REVIEWS_PER_PAGE = 25
# Answers are JSON of any shape; past this depth the page shows the rest as text.
MAX_OUTLINE_DEPTH = 6
# PostgreSQL's jsonb does not keep key order; these read best first, the rest follow.
OUTLINE_FIRST_KEYS = ("title", "text", "question", "answer")


def _outline_key_rank(entry: tuple[Any, Any]) -> int:
    key = entry[0]
    return OUTLINE_FIRST_KEYS.index(key) if key in OUTLINE_FIRST_KEYS else len(OUTLINE_FIRST_KEYS)


def outline(value: Any, depth: int = 0) -> dict[str, Any]:
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
                {"key": str(k).replace("_", " "), "value": outline(v, depth + 1)}
                for k, v in sorted(value.items(), key=_outline_key_rank)
            ],
        }
    if isinstance(value, list):
        if not value:
            return {"kind": "empty"}
        return {"kind": "list", "items": [outline(v, depth + 1) for v in value]}
    if value is None or value == "":
        return {"kind": "empty"}
    if isinstance(value, bool):
        return {"kind": "text", "value": "yes" if value else "no"}
    return {"kind": "text", "value": str(value)}


# The review page's status filter: "held" is submitted with a rule's "hold".
STATUS_FILTERS = {
    "submitted": "Submitted (awaiting a decision)",
    "held": "Held by a rule",
    "approved": "Approved",
    "rejected": "Rejected",
}
_COUNT_TAIL = {"submitted": "awaiting a decision", "held": "held by a rule, awaiting a decision"}
DEFAULT_STATUS = "submitted"


def _review_url(
    campaign: Campaign,
    *,
    stage_id: int | None = None,
    page: int | None = None,
    status: str | None = None,
) -> str:
    url = reverse("frontend:campaign-review", kwargs={"slug": campaign.slug})
    status = status if status in STATUS_FILTERS and status != DEFAULT_STATUS else None
    query = {k: v for k, v in (("stage", stage_id), ("status", status), ("page", page)) if v}
    return f"{url}?{urlencode(query)}" if query else url


def _int_or_none(raw: str | None) -> int | None:
    return int(raw) if raw and raw.isdigit() else None


def _back_to_review(request: HttpRequest, campaign: Campaign, *, anchor: str = "") -> HttpResponse:
    """Back to the queue the decision came from (its stage and status filters, its page),
    at ``anchor`` (an element id of the page) when given."""
    url = _review_url(
        campaign,
        stage_id=_int_or_none(request.POST.get("stage")),
        page=_int_or_none(request.POST.get("page")),
        status=request.POST.get("status"),
    )
    return redirect(f"{url}#{anchor}" if anchor else url)


def _wants_json(request: HttpRequest) -> bool:
    """The review page's script asks for JSON (a decision in place, no reload)."""
    return "application/json" in request.headers.get("Accept", "")


def _number_text(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, list):
        return ", ".join(_number_text(v) for v in value) or "—"
    if value is None:
        return "—"
    return str(value)


# The review rules and their numbers as a requester reads them (validation/rules/).
RULE_WORDS = {
    "auto_approve": "Approve automatically",
    "gold_accuracy": "Gold accuracy",
    "consensus": "Agreement with the majority",
    "peer_overlap": "Overlap with other workers",
    "work_time": "Work time",
    "paste_share": "Pasted text",
    "duplicates": "Duplicate answers",
    "no_answer_rate": "“No answer” rate",
    "llm_flag": "Written by a model?",
}
NUMBER_WORDS = {
    "correct": "correct answers",
    "gold": "gold items answered",
    "min": "at least",
    "max": "at most",
    "min_gold": "judged from (gold items)",
    "min_answers": "answers needed for a majority",
    "agree": "items agreeing",
    "items": "items counted",
    "share": "share",
    "accuracy": "accuracy",
    "rate": "rate",
    "score": "score",
}
# Numbers that are fractions of one, shown as percentages.
FRACTIONS = {"share", "accuracy", "rate", "min", "max", "score"}


def rule_words(name: str) -> str:
    """A rule's name in words ("gold_accuracy" → "Gold accuracy")."""
    return RULE_WORDS.get(name, name.replace("_", " ").capitalize())


def _number_words(name: str, value: Any) -> dict[str, str]:
    if (
        name in FRACTIONS
        and isinstance(value, int | float)
        and not isinstance(value, bool)
        and 0 <= value <= 1
    ):
        text = f"{value * 100:.3g} %"
    else:
        text = _number_text(value)
    return {"name": NUMBER_WORDS.get(name, name.replace("_", " ")), "value": text}


def review_summary(details: Any) -> dict[str, Any] | None:
    """``review_details["review"]`` as the page shows it: the combined decision and each
    rule's verdict, reason and numbers (as "name: value" text); None before any rule ran."""
    review = details.get("review") if isinstance(details, Mapping) else None
    if not isinstance(review, Mapping):
        return None
    rules = []
    for verdict in review.get("rules") or []:
        if not isinstance(verdict, Mapping):
            continue
        numbers = verdict.get("numbers")
        rules.append(
            {
                "rule": str(verdict.get("rule", "")),
                "rule_words": rule_words(str(verdict.get("rule", ""))),
                "decision": str(verdict.get("decision", "")),
                "reason": str(verdict.get("reason", "")),
                "numbers": [
                    _number_words(str(k), v)
                    for k, v in (numbers.items() if isinstance(numbers, Mapping) else [])
                ],
            }
        )
    return {
        "decision": str(review.get("decision", "")),
        "source": str(review.get("source", "")),
        "reason": str(review.get("reason", "")),
        "at": review.get("at"),
        "applied": review.get("applied", True),
        "rules": rules,
    }


def _share(value: Any) -> str:
    return f"{value:.0%}" if isinstance(value, int | float) else "—"


def llm_flag_summary(flag: Any) -> dict[str, Any] | None:
    """What the review page shows of ``Assignment.llm_flag``: whether it is raised and,
    per item, the score against the threshold with its evidence (similarity measures,
    telemetry, the model's text, id and version). None when there is no flag."""
    if not isinstance(flag, Mapping):
        return None
    items = []
    for f in flag.get("items") or []:
        if not isinstance(f, Mapping):
            continue
        c: Mapping[str, Any] = f["components"] if isinstance(f.get("components"), Mapping) else {}
        t: Mapping[str, Any] = f["thresholds"] if isinstance(f.get("thresholds"), Mapping) else {}
        items.append(
            {
                "item": f.get("item") or "",
                "status": str(f.get("status") or "").replace("_", " "),
                "flagged": bool(f.get("flagged")),
                "score": _number_text(f.get("score")) if f.get("score") is not None else "—",
                "threshold": _number_text(t.get("flag")) if t.get("flag") is not None else "—",
                "similarity": _number_text(c.get("similarity", "—")),
                "rouge_l": _number_text(c.get("rouge_l", "—")),
                "char_ngram": _number_text(c.get("char_ngram", "—")),
                "paste_share": _share(c.get("paste_share")),
                "untyped_share": _share(c.get("untyped_share")),
                "focus_losses": c.get("focus_losses"),
                "model": " ".join(str(x) for x in (f.get("model_id"), f.get("model_version")) if x),
                "model_text": str(f.get("model_text") or ""),
            }
        )
    return {
        "flagged": bool(flag.get("flagged")),
        "status": str(flag.get("status") or "").replace("_", " "),
        "score": _number_text(flag.get("score")) if flag.get("score") is not None else "—",
        "items": items,
    }


def _overrides(details: Any) -> list[Mapping[str, Any]]:
    """The requester's overrides recorded in ``review_details["overrides"]``, oldest first."""
    found = details.get("overrides") if isinstance(details, Mapping) else None
    return [o for o in found or [] if isinstance(o, Mapping)]


def _queue(
    campaign: Campaign,
    *,
    stage: Any,
    status: str,
    stage_ids: list[int] | None = None,
    size: int | None = None,
) -> QuerySet[Assignment]:
    if status in (AssignmentStatus.APPROVED, AssignmentStatus.REJECTED):
        decided = assignment_list_for_campaign(
            campaign=campaign, status=status, stage=stage, stage_ids=stage_ids
        )
        return decided.order_by(F("decided_at").desc(nulls_last=True), "-id")
    queue = assignment_review_queue(
        campaign=campaign,
        stage=stage,
        stage_ids=stage_ids,
        size=size if status == AssignmentStatus.SUBMITTED else None,
    )
    if status == "held":
        queue = queue.filter(review_details__review__decision="hold")
    return queue


@login_required
@require_GET
def campaign_review(request: HttpRequest, slug: str) -> HttpResponse:
    """Assignments by status (default: submitted, oldest first; decided ones newest
    decision first) with answers, telemetry and rule verdicts; then the entity-link
    items the annotators could not settle."""
    return _review_page(request, campaign_or_404(request, slug), request.GET)


def _review_page(
    request: HttpRequest, campaign: Campaign, query: Any, *, http_status: int = 200
) -> HttpResponse:
    """The review queue chosen by ``query`` (``stage``, ``status``, ``page``), answering
    ``http_status``: a form refused on the queue shows the queue again with its message."""
    stages = list(campaign.stages.order_by("position"))
    stage = None
    if query.get("stage"):
        stage_id = _int_or_none(query.get("stage"))
        stage = next((s for s in stages if s.pk == stage_id), None)
        if stage is None:
            raise Http404("No such stage in this campaign.")
    status = query.get("status") or DEFAULT_STATUS
    if status not in STATUS_FILTERS:
        raise Http404("No such status filter.")
    stage_ids = [s.pk for s in stages]
    size = None
    if status in (AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED, AssignmentStatus.REJECTED):
        # The queue's length from the assignment counters, not a COUNT of the queue.
        size = review_queue_size(campaign=campaign, status=status, stage=stage, stage_ids=stage_ids)
    queue = _queue(campaign, stage=stage, status=status, stage_ids=stage_ids, size=size)
    paginator = Paginator(queue, REVIEWS_PER_PAGE)
    if size is not None:
        paginator.count = size
    page = paginator.get_page(query.get("page"))
    cut = page.object_list  # the queue's slice, not yet read
    assert isinstance(cut, QuerySet)
    assignments: list[Assignment] = queue_page(cut)
    items = hit_items_by_hit(hit_ids=[a.hit_id for a in assignments])
    history = worker_history_in_campaign(
        campaign=campaign, worker_ids={a.worker_id for a in assignments}, stage_ids=stage_ids
    )
    fees = fee_model_for(campaign.provider)
    linking = {
        a.pk: task_type_get(a.hit.stage.task_type)
        for a in assignments
        if task_type_get(a.hit.stage.task_type).links_entities
    }
    labels = entity_labels(
        qids={q for a in assignments if a.pk in linking for q in answer_qids(a.answers)}
    )
    rows = []
    for a in assignments:
        review = review_summary(a.review_details)
        fee = fees.assignment_fee(reward=a.hit.reward, max_assignments=a.hit.max_assignments)
        rows.append(
            {
                "assignment": a,
                "stage": a.hit.stage,
                "reward": a.hit.reward,
                "fee": fee,
                "pay": a.hit.reward + fee,
                "history": history.get(a.worker_id, {}),
                "bonus_key": uuid.uuid4().hex,
                "task": task_context_readonly(
                    stage=a.hit.stage, items=items.get(a.hit_id, []), answer=a.answers
                ),
                "telemetry": telemetry_summary(a.telemetry),
                "llm_flag": llm_flag_summary(a.llm_flag),
                "answer": outline(a.answers),
                "items": [
                    {"id": i["id"], "external_id": i["external_id"], "data": outline(i["data"])}
                    for i in items.get(a.hit_id, [])
                ],
                "review": review,
                "held": a.status == AssignmentStatus.SUBMITTED
                and review is not None
                and review["decision"] == "hold",
                "overrides": _overrides(a.review_details),
                # A linking submission reads as text with the worker's spans marked.
                "linked": linked_answer(
                    task_type=linking[a.pk],
                    items=items.get(a.hit_id, []),
                    answers=a.answers,
                    labels=labels,
                )
                if a.pk in linking
                else None,
            }
        )
    # Where a decided row's plain form comes back to: the row after it.
    for row, after in zip(rows, [*assignments[1:], None], strict=False):
        row["next_anchor"] = f"assignment-{after.pk}" if after is not None else "review-queue"
    link_review = link_review_rows(campaign=campaign, stage=stage)
    for entry, following in zip(link_review, [*link_review[1:], None], strict=False):
        entry["next_anchor"] = f"link-item-{following['item'].pk}" if following else "link-review"
    can_decide = platform_for(campaign).decides_at_once
    context = {
        "campaign": campaign,
        "stages": stages,
        "stage": stage,
        "status": status,
        "status_filters": STATUS_FILTERS,
        "count_tail": _COUNT_TAIL.get(status, ""),
        "decided_view": status in (AssignmentStatus.APPROVED, AssignmentStatus.REJECTED),
        "page": page,
        "page_query": urlencode(
            {k: v for k, v in (("stage", stage.pk if stage else None), ("status", status)) if v}
        ),
        "rows": rows,
        "can_decide": can_decide,
        # The local workforce is paid no rewards through qaportal: no money shown.
        "moves_money": platform_for(campaign).moves_money,
        "shows_money": shows_money(campaign),
        "can_manage": campaign_can_manage(campaign=campaign, user=request_user(request)),
        "link_review": link_review,
        "linking_rows": sum(1 for row in rows if row["linked"] is not None),
    }
    return render(request, "frontend/campaign_review.html", context, status=http_status)


def _decided_message(assignment: Assignment) -> str:
    by = (
        assignment.decided_by.get_username()
        if assignment.decided_by is not None
        else assignment.decision_source or "a rule"
    )
    when = assignment.decided_at.strftime("%Y-%m-%d %H:%M UTC") if assignment.decided_at else ""
    return (
        f"Assignment #{assignment.pk} was already {assignment.status} by {by}"
        f"{' on ' + when if when else ''}; nothing changed. To turn it over, use "
        "“Override” in the approved or rejected list, with a reason."
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
        assignment_decide(
            assignment=assignment,
            approve=decision == "approve",
            decided_by=user,
            source="requester",
            reason=feedback,
            feedback=feedback if decision != "approve" else "",
        )
    except DomainError as exc:
        return "refused", f"Assignment #{assignment.pk}: {exc}"
    verb = "approved" if decision == "approve" else "rejected"
    return "decided", f"Assignment #{assignment.pk} {verb}."


@login_required
@require_GET
def review_as_worker_view(request: HttpRequest, slug: str, assignment_id: int) -> HttpResponse:
    """One assignment's answer as the worker's page showed it, read only: the review
    queue's folded "As the worker's page shows it", fetched when it is opened (each
    task page rendered on every row was a third of the queue's CPU)."""
    campaign = campaign_or_404(request, slug)
    assignment = assignment_list_for_campaign(campaign=campaign).filter(pk=assignment_id).first()
    if assignment is None:
        raise Http404("No such assignment in this campaign.")
    items = hit_items_by_hit(hit_ids=[assignment.hit_id])
    task = task_context_readonly(
        stage=assignment.hit.stage,
        items=items.get(assignment.hit_id, []),
        answer=assignment.answers,
    )
    return render(request, "frontend/_review_as_worker.html", {"task": task})


@login_required
@require_POST
def review_decide_view(request: HttpRequest, slug: str, assignment_id: int) -> HttpResponse:
    campaign = campaign_or_404(request, slug)
    assignment = assignment_list_for_campaign(campaign=campaign).filter(pk=assignment_id).first()
    if assignment is None:
        raise Http404("No such assignment in this campaign.")
    form = ReviewDecisionForm(request.POST)
    # A plain form comes back at the next row (this one leaves the queue once decided).
    anchor = review_anchor(request.POST.get("next"), f"assignment-{assignment.pk}")
    if not form.is_valid():
        problems = [
            f"Assignment #{assignment.pk}: {error}"
            for errors in form.errors.values()
            for error in errors
        ]
        if _wants_json(request):
            return JsonResponse(
                {
                    "ok": False,
                    "outcome": "invalid",
                    "status": assignment.status,
                    "message": " ".join(problems),
                },
                status=400,
            )
        for problem in problems:
            messages.error(request, problem)
        return _back_to_review(request, campaign, anchor=f"assignment-{assignment.pk}")
    decision = form.cleaned_data["decision"]
    outcome, message = _review_decide(
        assignment=assignment,
        user=request_user(request),
        decision=decision,
        feedback=form.cleaned_data["feedback"].strip(),
    )
    if outcome == "decided":
        next_stage = assignment.hit.stage.next_stage
        if decision == "approve" and next_stage is not None:
            message += f" Its answer goes on to “{next_stage.name}”."
    if _wants_json(request):
        assignment.refresh_from_db(fields=["status"])
        # "already": someone (or a rule) decided first; the page shows what stands.
        code = {"decided": 200, "already": 409}.get(outcome, 400)
        return JsonResponse(
            {
                "ok": outcome == "decided",
                "outcome": outcome,
                "status": assignment.status,
                "message": message,
            },
            status=code,
        )
    if outcome == "decided":
        messages.success(request, message)
    elif outcome == "already":
        messages.warning(request, message)
    else:
        messages.error(request, message)
    return _back_to_review(
        request, campaign, anchor=anchor if outcome == "decided" else f"assignment-{assignment.pk}"
    )


@login_required
@require_POST
def review_bulk_view(request: HttpRequest, slug: str) -> HttpResponse:
    """Approve or reject the selected assignments, one decision (and feedback) for all."""
    campaign = campaign_or_404(request, slug)
    form = BulkReviewForm(request.POST)
    if not form.is_valid():
        for errors in form.errors.values():
            for error in errors:
                messages.error(request, str(error))
        return _back_to_review(request, campaign)
    ids = form.cleaned_data["ids"]
    if form.cleaned_data["decision"] == "reject":
        n = len(ids)
        feedback = form.cleaned_data["feedback"].strip()
        asked = confirm_first(
            request,
            title=f"Reject {n} assignment{'s' if n != 1 else ''}?",
            consequence=(
                f"{n} worker submission{'s' if n != 1 else ''} will be rejected: "
                f"{'they are' if n != 1 else 'it is'} not paid and count against "
                "the workers' approval records. "
                + (
                    f"Each worker reads your feedback: “{feedback}”."
                    if feedback
                    else "Your feedback is empty: the workers are not told why."
                )
            ),
            button=f"Reject {n} assignment{'s' if n != 1 else ''}",
            cancel_url=reverse("frontend:campaign-review", kwargs={"slug": campaign.slug}),
        )
        if asked is not None:
            return asked
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
            user=request_user(request),
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


class OverrideForm(forms.Form):
    """The requester turns over (or confirms) a decision: a reason is required, the
    feedback (shown to the worker of a rejection) is optional."""

    decision = forms.ChoiceField(choices=[("approve", "Approve"), ("reject", "Reject")])
    reason = forms.CharField(
        max_length=5000,
        strip=True,
        error_messages={"required": "Say why you override the decision."},
    )
    feedback = forms.CharField(max_length=5000, required=False, strip=True)


@login_required
@require_POST
def review_override_view(request: HttpRequest, slug: str, assignment_id: int) -> HttpResponse:
    """Approve or reject an assignment whatever was decided before (a rule, a hold, a
    requester), through ``assignment_override``; the requester is recorded."""
    campaign = campaign_or_404(request, slug)
    assignment = assignment_list_for_campaign(campaign=campaign).filter(pk=assignment_id).first()
    if assignment is None:
        raise Http404("No such assignment in this campaign.")
    form = OverrideForm(request.POST)
    if not form.is_valid():
        for errors in form.errors.values():
            for error in errors:
                messages.error(request, f"Assignment #{assignment.pk}: {error}")
        return _back_to_review(request, campaign)
    decision = form.cleaned_data["decision"]
    before = assignment.status
    try:
        decided = assignment_override(
            assignment=assignment,
            decision=decision,
            decided_by=request_user(request),
            reason=form.cleaned_data["reason"],
            feedback=form.cleaned_data["feedback"] if decision == "reject" else "",
        )
    except DomainError as exc:
        messages.error(request, f"Assignment #{assignment.pk}: {exc}")
        return _back_to_review(request, campaign)
    if before == decided.status:
        messages.success(request, f"Assignment #{decided.pk}: {decided.status}, confirmed by you.")
    else:
        messages.success(
            request, f"Assignment #{decided.pk} is now {decided.status} (was {before})."
        )
    return _back_to_review(request, campaign)


@login_required
@require_POST
def stage_review_run_view(request: HttpRequest, slug: str, stage_id: int) -> HttpResponse:
    """Queue ``validation.review_stage`` for the stage (after commit); it decides the
    submitted assignments its rules can decide and applies the gold actions."""
    campaign = campaign_or_404(request, slug)
    stage = stage_or_404(campaign, stage_id)
    task_after_commit("validation.review_stage", stage.pk)
    rules = len(stage.review_rules or [])
    messages.success(
        request,
        f"Stage “{stage.name}”: review queued ({rules} rule{'s' if rules != 1 else ''}); "
        "its decisions show on the review page once it has run.",
    )
    return redirect(detail_url(campaign, f"stage-{stage.pk}"))


def _assignment_or_404(campaign: Campaign, assignment_id: int) -> Assignment:
    found = (
        assignment_list_for_campaign(campaign=campaign)
        .select_related("worker")
        .filter(pk=assignment_id)
        .first()
    )
    if found is None:
        raise Http404("No such assignment in this campaign.")
    return found


@login_required
@require_POST
def review_bonus_view(request: HttpRequest, slug: str, assignment_id: int) -> HttpResponse:
    """Pay the worker of one assignment a bonus from the review queue. The form carries
    a key made when the page was drawn, so a double click pays once."""
    campaign = campaign_or_404(request, slug)
    assignment = _assignment_or_404(campaign, assignment_id)
    key = str(request.POST.get("bonus_key", ""))[:64]
    try:
        amount = money_parse(str(request.POST.get("amount", "")))
    except MoneyFormatError as exc:
        messages.error(request, f"No bonus paid: {exc}")
        return _review_page(request, campaign, request.POST, http_status=400)
    if not key.isalnum():
        messages.error(request, "The bonus form is incomplete; reload the page and try again.")
        return _back_to_review(request, campaign, anchor=f"assignment-{assignment.pk}")
    try:
        assignment_bonus_pay(
            assignment=assignment,
            amount=amount,
            reason=str(request.POST.get("reason", "")),
            key=f"review:{assignment.pk}:{key}",
        )
    except DomainError as exc:
        messages.error(request, f"No bonus paid: {exc}")
    else:
        messages.success(
            request,
            f"Bonus of {amount:.2f} {campaign.currency} to {assignment.worker.pseudonym} "
            f"for assignment #{assignment.pk} is on its way.",
        )
    return _back_to_review(request, campaign, anchor=f"assignment-{assignment.pk}")


@login_required
@require_POST
def review_block_view(request: HttpRequest, slug: str, assignment_id: int) -> HttpResponse:
    """Block the worker of one assignment from all of the owner's work (owner or staff)."""
    campaign = campaign_or_404(request, slug)
    assignment = _assignment_or_404(campaign, assignment_id)
    try:
        worker_block(
            campaign=campaign,
            actor=request_user(request),
            worker=assignment.worker,
            reason=str(request.POST.get("reason", "")),
        )
    except PermissionDenied as exc:
        messages.error(request, str(exc))
    except DomainError as exc:
        messages.error(request, f"Not blocked: {exc}")
    else:
        messages.success(request, f"{assignment.worker.pseudonym} is blocked.")
    return _back_to_review(request, campaign, anchor=f"assignment-{assignment.pk}")
