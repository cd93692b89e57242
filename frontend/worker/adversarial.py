"""The worker page's adversarial part (model in the loop, issue 38): ask the model,
poll for its answer, mark it right or wrong. The work page itself is ``views.py``'s;
these views answer its buttons and its polling and send the worker back to it."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_POST

from campaigns.assist.adversarial import adversarial_try_make, adversarial_try_mark
from campaigns.assist.selectors import adversarial_tries, model_call_state
from campaigns.models import Assignment
from campaigns.platforms.worker_pages import render_assignment
from frontend.worker.views import _get_assignment, _url
from qaportal.errors import DomainError


def _page_again(
    request: HttpRequest, assignment: Assignment, errors: dict[str, str], answer: object = None
) -> HttpResponse:
    """The work page again with ``errors`` (``""``: said above the task)."""
    return render_assignment(
        request,
        assignment=assignment,
        action_url=_url("worker:assignment", assignment.pk),
        return_url=_url("worker:return", assignment.pk),
        answer=answer,
        errors=errors,
        status=400,
    )


@require_POST
def adversarial_try(request: HttpRequest, assignment_id: int) -> HttpResponse:
    """Store the question and answer as a try and ask the model (answered off the
    request path); back to the work page, which polls for the model's answer."""
    assignment = _get_assignment(request, assignment_id)
    try:
        outcome = adversarial_try_make(assignment=assignment, form=request.POST)
    except DomainError as exc:
        return _page_again(request, assignment, {"": str(exc)})
    if outcome.errors:
        return _page_again(request, assignment, outcome.errors, outcome.answer)
    return redirect("worker:assignment", assignment_id=assignment.pk)


@require_POST
def adversarial_mark(request: HttpRequest, assignment_id: int, try_number: int) -> HttpResponse:
    """The worker's verdict on the model's answer to try ``try_number``."""
    assignment = _get_assignment(request, assignment_id)
    verdict = request.POST.get("model_right")
    if verdict not in ("yes", "no"):
        return _page_again(request, assignment, {"": "Say whether the model's answer is right."})
    try:
        adversarial_try_mark(
            assignment=assignment, try_number=try_number, model_right=verdict == "yes"
        )
    except DomainError as exc:
        return _page_again(request, assignment, {"": str(exc)})
    return redirect("worker:assignment", assignment_id=assignment.pk)


@require_GET
def adversarial_state(request: HttpRequest, assignment_id: int, try_number: int) -> HttpResponse:
    """What the page polls: whether it may stop waiting for the model's answer."""
    assignment = _get_assignment(request, assignment_id, items=False)
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
