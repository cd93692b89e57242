"""Toy Crowd's worker entry and webhook receiver.

``/work/toy/?hitId=…&assignmentId=…&workerId=…`` records the assignment Toy Crowd gave
the worker and shows the common work page; after a stored submission the worker goes
back to Toy Crowd. ``/work/toy/hooks/`` takes Toy Crowd's "something changed" calls
(with the shared secret) and queues a sync through the outbox.
"""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from campaigns.models import Assignment
from campaigns.platforms.worker_pages import render_assignment, submit_assignment
from campaigns.work.allocation import NoWorkAvailableError, WorkerNotAllowedError
from campaigns.work.lifecycle import AssignmentClosedError
from campaigns.work.selectors.access import RequestWorkers
from campaigns.work.submission import SubmitResult
from qaportal.outbox import task_after_commit
from tests.campaigns.platforms.toy_platform.work import toy_assignment_accept

SESSION_KEY = "toy_worker_id"
DONE_URL = "https://toy-crowd.example/done"


@require_GET
def entry(request: HttpRequest) -> HttpResponse:
    try:
        assignment = toy_assignment_accept(
            hit_id=request.GET.get("hitId", ""),
            worker_id=request.GET.get("workerId", ""),
            assignment_id=request.GET.get("assignmentId", ""),
        )
    except (NoWorkAvailableError, WorkerNotAllowedError) as exc:
        return HttpResponse(str(exc), status=403, content_type="text/plain")
    request.session[SESSION_KEY] = assignment.worker_id
    return redirect("worker-toy:assignment", assignment_id=assignment.pk)


@require_http_methods(["GET", "POST"])
def assignment(request: HttpRequest, assignment_id: int) -> HttpResponse:
    worker_id = request.session.get(SESSION_KEY)
    if not isinstance(worker_id, int):
        raise Http404("No such task.")
    action_url = reverse("worker-toy:assignment", kwargs={"assignment_id": assignment_id})
    try:
        if request.method == "POST":

            def after_submit(result: SubmitResult) -> HttpResponse:
                return redirect(DONE_URL)

            def on_closed(exc: AssignmentClosedError) -> HttpResponse:
                return HttpResponse(str(exc), status=409, content_type="text/plain")

            return submit_assignment(
                request,
                assignment_id=assignment_id,
                workers=RequestWorkers(worker_ids=(worker_id,)),
                action_url=action_url,
                after_submit=after_submit,
                on_closed=on_closed,
            )
        found = Assignment.objects.select_related("hit__stage").get(
            pk=assignment_id, worker_id=worker_id
        )
    except Assignment.DoesNotExist:
        raise Http404("No such task.") from None
    return render_assignment(request, assignment=found, action_url=action_url)


@csrf_exempt
@require_POST
def hooks(request: HttpRequest) -> HttpResponse:
    secret = getattr(settings, "TOY_WEBHOOK_SECRET", "")
    given = request.headers.get("X-Toy-Secret", "")
    if not secret or not hmac.compare_digest(secret, given):
        return JsonResponse({"detail": "invalid secret"}, status=403)
    task_after_commit("campaigns.platform_sync", "toy", None)
    return JsonResponse({"accepted": True}, status=202)
