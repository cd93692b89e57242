"""The site plus a fake of MTurk's side of an ExternalQuestion HIT, for the browser test:

- ``/fake-mturk/?src=<url>``: a page that shows ``src`` in an iframe, as MTurk's
  worker site does;
- ``/mturk/externalSubmit``: where the task page hands the assignment back (MTurk's
  path under ``turkSubmitTo``); it records what arrived in ``RECEIVED``.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import include, path
from django.utils.html import escape
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from qaportal.urls import urlpatterns as site_urlpatterns

RECEIVED: list[dict[str, str]] = []


def host(request: HttpRequest) -> HttpResponse:
    src = escape(request.GET.get("src", ""))
    response = HttpResponse(
        "<!doctype html><html><head><title>Fake MTurk</title></head><body>"
        "<h1>Fake MTurk worker site</h1>"
        f'<iframe id="task" src="{src}" width="900" height="700"></iframe></body></html>'
    )
    # MTurk's page, not qaportal's: it frames the task page from another origin.
    response["Content-Security-Policy"] = "frame-src *"
    return response


@xframe_options_exempt  # MTurk's own page, shown in its own frame
@csrf_exempt
@require_POST
def external_submit(request: HttpRequest) -> HttpResponse:
    RECEIVED.append({k: str(v) for k, v in request.POST.items()})
    response = HttpResponse(
        f"<!doctype html><h1>MTurk received {escape(request.POST.get('assignmentId', ''))}</h1>"
    )
    response["Content-Security-Policy"] = "frame-ancestors *"  # MTurk's page, in its frame
    return response


_has_mturk = any(getattr(p, "namespace", None) == "worker-mturk" for p in site_urlpatterns)

urlpatterns = [
    path("fake-mturk/", host),
    path("mturk/externalSubmit", external_submit),
    *([] if _has_mturk else [path("w/mturk/", include("campaigns.platforms.mturk.urls"))]),
    *site_urlpatterns,
]
