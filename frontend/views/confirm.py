"""The confirmation step of an irreversible action (complete a campaign, reject many,
revoke an invite link, remove access or credentials): the action's POST without
``confirmed=yes`` answers a page that names the consequence and posts the same fields
again with it. Works without JavaScript; a script may ask first and add the field."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

# Fields the confirmation page does not carry over: the token is issued afresh.
_NOT_CARRIED = ("csrfmiddlewaretoken", "confirmed")


def confirm_first(
    request: HttpRequest, *, title: str, consequence: str, button: str, cancel_url: str
) -> HttpResponse | None:
    """None when the request was confirmed; otherwise the page asking for it."""
    if request.POST.get("confirmed") == "yes":
        return None
    fields = [
        (name, value)
        for name in request.POST
        if name not in _NOT_CARRIED
        for value in request.POST.getlist(name)
    ]
    context = {
        "title": title,
        "consequence": consequence,
        "button": button,
        "cancel_url": cancel_url,
        "fields": fields,
        "action": request.get_full_path(),
    }
    return render(request, "frontend/confirm_action.html", context)
