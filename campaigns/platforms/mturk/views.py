"""The MTurk entry: the ExternalQuestion page MTurk shows in its iframe.

``/w/mturk/?assignmentId=…&hitId=…&workerId=…&turkSubmitTo=…`` (the ExternalQuestion
URL the MTurk provider gives each HIT):

- **Preview** (``assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE``): the task, read-only,
  with "Accept the HIT to start"; nothing is stored.
- **Work**: the HIT is found by ``hitId``, the assignment made once per MTurk
  ``assignmentId`` (``mturk_assignment_accept``), and the task's form is shown.
- **Submit** (POST ``/w/mturk/submit/``): the answer is stored once with the common
  submission service; then a page posts ``assignmentId`` to
  ``turkSubmitTo + "/mturk/externalSubmit"`` by itself, as MTurk requires.

``turkSubmitTo`` must be MTurk's (``https://www.mturk.com`` or
``https://workersandbox.mturk.com``, plus ``MTURK_SUBMIT_HOSTS_EXTRA``): anything
else is refused, so the page never posts a worker's assignment elsewhere.

Inside MTurk's iframe our cookies are third-party cookies, which browsers block
more and more. So these pages use no session and no CSRF cookie: the form carries a
signed token naming the assignment and worker it was made for (``qa_token``), which
the POST must bring back. The pages may be framed by MTurk's hosts only
(the site's Content-Security-Policy with ``frame-ancestors`` for them and their
externalSubmit in ``form-action``; no ``X-Frame-Options``).
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core import signing
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from campaigns.models import HIT, Assignment
from campaigns.platforms.mturk.work import (
    PREVIEW_ASSIGNMENT_ID,
    mturk_assignment_accept,
    mturk_hit_get,
    short_id,
)
from campaigns.platforms.worker_pages import render_assignment, submit_assignment, task_context
from campaigns.work.allocation import NoWorkAvailableError, WorkerNotAllowedError
from campaigns.work.lifecycle import AssignmentClosedError
from campaigns.work.selectors.access import RequestWorkers
from campaigns.work.selectors.next_hit import assignment_is_current
from campaigns.work.submission import STORED_STATES, SubmitResult
from qaportal.middleware import policy_with

logger = logging.getLogger(__name__)

MTURK_SUBMIT_HOSTS = ("https://www.mturk.com", "https://workersandbox.mturk.com")
_ID = re.compile(r"^[A-Za-z0-9_-]{1,100}$")
TOKEN_SALT = "qaportal.mturk.work"
TOKEN_FIELD = "qa_token"


def submit_hosts() -> tuple[str, ...]:
    """Origins ``turkSubmitTo`` may name: MTurk's two, plus ``MTURK_SUBMIT_HOSTS_EXTRA``."""
    extra = getattr(settings, "MTURK_SUBMIT_HOSTS_EXTRA", ()) or ()
    return (*MTURK_SUBMIT_HOSTS, *(h.rstrip("/") for h in extra))


def submit_url(turk_submit_to: str) -> str | None:
    """``turkSubmitTo + "/mturk/externalSubmit"`` if ``turkSubmitTo`` is an allowed origin."""
    parts = urlsplit(turk_submit_to.strip())
    if parts.scheme not in ("https", "http") or not parts.netloc:
        return None
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        return None
    origin = f"{parts.scheme}://{parts.netloc}".lower()
    if origin not in (h.lower() for h in submit_hosts()):
        return None
    return f"{origin}/mturk/externalSubmit"


