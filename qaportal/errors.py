"""The server-error view: JSON under ``/api/`` (scripts parse the answer), the HTML
page elsewhere."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.defaults import server_error as html_server_error


def server_error(request: HttpRequest) -> HttpResponse:
    if request.path.startswith("/api/"):
        return JsonResponse(
            {"detail": "Server error; nothing more is shown. Try again later.", "code": "error"},
            status=500,
        )
    return html_server_error(request)
