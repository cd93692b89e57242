"""The worker page's adversarial part (model in the loop, issue 38): ask the model,
poll for its answer, mark it right or wrong. The work page itself is the workforce's
entry's (the local ``views.py``, Prolific's ``campaigns.platforms.prolific.views``);
these views answer its buttons and its polling and send the worker back to it.

Each entry has its routes (``ENTRIES``) and checks who the worker is as its own work
page does: the local pages by the session's invited workers and the account, the
Prolific entry by the participant its session remembers (set at the entry from
``PROLIFIC_PID``). An assignment that is not theirs is a 404, never a bare id's."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from campaigns.assist.adversarial import adversarial_try_make, adversarial_try_mark
from campaigns.assist.selectors import (
    adversarial_tries,
    assignment_adversarial_panel,
    model_call_state,
)
from campaigns.models import Assignment
from campaigns.platforms.prolific.views import prolific_session_assignment
from campaigns.platforms.task_page import PagePart
from campaigns.platforms.worker_pages import render_assignment
from campaigns.tasktypes.base import adversarial_config
from frontend.worker.views import _get_assignment, _url
from qaportal.errors import DomainError


@dataclass(frozen=True)
class Entry:
    """A workforce's work page, as the adversarial routes see it."""

    page: str  # the work page's route name (its action_url)
    prefix: str  # of the adversarial route names: worker:{prefix}adversarial_try, …
    load: Callable[[HttpRequest, int], Assignment]  # Http404 unless the worker's
    return_route: str | None = None


def _local(request: HttpRequest, assignment_id: int) -> Assignment:
    return _get_assignment(request, assignment_id)


def _prolific(request: HttpRequest, assignment_id: int) -> Assignment:
    found = prolific_session_assignment(request, assignment_id)
    if found is None:
        raise Http404("No such task.")
    return found


ENTRIES: dict[str, Entry] = {
    "local": Entry(page="worker:assignment", prefix="", load=_local, return_route="worker:return"),
    "prolific": Entry(page="worker-prolific:assignment", prefix="prolific_", load=_prolific),
}


def entry_for_page(action_url: str, assignment_id: int) -> Entry | None:
    """The entry whose work page posts to ``action_url`` (None: none with the panel)."""
    for entry in ENTRIES.values():
        if action_url == _url(entry.page, assignment_id):
            return entry
    return None


def adversarial_part(assignment: Assignment, action_url: str = "") -> dict[str, Any]:
    """The panel for ``assignment``, its URLs with it (``panel`` None when the stage is
    not adversarial, or the page is an entry without the adversarial routes: MTurk's,
    whose submission is refused there until the model was asked)."""
    if adversarial_config(assignment.hit.stage.config) is None:
        return {"panel": None}
    entry = entry_for_page(action_url, assignment.pk)
    if entry is None:
        return {"panel": None}
    panel = assignment_adversarial_panel(assignment=assignment)
    if panel is None:
        return {"panel": None}
    kwargs = {"assignment_id": assignment.pk}
    last = panel.last
    route = f"worker:{entry.prefix}adversarial_"
    return {
        "panel": panel,
        "try_url": reverse(f"{route}try", kwargs=kwargs),
        "page_url": action_url,
        "state_url": (
            reverse(f"{route}state", kwargs={**kwargs, "try_number": last.number})
            if last is not None
            else ""
        ),
        "mark_url": (
            reverse(f"{route}mark", kwargs={**kwargs, "try_number": last.number})
            if last is not None
            else ""
        ),
    }


def adversarial_page_part(
    assignment: Assignment, action_url: str, context: Mapping[str, Any]
) -> PagePart | None:
    """The work page's part (``page_part_register``): the panel under the task; Submit
    waits until the panel allows it. None, without a query, on other stages."""
    adv = adversarial_part(assignment, action_url)
    panel = adv["panel"]
    if panel is None:
        return None
    html = render_to_string("worker/_adversarial.html", {**context, "adv": adv})
    return PagePart(
        html=html,
        holds_submit=not panel.allow.may_submit,
        why_id="adv-why" if panel.allow.why_not else "",
    )


def _page_url(entry: Entry, assignment_id: int) -> str:
    if entry.page == "worker:assignment":
        return _url(entry.page, assignment_id)
    return reverse(entry.page, kwargs={"assignment_id": assignment_id})