def framed_by_mturk(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Let MTurk's hosts (and only them, and us) show the page in a frame."""

    @functools.wraps(view)  # keeps csrf_exempt and the other view markers
    @xframe_options_exempt
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = view(request, *args, **kwargs)
        hosts = list(submit_hosts())
        response["Content-Security-Policy"] = policy_with(
            frame_ancestors=["'self'", *hosts], form_action=hosts
        )
        return response

    return wrapper


def _message(request: HttpRequest, title: str, message: str, *, status: int) -> HttpResponse:
    return render(
        request, "worker/mturk/message.html", {"title": title, "message": message}, status=status
    )


def _token(assignment: Assignment) -> str:
    return signing.dumps({"a": assignment.pk, "w": assignment.worker_id}, salt=TOKEN_SALT)


def _token_read(value: str) -> tuple[int, int] | None:
    # No age limit of its own: the assignment's deadline decides when it may be submitted.
    try:
        data = signing.loads(value, salt=TOKEN_SALT)
    except signing.BadSignature:
        return None
    if not isinstance(data, dict):
        return None
    a, w = data.get("a"), data.get("w")
    return (a, w) if isinstance(a, int) and isinstance(w, int) else None


def _hidden(assignment: Assignment, turk_submit_to: str) -> dict[str, str]:
    return {
        "assignmentId": str(assignment.provider_assignment_id),
        "turkSubmitTo": turk_submit_to,
        TOKEN_FIELD: _token(assignment),
    }


def _external_submit(request: HttpRequest, assignment: Assignment, url: str) -> HttpResponse:
    """The page that hands the assignment back to MTurk (posts itself on load)."""
    context = {
        "stage": assignment.hit.stage,
        "submit_url": url,
        "assignment_id": assignment.provider_assignment_id,
    }
    return render(request, "worker/mturk/submit.html", context)


def _preview(request: HttpRequest, hit: HIT) -> HttpResponse:
    context = task_context(stage=hit.stage, hit=hit, preview=True)
    return render(request, "worker/mturk/preview.html", context)


@framed_by_mturk
@require_GET
def entry(request: HttpRequest) -> HttpResponse:
    """Preview a HIT, or show the task of the worker's MTurk assignment."""
    assignment_id = request.GET.get("assignmentId", "")
    hit_id = request.GET.get("hitId", "")
    if not _ID.match(hit_id):
        return _message(request, "Link incomplete", "Please open this task from MTurk.", status=400)
    hit = mturk_hit_get(provider_hit_id=hit_id)
    if hit is None:
        return _message(
            request,
            "Task not found",
            "This HIT is not known here: it may have been withdrawn. Please return it on MTurk.",
            status=404,
        )
    if assignment_id == PREVIEW_ASSIGNMENT_ID:
        return _preview(request, hit)
    worker_id = request.GET.get("workerId", "")
    turk_submit_to = request.GET.get("turkSubmitTo", "")
    url = submit_url(turk_submit_to)
    if not (_ID.match(assignment_id) and _ID.match(worker_id)) or url is None:
        logger.info("mturk entry refused: bad parameters for HIT %s", hit.pk)
        return _message(
            request,
            "Link incomplete",
            "This page works only inside MTurk (the link lacks the assignment, the worker "
            "or a submit address MTurk uses). Please open the HIT from MTurk.",
            status=400,
        )
    try:
        assignment = mturk_assignment_accept(
            hit=hit, worker_external_id=worker_id, assignment_id=assignment_id
        )
    except NoWorkAvailableError as exc:
        return _message(request, "Not available", f"{exc} Please return the HIT.", status=409)
    except WorkerNotAllowedError as exc:
        logger.info("mturk entry refused for worker %s: %s", short_id(worker_id), exc)
        return _message(request, "Not available", str(exc), status=403)
    if assignment.status in STORED_STATES:
        return _external_submit(request, assignment, url)
    if not assignment_is_current(assignment):
        return _message(
            request, "Task closed", "This task is closed. Please return the HIT.", status=409
        )
    return render_assignment(
        request,
        assignment=assignment,
        action_url=reverse("worker-mturk:submit"),
        hidden=_hidden(assignment, turk_submit_to),
    )


@framed_by_mturk
@csrf_exempt  # the signed qa_token stands in for the CSRF cookie (third-party in the iframe)
@require_POST
def submit(request: HttpRequest) -> HttpResponse:
    """Store the answer once, then hand the assignment back to MTurk."""
    ids = _token_read(request.POST.get(TOKEN_FIELD, ""))
    turk_submit_to = request.POST.get("turkSubmitTo", "")
    url = submit_url(turk_submit_to)
    if ids is None or url is None:
        return _message(
            request,
            "Not saved",
            "This form did not come from a task page of ours; nothing was saved.",
            status=400,
        )
    assignment_pk, worker_pk = ids

    def after_submit(result: SubmitResult) -> HttpResponse:
        return _external_submit(request, result.assignment, url)

    def on_closed(exc: AssignmentClosedError) -> HttpResponse:
        return _message(request, "Task closed", f"{exc} Please return the HIT.", status=409)

    try:
        assignment = Assignment.objects.only("provider_assignment_id", "worker_id").get(
            pk=assignment_pk, worker_id=worker_pk
        )
        return submit_assignment(
            request,
            assignment_id=assignment_pk,
            workers=RequestWorkers(worker_ids=(worker_pk,)),
            action_url=reverse("worker-mturk:submit"),
            after_submit=after_submit,
            on_closed=on_closed,
            hidden=_hidden(assignment, turk_submit_to),
        )
    except Assignment.DoesNotExist:
        return _message(request, "Task not found", "This task is not known here.", status=404)
