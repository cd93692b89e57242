"""The login paths, one lockout policy (``qaportal.login_limit``): the login page, the
admin's login and the password change answer 429 with ``Retry-After`` while this
address may not try this account's password, without trying it."""

from __future__ import annotations

import math
from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import PasswordChangeForm
from django.forms.utils import ErrorDict
from django.http import HttpRequest, HttpResponse
from django.urls import reverse

from qaportal.login_limit import login_failure_record, login_retry_after, login_success_record


def _wait_text(wait: float) -> tuple[int, str]:
    seconds = math.ceil(wait)
    when = f"{seconds} seconds" if seconds < 120 else f"{math.ceil(seconds / 60)} minutes"
    return seconds, when


def _refused(form: forms.Form, message: str) -> None:
    """Mark ``form`` refused with ``message`` without validating it: validating would
    try the password, itself a counted attempt."""
    form._errors = ErrorDict()  # type: ignore[attr-defined]  # Django's private state
    form.cleaned_data = {}
    form.add_error(None, message)


class LockedLoginMixin:
    """A login view answering 429 while the login is locked for this address."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        wait = login_retry_after(request=request, username=request.POST.get("username"))
        if wait > 0:
            view: Any = self
            form = view.get_form()
            seconds, when = _wait_text(wait)
            _refused(
                form,
                f"Too many failed logins. Try again in {when}, or ask your "
                "administrator to reset your password.",
            )
            response = view.render_to_response(view.get_context_data(form=form), status=429)
            response["Retry-After"] = str(seconds)
            return response
        return super().post(request, *args, **kwargs)  # type: ignore[misc]


class LoginView(LockedLoginMixin, auth_views.LoginView):
    template_name = "frontend/auth/login.html"
    redirect_authenticated_user = True


class AdminLoginView(LockedLoginMixin, auth_views.LoginView):
    """The admin site's login (``admin.site.login`` does the same), locked the same way."""

    template_name = "admin/login.html"
    authentication_form = AdminAuthenticationForm

    def get_default_redirect_url(self) -> str:
        return reverse("admin:index")

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        return {
            **super().get_context_data(**kwargs),
            **admin.site.each_context(self.request),
            "title": "Log in",
            "subtitle": None,
            "app_path": self.request.get_full_path(),
            "username": self.request.user.get_username(),
        }


class LimitedPasswordChangeForm(PasswordChangeForm):
    """Django's password change; the old password counts as a login attempt."""

    def __init__(self, user: Any, *args: Any, request: HttpRequest, **kwargs: Any) -> None:
        self.request = request
        super().__init__(user, *args, **kwargs)

    def clean_old_password(self) -> str:
        username = self.user.get_username()
        try:
            old = super().clean_old_password()
        except forms.ValidationError:
            login_failure_record(request=self.request, username=username)
            raise
        login_success_record(request=self.request, username=username)
        return old


class PasswordChangeView(auth_views.PasswordChangeView):
    form_class = LimitedPasswordChangeForm
    template_name = "frontend/auth/password_change.html"

    def get_form_kwargs(self) -> dict[str, Any]:
        return {**super().get_form_kwargs(), "request": self.request}

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        wait = login_retry_after(request=request, username=request.user.get_username())
        if wait > 0:
            form = self.get_form()
            seconds, when = _wait_text(wait)
            _refused(form, f"Too many wrong passwords. Try again in {when}.")
            response = self.render_to_response(self.get_context_data(form=form), status=429)
            response["Retry-After"] = str(seconds)
            return response
        return super().post(request, *args, **kwargs)
