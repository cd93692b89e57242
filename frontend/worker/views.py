"""The local workforce's pages: invite landing, stage, assignment, thank-you.

Who the worker is comes from the session (workers who joined through invite
links) or from the logged-in account (annotators the requester granted the
campaign to). An assignment is visible only to the worker who holds it.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.contrib.auth import SESSION_KEY
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.template.context_processors import csrf
from django.template.loader import render_to_string
from django.urls import get_script_prefix, reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from campaigns.assist.selectors import assignment_adversarial_panel
from campaigns.models import Assignment, AssignmentStatus, InviteRedemption, Stage, Worker
from campaigns.payments.selectors import assignment_bonuses
from campaigns.platforms.task_page import page_frame
from campaigns.platforms.worker_pages import render_assignment, submit_assignment, task_context
from campaigns.work.allocation import (
    NoWorkAvailableError,
    WorkerNoAccessError,
    WorkerNotAllowedError,
    assignment_accept,
)
from campaigns.work.invites import InviteInvalidError, invite_check, invite_redeem
from campaigns.work.lifecycle import AssignmentClosedError, assignment_return
from campaigns.work.selectors.access import (
    WORKABLE_STATES,
    RequestWorkers,
    request_workers_get,
    stage_entry_for_invite,
    stage_other_arm,
    stage_reward_shown,
)
from campaigns.work.selectors.loading import (
    StageVisit,
    assignment_get_for_workers,
    stage_load,
    stage_visit,
    stage_worker,
)
from campaigns.work.selectors.next_hit import assignment_is_current, assignment_next_hit_id
from campaigns.work.submission import STORED_STATES, SubmitResult
from campaigns.workforce.quiz_outcomes import quiz_result, stage_quiz_gates
from campaigns.workforce.requirements import stage_refusal
from qaportal.errors import DomainError

SESSION_WORKERS = "worker_ids"
SESSION_MAX_WORKERS = 50


def _session_worker_ids(request: HttpRequest) -> list[int]:
    ids = request.session.get(SESSION_WORKERS, [])
    return [i for i in ids if isinstance(i, int)] if isinstance(ids, list) else []


def _remember_worker(request: HttpRequest, worker: Worker) -> None:
    ids = [i for i in _session_worker_ids(request) if i != worker.pk]
    request.session[SESSION_WORKERS] = [worker.pk, *ids][:SESSION_MAX_WORKERS]


def _request_workers(request: HttpRequest) -> RequestWorkers:
    """The local workers this browser speaks for: invited ones, then the account's.

    Ids only (no query): the session holds the invited workers' ids. The account is
    looked at only when the session names one: without it Django's ``get_user`` answers
    ``AnonymousUser`` anyway, and a crowd worker's request skips building it.
    """
    signed_in = SESSION_KEY in request.session and request.user.is_authenticated
    user_id = request.user.pk if signed_in else None
    return RequestWorkers(worker_ids=tuple(_session_worker_ids(request)), user_id=user_id)


def _get_stage(stage_id: int) -> Stage:
    try:
        return stage_load(stage_id=stage_id)
    except Stage.DoesNotExist:
        raise Http404("No such stage.") from None


def _get_assignment(
    request: HttpRequest, assignment_id: int, *, items: bool = True, next_hit: bool = False
) -> Assignment:
    try:
        return assignment_get_for_workers(
            assignment_id=assignment_id,
            workers=_request_workers(request),
            items=items,
            next_hit=next_hit,
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
    stage = stage_entry_for_invite(invite=link, worker_ids=_session_worker_ids(request))
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
    request: HttpRequest, stage: Stage, visit: StageVisit, *, message: str = "", status: int = 200
) -> HttpResponse:
    worker, current_id = visit.worker, visit.current_id
    refusal = None if current_id else stage_refusal(stage=stage, worker=worker, now=timezone.now())
    workable = stage.campaign.state in WORKABLE_STATES
    hit_id = None if current_id or refusal or not workable else visit.next_hit_id
    context = {
        "stage": stage,
        "campaign": stage.campaign,
        "current_id": current_id,
        "refused": bool(refusal),
        "message": message or refusal or "",
        "workable": workable,
        "preview_hit": hit_id is not None,
        "show_reward": stage_reward_shown(stage=stage),
        "current_url": _url("worker:assignment", current_id) if current_id else "",
        "accept_url": _stage_url("worker:accept", stage.pk),
    }
    hit = visit.next_hit(stage=stage) if hit_id is not None else None
    if hit is not None:
        context.update(task_context(stage=stage, hit=hit, preview=True))
    return _framed(request, stage, "worker/_stage_frame.html", "worker/stage.html", context, status)


def _framed(
    request: HttpRequest,
    stage: Stage,
    frame: str,
    template: str,
    context: Mapping[str, object],
    status: int = 200,
) -> HttpResponse:
    """``template`` (a page's content) inside ``frame`` (``worker/base.html`` around it),
    the frame kept per stage (``page_frame``). The content gets the CSRF token (drawn only
    if it shows a form) and none of the other context processors: it uses none of them."""
    top, bottom = page_frame(stage, frame)
    html = render_to_string(template, {**context, **csrf(request)})
    return HttpResponse(top + html + bottom, status=status)


def _no_access(request: HttpRequest, stage: Stage | None = None) -> HttpResponse:
    """No access; a worker the invitation let in but a quiz keeps out is told which quiz,
    with a link to it and their last try."""
    if stage is not None:
        invited = stage_worker(stage=stage, workers=_request_workers(request), qualifications=False)
        gates = stage_quiz_gates(stage=stage, worker=invited, now=timezone.now()) if invited else []
        if gates:
            context = {"stage": stage, "campaign": stage.campaign, "gates": gates}
            return render(request, "worker/quiz_first.html", context, status=403)
        # A study's arms each have their own tasks: say so rather than "no access".
        other_arm = stage_other_arm(stage=stage, workers=_request_workers(request))
        if other_arm is not None:
            context = {"stage": stage, "campaign": stage.campaign, "other_arm": other_arm}
            return render(request, "worker/no_access.html", context, status=403)
    return render(request, "worker/no_access.html", status=403)


@require_http_methods(["GET"])
def stage(request: HttpRequest, stage_id: int) -> HttpResponse:
    """Instructions, a preview of the next task and the Accept button."""
    stage = _get_stage(stage_id)
    visit = stage_visit(stage=stage, workers=_request_workers(request))
    if visit is None:
        return _no_access(request, stage)
    return _stage_page(request, stage, visit)


@require_POST
def accept(request: HttpRequest, stage_id: int) -> HttpResponse:
    """Take a place on the next available HIT (or resume the current one).

    Access is checked once, by the service (in its locking statement, which reads the
    stage too): the first of the request's workers it lets in takes the place.
    """
    workers = _request_workers(request)
    # Invited workers by their session ids (the service reads each in its locking
    # statement); an account's worker has to be looked up.
    candidates: list[int] | list[Worker] = (
        list(workers.worker_ids)
        if workers.user_id is None
        else request_workers_get(workers=workers)
    )
    stage: Stage | int = stage_id
    for worker in candidates:
        try:
            assignment = assignment_accept(stage=stage, worker=worker)
        except Stage.DoesNotExist:
            raise Http404("No such stage.") from None
        except Worker.DoesNotExist:
            continue
        except WorkerNoAccessError as exc:
            stage = exc.stage or stage
            continue
        except NoWorkAvailableError as exc:
            return _refused_page(request, _stage_of(exc.stage or stage), worker, message=str(exc))
        except WorkerNotAllowedError as exc:
            refused = _stage_of(exc.stage or stage)
            return _refused_page(request, refused, worker, message=str(exc), status=403)
        return HttpResponseRedirect(_url("worker:assignment", assignment.pk))
    return _no_access(request, _stage_of(stage))


def _stage_of(stage: Stage | int) -> Stage:
    """``stage``, loaded when it is an id (``Http404`` when there is none)."""
    return stage if isinstance(stage, Stage) else _get_stage(stage)


def _refused_page(
    request: HttpRequest, stage: Stage, worker: Worker | int, *, message: str, status: int = 200
) -> HttpResponse:
    """The stage page for a worker the allocation turned away, with its reason."""
    worker_id = worker if isinstance(worker, int) else worker.pk
    visit = stage_visit(
        stage=stage, workers=RequestWorkers(worker_ids=(worker_id,)), qualifications=False
    )
    if visit is None:
        return _no_access(request, stage)
    return _stage_page(request, stage, visit, message=message, status=status)


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
    if request.method == "POST":
        # The submit service's locked SELECT is also the ownership check (and, through
        # ``answer_submitting``, an adversarial stage's check of the tries).

        def after_submit(result: SubmitResult) -> HttpResponse:
            return HttpResponseRedirect(_url("worker:done", assignment_id))

        def on_closed(exc: AssignmentClosedError) -> HttpResponse:
            assert exc.assignment is not None
            return _closed_page(request, exc.assignment, str(exc))

        try:
            return submit_assignment(
                request,
                assignment_id=assignment_id,
                workers=_request_workers(request),
                action_url=lambda: _url("worker:assignment", assignment_id),
                return_url=lambda: _url("worker:return", assignment_id),
                after_submit=after_submit,
                on_closed=on_closed,
            )
        except Assignment.DoesNotExist:
            raise Http404("No such task.") from None
    assignment = _get_assignment(request, assignment_id)
    if assignment.status in STORED_STATES:
        return HttpResponseRedirect(_url("worker:done", assignment_id))
    if not assignment_is_current(assignment):
        return _closed_page(
            request, assignment, "This task is closed: it was returned or its time ran out."
        )
    return render_assignment(
        request,
        assignment=assignment,
        action_url=_url("worker:assignment", assignment_id),
        return_url=_url("worker:return", assignment_id),
        answer=_last_try_answer(assignment),
    )


def _last_try_answer(assignment: Assignment) -> dict[str, object] | None:
    """On an adversarial stage, the form filled with the worker's last try."""
    panel = assignment_adversarial_panel(assignment=assignment)
    if panel is None or panel.last is None:
        return None
    return {"items": [dict(panel.last.entry)]}


# The worker pages' URLs by name: reverse() once per name and script prefix, with a mark
# where the id goes (the id's converter writes it as str(int)); reverse() itself costs
# some 40 µs, and the task page needs two of them.
_URL_MARK = 987654321
_url_forms: dict[tuple[str, str, str], tuple[str, str]] = {}


def _url(name: str, pk: int, *, kwarg: str = "assignment_id") -> str:
    """``reverse(name, kwargs={kwarg: pk})``: an assignment's URL (``kwarg="stage_id"``: a
    stage's)."""
    key = (get_script_prefix(), name, kwarg)
    form = _url_forms.get(key)
    if form is None:
        url = reverse(name, kwargs={kwarg: _URL_MARK})
        head, _, tail = url.partition(str(_URL_MARK))
        form = _url_forms[key] = (head, tail)
    return f"{form[0]}{int(pk)}{form[1]}"


def _stage_url(name: str, stage_id: int) -> str:
    return _url(name, stage_id, kwarg="stage_id")


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
    assignment = _get_assignment(request, assignment_id, items=False, next_hit=True)
    if assignment.status not in STORED_STATES:
        return HttpResponseRedirect(_url("worker:assignment", assignment.pk))
    stage = assignment.hit.stage
    context = {
        "assignment": assignment,
        "stage": stage,
        "more_work": assignment_next_hit_id(assignment=assignment) is not None,
        "accept_url": _stage_url("worker:accept", stage.pk),
        "stage_url": _stage_url("worker:stage", stage.pk),
        "quiz": quiz_result(assignment=assignment, now=timezone.now()),
        # Read once the work is decided: right after a submission (the hot path,
        # one query) there is no bonus to show yet, as a rule.
        "bonuses": (
            assignment_bonuses(assignment=assignment)
            if assignment.status == AssignmentStatus.APPROVED
            else []
        ),
    }
    return _framed(request, stage, "worker/_done_frame.html", "worker/done.html", context)