def _page_again(
    request: HttpRequest,
    entry: Entry,
    assignment: Assignment,
    errors: dict[str, str],
    answer: object = None,
) -> HttpResponse:
    """The work page again with ``errors`` (``""``: said above the task)."""
    return render_assignment(
        request,
        assignment=assignment,
        action_url=_page_url(entry, assignment.pk),
        return_url=_url(entry.return_route, assignment.pk) if entry.return_route else None,
        answer=answer,
        errors=errors,
        status=400,
    )


def _try(request: HttpRequest, entry: Entry, assignment_id: int) -> HttpResponse:
    assignment = entry.load(request, assignment_id)
    try:
        outcome = adversarial_try_make(assignment=assignment, form=request.POST)
    except DomainError as exc:
        return _page_again(request, entry, assignment, {"": str(exc)})
    if outcome.errors:
        return _page_again(request, entry, assignment, outcome.errors, outcome.answer)
    return HttpResponseRedirect(_page_url(entry, assignment.pk))


def _mark(request: HttpRequest, entry: Entry, assignment_id: int, try_number: int) -> HttpResponse:
    assignment = entry.load(request, assignment_id)
    verdict = request.POST.get("model_right")
    if verdict not in ("yes", "no"):
        return _page_again(
            request, entry, assignment, {"": "Say whether the model's answer is right."}
        )
    try:
        adversarial_try_mark(
            assignment=assignment, try_number=try_number, model_right=verdict == "yes"
        )
    except DomainError as exc:
        return _page_again(request, entry, assignment, {"": str(exc)})
    return HttpResponseRedirect(_page_url(entry, assignment.pk))


def _state(request: HttpRequest, entry: Entry, assignment_id: int, try_number: int) -> HttpResponse:
    if entry.page == "worker:assignment":
        assignment = _get_assignment(request, assignment_id, items=False)
    else:
        assignment = entry.load(request, assignment_id)
    tries = {t.number: t for t in adversarial_tries(assignment_id=assignment.pk)}
    attempt = tries.get(try_number)
    if attempt is None:
        raise Http404("No such try.")
    state = model_call_state(call_id=attempt.call_id) if attempt.call_id else None
    return JsonResponse(
        {
            "try": try_number,
            "status": state.status if state else "unavailable",
            "waiting": attempt.waiting,
            "final": (not attempt.waiting),
            "go_on_without_model": attempt.without_model
            or bool(state and state.go_on_without_model),
        },
        headers={"Cache-Control": "no-store"},
    )


# --- The routes: the local workforce's, then Prolific's (under /work/prolific/a/…) -------


@require_POST
def adversarial_try(request: HttpRequest, assignment_id: int) -> HttpResponse:
    """Store the question and answer as a try and ask the model (answered off the
    request path); back to the work page, which polls for the model's answer."""
    return _try(request, ENTRIES["local"], assignment_id)


@require_POST
def adversarial_mark(request: HttpRequest, assignment_id: int, try_number: int) -> HttpResponse:
    """The worker's verdict on the model's answer to try ``try_number``."""
    return _mark(request, ENTRIES["local"], assignment_id, try_number)


@require_GET
def adversarial_state(request: HttpRequest, assignment_id: int, try_number: int) -> HttpResponse:
    """What the page polls: whether it may stop waiting for the model's answer."""
    return _state(request, ENTRIES["local"], assignment_id, try_number)


@require_POST
def prolific_adversarial_try(request: HttpRequest, assignment_id: int) -> HttpResponse:
    """``adversarial_try`` for the Prolific participant of this session."""
    return _try(request, ENTRIES["prolific"], assignment_id)


@require_POST
def prolific_adversarial_mark(
    request: HttpRequest, assignment_id: int, try_number: int
) -> HttpResponse:
    """``adversarial_mark`` for the Prolific participant of this session."""
    return _mark(request, ENTRIES["prolific"], assignment_id, try_number)


@require_GET
def prolific_adversarial_state(
    request: HttpRequest, assignment_id: int, try_number: int
) -> HttpResponse:
    """``adversarial_state`` for the Prolific participant of this session."""
    return _state(request, ENTRIES["prolific"], assignment_id, try_number)
