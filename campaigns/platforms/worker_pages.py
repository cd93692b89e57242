"""Rendering and submitting an assignment's page, whatever brought the worker here.

The local entry (``views.py``) and the MTurk / Prolific entries use the same two
functions: ``render_assignment`` draws the page, ``submit_assignment`` stores a
POST and hands the stored assignment to the caller's ``after_submit`` (a thank-you
page, a post to ``turkSubmitTo``, a redirect to a completion URL).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.template import TemplateDoesNotExist
from django.template.loader import get_template
from django.utils import timezone

from campaigns.models import HIT, Assignment, Stage
from campaigns.platforms.task_page import task_page_html
from campaigns.tasktypes import TaskType, task_type_get
from campaigns.work.lifecycle import AssignmentClosedError
from campaigns.work.selectors.access import RequestWorkers
from campaigns.work.selectors.loading import hit_items
from campaigns.work.submission import SubmitResult, assignment_submit_for_workers

MISSING_TEMPLATE = "worker/_task_missing.html"
# Fields of the page itself; task types must not use these names.
RESERVED_FIELDS = frozenset({"csrfmiddlewaretoken", "telemetry"})
TELEMETRY_MAX_BYTES = 64 * 1024


def task_template_name(task_type: TaskType) -> str:
    """The task type's template, or a stand-in page while it has none."""
    if task_type.template_name:
        try:
            get_template(task_type.template_name)
        except TemplateDoesNotExist:
            pass
        else:
            return task_type.template_name
    return MISSING_TEMPLATE


def task_context(
    *,
    stage: Stage,
    hit: HIT,
    answer: Any = None,
    errors: Mapping[str, str] | None = None,
    preview: bool,
) -> dict[str, Any]:
    """What a task-type template gets (see ``TaskType.template_name``)."""
    return _task_context(
        stage=stage, items=hit_items(hit=hit), answer=answer, errors=errors, preview=preview
    )


def task_context_readonly(
    *, stage: Stage, items: list[dict[str, Any]], answer: Any
) -> dict[str, Any]:
    """The task type's own page for a stored ``answer``, read only (``preview``): how the
    review queue shows an answer as the worker saw it (selected sentences ticked in
    their article, links on their spans). ``items`` as ``hit_items`` gives them."""
    return _task_context(stage=stage, items=items, answer=answer, errors=None, preview=True)


def _task_context(
    *,
    stage: Stage,
    items: list[dict[str, Any]],
    answer: Any,
    errors: Mapping[str, str] | None,
    preview: bool,
) -> dict[str, Any]:
    task_type = task_type_get(stage.task_type)
    template = task_template_name(task_type)
    return {
        "task_type": task_type,
        "task_template": template,
        "task_ready": template != MISSING_TEMPLATE,
        "items": items,
        "config": task_type.effective_config(stage.config),
        "answer": answer or {},
        "errors": dict(errors or {}),
        "stage": stage,
        "preview": preview,
    }


def render_assignment(
    request: HttpRequest,
    *,
    assignment: Assignment,
    action_url: str,
    return_url: str | None = None,
    answer: Any = None,
    errors: Mapping[str, str] | None = None,
    hidden: Mapping[str, str] | None = None,
    status: int = 200,
) -> HttpResponse:
    """The work page of an accepted assignment: task form, telemetry, submit (and return).

    ``action_url`` receives the POST; ``return_url`` (optional) receives "Return";
    ``hidden`` adds provider fields to the form (e.g. MTurk's assignmentId). The page's
    HTML: ``task_page_html``; the task type's template gets ``task_context``'s values
    with ``assignment``, ``action_url``, ``return_url``, ``hidden``, ``seconds_left`` and
    ``has_errors``.
    """
    stage = assignment.hit.stage
    seconds_left = None
    if assignment.deadline is not None:
        seconds_left = max(0, int((assignment.deadline - timezone.now()).total_seconds()))
    context = task_context(
        stage=stage, hit=assignment.hit, answer=answer, errors=errors, preview=False
    )
    hidden = dict(hidden or {})
    context.update(
        {
            "assignment": assignment,
            "action_url": action_url,
            "return_url": return_url,
            "hidden": hidden,
            "seconds_left": seconds_left,
            "has_errors": bool(errors),
        }
    )
    html = task_page_html(
        request,
        assignment=assignment,
        context=context,
        action_url=action_url,
        return_url=return_url,
        hidden=hidden,
        seconds_left=seconds_left,
        has_errors=bool(errors),
    )
    return HttpResponse(html, status=status)


def parse_telemetry(raw: str | None) -> Any:
    """The page's telemetry JSON, or None when missing, oversized or malformed."""
    if not raw or len(raw) > TELEMETRY_MAX_BYTES:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def submit_assignment(
    request: HttpRequest,
    *,
    assignment_id: int,
    workers: RequestWorkers,
    action_url: str | Callable[[], str],
    after_submit: Callable[[SubmitResult], HttpResponse],
    on_closed: Callable[[AssignmentClosedError], HttpResponse],
    return_url: str | Callable[[], str] | None = None,
    hidden: Mapping[str, str] | None = None,
) -> HttpResponse:
    """Store the POSTed answer once; the page again with errors, or ``after_submit``.

    A replayed POST (double click, reload, a second tab) reaches ``after_submit``
    with ``result.replay`` set and the stored answer: nothing is stored twice.
    ``Assignment.DoesNotExist`` when none of ``workers`` holds the assignment (one
    worker: ``RequestWorkers(worker_ids=(worker.pk,))``); the caller answers 404.
    The URLs may be given as functions: they are needed only to show the page again.
    """
    try:
        result = assignment_submit_for_workers(
            assignment_id=assignment_id,
            workers=workers,
            form=request.POST,
            telemetry=parse_telemetry(request.POST.get("telemetry")),
        )
    except AssignmentClosedError as exc:
        return on_closed(exc)
    if result.stored:
        return after_submit(result)
    return render_assignment(
        request,
        assignment=result.assignment,
        action_url=action_url() if callable(action_url) else action_url,
        return_url=return_url() if callable(return_url) else return_url,
        answer=result.answer,
        errors=result.errors,
        hidden=hidden,
        status=400,
    )
