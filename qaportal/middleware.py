"""Response headers every page carries: the Content-Security-Policy.

Django 5.2 has no CSP of its own (6.0 adds one), so this sets the header from the
``CONTENT_SECURITY_POLICY`` setting on every response that has none yet: a view that
needs another policy (a worker page framed by a platform) sets its own header.
``CONTENT_SECURITY_POLICY_EXEMPT`` lists path prefixes left without one (the API's
browsable docs load their scripts from a CDN).
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.policy = settings.CONTENT_SECURITY_POLICY
        self.exempt = tuple(settings.CONTENT_SECURITY_POLICY_EXEMPT)

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            self.policy
            and "Content-Security-Policy" not in response
            and not request.path.startswith(self.exempt)
        ):
            response["Content-Security-Policy"] = self.policy
        return response


def policy_with(*, frame_ancestors: list[str], form_action: list[str]) -> str:
    """The site's policy with its ``frame-ancestors`` replaced and ``form-action``
    extended: for a page a platform frames and that posts back to it (MTurk)."""
    directives = [
        d.strip()
        for d in settings.CONTENT_SECURITY_POLICY.split(";")
        if d.strip() and not d.strip().startswith("frame-ancestors")
    ]
    out = []
    for d in directives:
        if d.startswith("form-action"):
            sources = d.split()[1:]
            d = " ".join(["form-action", *dict.fromkeys([*sources, *form_action])])
        out.append(d)
    if not any(d.startswith("form-action") for d in out):
        out.append(" ".join(["form-action", "'self'", *form_action]))
    out.append(" ".join(["frame-ancestors", *frame_ancestors]))
    return "; ".join(out)


class PrivateCacheMiddleware:
    """``Cache-Control: private, no-store`` on every response to a signed-in user, to
    a request carrying credentials, and on every worker page: a shared proxy or the
    browser's disk must not keep a requester's pages, exports, worker ids, a task's
    signed submit token or a worker's rejection feedback. Django's ``never_cache`` pages
    keep their own stricter header."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        # The cheap tests first: a worker page needs no user built (its lazy object, the
        # session's account) to be known private.
        private = (
            "HTTP_AUTHORIZATION" in request.META or _worker_page(request) or _signed_in(request)
        )
        if private and "no-store" not in response.get("Cache-Control", ""):
            response["Cache-Control"] = "private, no-store"
        return response


def _signed_in(request: HttpRequest) -> bool:
    user = getattr(request, "user", None)
    return bool(user is not None and user.is_authenticated)


# The worker pages' URL namespaces: anonymous, yet each page is one worker's (a task
# with its signed submit token, rejection feedback, a Prolific or MTurk identity).
WORKER_NAMESPACES = frozenset({"worker", "worker-mturk", "worker-prolific"})


def _worker_page(request: HttpRequest) -> bool:
    match = getattr(request, "resolver_match", None)
    return match is not None and bool(WORKER_NAMESPACES & set(match.namespaces))
