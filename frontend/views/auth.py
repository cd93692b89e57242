"""The login page: Django's, saying so when too many failed logins locked it."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse

from qaportal.login_limit import login_locked


class LoginView(auth_views.LoginView):
    template_name = "frontend/auth/login.html"
    redirect_authenticated_user = True

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if login_locked(request=request, username=request.POST.get("username")):
            form = self.get_form()
            minutes = max(1, settings.LOGIN_FAILURE_WINDOW_SECONDS // 60)
            form.errors.clear()
            form.add_error(
                None,
                f"Too many failed logins. Try again in {minutes} minutes, or ask your "
                "administrator to reset your password.",
            )
            return self.render_to_response(self.get_context_data(form=form), status=429)
        return super().post(request, *args, **kwargs)
