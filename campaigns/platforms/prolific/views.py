"""The Prolific entry: participants arrive from a study, work, and go back with a code.

``/work/prolific/?PROLIFIC_PID=…&STUDY_ID=…&SESSION_ID=…&qa_stage=…`` (the study's
external URL) finds the study's stage, takes the participant (a ``Worker`` of
provider ``prolific``) and allocates an assignment for the session; the page is
the common ``render_assignment``. After a stored submission the participant is
sent to Prolific's completion URL with the study's code.

Who the participant is comes from the URL: a claim, remembered in the session,
checked against Prolific by the sync before anyone is paid. Participant ids are
personal data: never logged in full.

``/work/prolific/hooks/`` receives Prolific's webhooks, verified as Prolific
documents (base64 HMAC-SHA256 of timestamp + body with the workspace secret), and
enqueues a sync of the study.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import math
import re
import time

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from campaigns.models import Assignment
from campaigns.platforms.prolific.provider import COMPLETION_URL, short_id
from campaigns.platforms.prolific.studies import (
    prolific_assignment_accept,
    prolific_assignment_of,
    prolific_participant,
    prolific_study_codes,
    prolific_study_of_submission,
    prolific_study_stage,
)
from campaigns.platforms.worker_pages import render_assignment, submit_assignment
from campaigns.work.allocation import NoWorkAvailableError, WorkerNotAllowedError
from campaigns.work.lifecycle import AssignmentClosedError
from campaigns.work.selectors.access import RequestWorkers
from campaigns.work.selectors.next_hit import assignment_is_current
from campaigns.work.submission import STORED_STATES, SubmitResult
from qaportal.jsonsafe import json_depth_exceeds
from qaportal.outbox import task_after_commit

logger = logging.getLogger(__name__)

SESSION_KEY = "prolific_worker_id"
_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
SIGNATURE_HEADER = "HTTP_X_PROLIFIC_REQUEST_SIGNATURE"
TIMESTAMP_HEADER = "HTTP_X_PROLIFIC_REQUEST_TIMESTAMP"


def _message(
    request: HttpRequest, title: str, message: str, *, status: int, code: str | None = None
) -> HttpResponse:
    context = {
        "title": title,
        "message": message,
        "completion_url": COMPLETION_URL.format(code=code) if code else None,
    }
    return render(request, "worker/prolific/message.html", context, status=status)


def _completion(study_id: str, kind: str) -> str | None:
    codes = prolific_study_codes(study_id=study_id) or {}
    code = codes.get(kind)
    return code or None


@require_GET
def entry(request: HttpRequest) -> HttpResponse:
    """Take the participant of a Prolific session to their assignment (new or resumed)."""
    pid = request.GET.get("PROLIFIC_PID", "")
    study_id = request.GET.get("STUDY_ID", "")
    session_id = request.GET.get("SESSION_ID", "")
    if not all(_ID.match(v) for v in (pid, study_id, session_id)):
        return _message(
            request, "Link incomplete", "Please open this task from Prolific.", status=400
        )
    stage_param = request.GET.get("qa_stage", "")
    stage = prolific_study_stage(
        study_id=study_id, stage_id=int(stage_param) if stage_param.isdigit() else None
    )
    if stage is None:
        raise Http404("No such study.")
    worker = prolific_participant(pid=pid)
    try:
        assignment = prolific_assignment_accept(
            stage=stage, worker=worker, study_id=study_id, session_id=session_id
        )
    except NoWorkAvailableError as exc:
        return _message(
            request,
            "No task left",
            f"{exc} Please return the study on Prolific.",
            status=200,
            code=_completion(study_id, "screened_out"),
        )
    except WorkerNotAllowedError as exc:
        logger.info("prolific entry refused for participant %s: %s", short_id(pid), exc)
        return _message(request, "Not available", str(exc), status=403)
    request.session[SESSION_KEY] = worker.pk
    return redirect("worker-prolific:assignment", assignment_id=assignment.pk)


def _session_worker(request: HttpRequest) -> int | None:
    value = request.session.get(SESSION_KEY)
    return value if isinstance(value, int) else None


def prolific_session_assignment(request: HttpRequest, assignment_id: int) -> Assignment | None:
    """Assignment ``assignment_id`` if it is the Prolific participant's this session
    speaks for (remembered at the entry): the check of the work page and of the routes
    that serve it (the adversarial panel's). None otherwise: never a bare id."""
    worker_id = _session_worker(request)
    if worker_id is None:
        return None
    return prolific_assignment_of(assignment_id=assignment_id, worker_id=worker_id)


def _completion_redirect(assignment: Assignment) -> HttpResponse:
    failed = (assignment.review_details or {}).get("attention_check") == "failed"
    code = _completion(assignment.hit.provider_group_id, "failed_check" if failed else "completed")
    if code is None:
        raise Http404("This study has no completion code.")
    return redirect(COMPLETION_URL.format(code=code))


@require_http_methods(["GET", "POST"])
def assignment(request: HttpRequest, assignment_id: int) -> HttpResponse:
    """The work page (GET) and its submission (POST), then Prolific's completion URL."""
    worker_id = _session_worker(request)
    if worker_id is None:
        raise Http404("No such task.")
    action_url = reverse("worker-prolific:assignment", kwargs={"assignment_id": assignment_id})
    if request.method == "POST":

        def after_submit(result: SubmitResult) -> HttpResponse:
            return _completion_redirect(result.assignment)

        def on_closed(exc: AssignmentClosedError) -> HttpResponse:
            return _message(request, "Task closed", str(exc), status=409)

        try:
            return submit_assignment(
                request,
                assignment_id=assignment_id,
                workers=RequestWorkers(worker_ids=(worker_id,)),
                action_url=action_url,
                after_submit=after_submit,
                on_closed=on_closed,
            )
        except Assignment.DoesNotExist:
            raise Http404("No such task.") from None
    found = prolific_session_assignment(request, assignment_id)
    if found is None:
        raise Http404("No such task.")
    if found.status in STORED_STATES:
        return _completion_redirect(found)
    if not assignment_is_current(found):
        return _message(request, "Task closed", "This task is closed.", status=409)
    return render_assignment(request, assignment=found, action_url=action_url)


# --- Webhooks ------------------------------------------------------------------------------


def signature_valid(*, secret: str, timestamp: str, body: bytes, signature: str) -> bool:
    """Prolific's hook signature: base64(HMAC-SHA256(secret, timestamp + body))."""
    if not (secret and timestamp and signature):
        return False

    def signs(signed: bytes) -> bool:
        digest = hmac.new(secret.encode(), timestamp.encode() + signed, hashlib.sha256).digest()
        return hmac.compare_digest(base64.b64encode(digest), signature.encode())

    # The raw bytes first: nothing is parsed for a request that is not Prolific's.
    if signs(body):
        return True
    # Prolific's own example signs ``json.dumps`` of the parsed body: accept that too,
    # for bodies of sane depth only (parsing 100,000 ``[`` would exhaust the stack).
    if json_depth_exceeds(body):
        return False
    try:
        return signs(json.dumps(json.loads(body)).encode())
    except (ValueError, RecursionError):
        return False


@csrf_exempt
@require_POST
def hooks(request: HttpRequest) -> HttpResponse:
    """Verify a Prolific hook and enqueue a sync of its study (or of all studies)."""
    secret = getattr(settings, "PROLIFIC_WEBHOOK_SECRET", "")
    timestamp = request.META.get(TIMESTAMP_HEADER, "")
    signature = request.META.get(SIGNATURE_HEADER, "")
    if not signature_valid(
        secret=secret, timestamp=timestamp, body=request.body, signature=signature
    ):
        return JsonResponse({"detail": "invalid signature"}, status=403)
    tolerance = float(getattr(settings, "PROLIFIC_WEBHOOK_TOLERANCE", 300))
    try:
        sent = float(timestamp)
    except ValueError:
        sent = math.nan
    # NaN compares false with everything: a non-finite timestamp is refused outright.
    if not math.isfinite(sent) or abs(time.time() - sent) > tolerance:
        return JsonResponse({"detail": "stale or invalid timestamp"}, status=403)
    if json_depth_exceeds(request.body):
        return JsonResponse({"detail": "invalid JSON: nested too deeply"}, status=400)
    try:
        event = json.loads(request.body or b"{}")
    except (ValueError, RecursionError):
        return JsonResponse({"detail": "invalid JSON"}, status=400)
    study_id = None
    if isinstance(event, dict):
        candidate = event.get("study_id")
        kind = str(event.get("event_type", ""))
        if candidate is None and kind.startswith("study."):
            candidate = event.get("resource_id")
        resource = event.get("resource_id")
        if candidate is None and kind.startswith("submission.") and isinstance(resource, str):
            # A submission event names the submission: sync its study only.
            candidate = (
                prolific_study_of_submission(submission_id=resource)
                if _ID.match(resource)
                else None
            )
        if isinstance(candidate, str) and _ID.match(candidate):
            study_id = candidate
        elif kind.startswith("submission.") and isinstance(resource, str) and _ID.match(resource):
            # A session not stored yet: the task asks Prolific for its study, syncs that one.
            task_after_commit("campaigns.platform_sync", "prolific", f"submission:{resource}")
            return JsonResponse({"accepted": True, "study_id": None, "submission_id": resource})
    task_after_commit("campaigns.platform_sync", "prolific", study_id)
    return JsonResponse({"accepted": True, "study_id": study_id})
