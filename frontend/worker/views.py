"""The local workforce's pages: invite landing, stage, assignment, thank-you.

Who the worker is comes from the session (workers who joined through invite
links) or from the logged-in account (annotators the requester granted the
campaign to). An assignment is visible only to the worker who holds it.
"""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from campaigns.models import Assignment, AssignmentStatus, InviteRedemption, Stage, Worker
from campaigns.selectors_work import (
    WORKABLE_STATES,
    assignment_current,
    assignment_get_for_workers,
    hit_next_available,
    stage_entry_for_invite,
    worker_has_stage_access,
)
from campaigns.services.errors import DomainError
from campaigns.services.invites import InviteInvalidError, invite_check, invite_redeem
from campaigns.services.work import (
    STORED_STATES,
    AssignmentClosedError,
    NoWorkAvailableError,
    SubmitResult,
    WorkerNotAllowedError,
    assignment_accept,
    assignment_return,
)
from frontend.worker.pages import render_assignment, submit_assignment, task_context

SESSION_WORKERS = "worker_ids"
SESSION_MAX_WORKERS = 50


def _session_worker_ids(request: HttpRequest) -> list[int]:
    ids = request.session.get(SESSION_WORKERS, [])
    return [i for i in ids if isinstance(i, int)] if isinstance(ids, list) else []


def _remember_worker(request: HttpRequest, worker: Worker) -> None:
    ids = [i for i in _session_worker_ids(request) if i != worker.pk]
    request.session[SESSION_WORKERS] = [worker.pk, *ids][:SESSION_MAX_WORKERS]


def _request_workers(request: HttpRequest) -> list[Worker]:
    """The local workers this browser speaks for: invited ones, then the account's."""
    workers = list(Worker.objects.filter(pk__in=_session_worker_ids(request), provider="local"))
    if request.user.is_authenticated:
        workers += list(Worker.objects.filter(user_id=request.user.pk, provider="local"))
    return workers


def _stage_worker(request: HttpRequest, stage: Stage) -> Worker | None:
    for worker in _request_workers(request):
        if worker_has_stage_access(worker=worker, stage=stage):
            return worker
    return None


def _get_stage(stage_id: int) -> Stage:
    return get_object_or_404(Stage.objects.select_related("campaign"), pk=stage_id)


def _get_assignment(request: HttpRequest, assignment_id: int) -> Assignment:
    try:
        return assignment_get_for_workers(
            assignment_id=assignment_id, workers=_request_workers(request)
        )
    except Assignment.DoesNotExist:
        raise Http404("No such task.") from None


# --- Invite links ------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
def invite(request: HttpRequest, token: str) -> HttpResponse:
    """GET: who invites you to what (no side effects, safe for link previews).
    POST "Start": join (or resume) and go to the stage page."""
    try:
        if request.method == "POST":
            link, worker = invite_redeem(token=token, known_worker_ids=_session_worker_ids(request))
            _remember_worker(request, worker)
        else:
            link = invite_check(token=token)
            joined = InviteRedemption.objects.filter(
                invite=link, worker_id__in=_session_worker_ids(request)
            ).exists()
            if not joined:
                return render(request, "worker/invite.html", {"invite": link, "token": token})
    except InviteInvalidError as exc:
        return render(request, "worker/invite_invalid.html", {"message": str(exc)}, status=403)
    stage = stage_entry_for_invite(invite=link)
    if stage is None:
        return render(
            request,
            "worker/invite_invalid.html",
            {"message": "This campaign has no tasks yet."},
            status=404,
        )
    return redirect("worker:stage", stage_id=stage.pk)


# --- Stage page --------------------------------------------------------------------------


def _stage_page(
    request: HttpRequest, stage: Stage, worker: Worker, *, message: str = "", status: int = 200
) -> HttpResponse:
    current = assignment_current(stage=stage, worker=worker)
    hit = None if current else hit_next_available(stage=stage, worker=worker)
    context = {
        "stage": stage,
        "campaign": stage.campaign,
        "current": current,
        "message": message,
        "workable": stage.campaign.state in WORKABLE_STATES,
        "preview_hit": hit,
    }
    if hit is not None:
        context.update(task_context(stage=stage, hit=hit, preview=True))
    return render(request, "worker/stage.html", context, status=status)


