"""The login page: Django's, saying so when too many failed logins locked it."""

from __future__ import annotations

import math
from typing import Any

from django.contrib.auth import views as auth_views
from django.forms.utils import ErrorDict
from django.http import HttpRequest, HttpResponse

from qaportal.login_limit import login_retry_after


class LoginView(auth_views.LoginView):
    template_name = "frontend/auth/login.html"
    redirect_authenticated_user = True

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        wait = login_retry_after(request=request, username=request.POST.get("username"))
        if wait > 0:
            form = self.get_form()
            seconds = math.ceil(wait)
            when = f"{seconds} seconds" if seconds < 120 else f"{math.ceil(seconds / 60)} minutes"
            # Not validated: validating would call authenticate(), itself a failed login.
            form._errors = ErrorDict()  # type: ignore[attr-defined]  # Django's private state
            form.cleaned_data = {}
            form.add_error(
                None,
                f"Too many failed logins. Try again in {when}, or ask your "
                "administrator to reset your password.",
            )
            response = self.render_to_response(self.get_context_data(form=form), status=429)
            response["Retry-After"] = str(seconds)
            return response
        return super().post(request, *args, **kwargs)