def _no_access(request: HttpRequest) -> HttpResponse:
    return render(request, "worker/no_access.html", status=403)


@require_http_methods(["GET"])
def stage(request: HttpRequest, stage_id: int) -> HttpResponse:
    """Instructions, a preview of the next task and the Accept button."""
    stage = _get_stage(stage_id)
    worker = _stage_worker(request, stage)
    if worker is None:
        return _no_access(request)
    return _stage_page(request, stage, worker)


@require_POST
def accept(request: HttpRequest, stage_id: int) -> HttpResponse:
    """Take a place on the next available HIT (or resume the current one)."""
    stage = _get_stage(stage_id)
    worker = _stage_worker(request, stage)
    if worker is None:
        return _no_access(request)
    try:
        assignment = assignment_accept(stage=stage, worker=worker)
    except NoWorkAvailableError as exc:
        return _stage_page(request, stage, worker, message=str(exc))
    except WorkerNotAllowedError as exc:
        return _stage_page(request, stage, worker, message=str(exc), status=403)
    return redirect("worker:assignment", assignment_id=assignment.pk)


# --- Assignment page ---------------------------------------------------------------------


def _closed_page(request: HttpRequest, assignment: Assignment, message: str) -> HttpResponse:
    return render(
        request,
        "worker/closed.html",
        {"assignment": assignment, "stage": assignment.hit.stage, "message": message},
        status=409,
    )


@require_http_methods(["GET", "POST"])
def assignment(request: HttpRequest, assignment_id: int) -> HttpResponse:
    """The work page (GET) and its submission (POST)."""
    assignment = _get_assignment(request, assignment_id)
    done_url = reverse("worker:done", kwargs={"assignment_id": assignment.pk})
    action_url = reverse("worker:assignment", kwargs={"assignment_id": assignment.pk})
    return_url = reverse("worker:return", kwargs={"assignment_id": assignment.pk})
    if request.method == "POST":

        def after_submit(result: SubmitResult) -> HttpResponse:
            return redirect(done_url)

        def on_closed(exc: AssignmentClosedError) -> HttpResponse:
            return _closed_page(request, assignment, str(exc))

        return submit_assignment(
            request,
            assignment=assignment,
            worker=assignment.worker,
            action_url=action_url,
            return_url=return_url,
            after_submit=after_submit,
            on_closed=on_closed,
        )
    if assignment.status in STORED_STATES:
        return redirect(done_url)
    if (
        assignment.status != AssignmentStatus.ACCEPTED
        or assignment_current(stage=assignment.hit.stage, worker=assignment.worker) != assignment
    ):
        return _closed_page(
            request, assignment, "This task is closed: it was returned or its time ran out."
        )
    return render_assignment(
        request, assignment=assignment, action_url=action_url, return_url=return_url
    )


@require_POST
def assignment_return_view(request: HttpRequest, assignment_id: int) -> HttpResponse:
    """Give the task back; its place goes to someone else."""
    assignment = _get_assignment(request, assignment_id)
    try:
        assignment_return(assignment_id=assignment.pk, worker=assignment.worker)
    except DomainError as exc:
        return _closed_page(request, assignment, str(exc))
    return redirect("worker:stage", stage_id=assignment.hit.stage_id)


@require_http_methods(["GET"])
def done(request: HttpRequest, assignment_id: int) -> HttpResponse:
    """Thank you, what was stored, and the way to the next task."""
    assignment = _get_assignment(request, assignment_id)
    if assignment.status not in STORED_STATES:
        return redirect("worker:assignment", assignment_id=assignment.pk)
    stage = assignment.hit.stage
    return render(
        request,
        "worker/done.html",
        {
            "assignment": assignment,
            "stage": stage,
            "more_work": hit_next_available(stage=stage, worker=assignment.worker) is not None,
        },
    )
