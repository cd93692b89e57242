"""Login rate limiting: after ``LOGIN_FAILURE_LIMIT`` failed logins for one username
from one address within ``LOGIN_FAILURE_WINDOW_SECONDS`` (or ten times as many from one
address for any usernames, against password spraying), further attempts are refused
until the window has passed, whether the password is right or not.

Enforced in the authentication backend, so the login page, the admin's login and any
other ``authenticate()`` call are all covered; failures are counted from Django's
``user_login_failed`` signal in the cache (Redis in production), a success clears the
username's count. Only a digest of the username is used as a key; nothing is logged.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.dispatch import receiver
from django.http import HttpRequest

SPRAY_FACTOR = 10


def _address(request: HttpRequest | None) -> str:
    return str((request.META.get("REMOTE_ADDR") if request is not None else None) or "-")


def _keys(request: HttpRequest | None, username: str | None) -> tuple[str, str]:
    who = hashlib.sha256((username or "").strip().casefold().encode()).hexdigest()[:24]
    address = _address(request)
    return f"qaportal:login-fail:{address}:{who}", f"qaportal:login-fail:{address}"


def login_locked(*, request: HttpRequest | None, username: str | None) -> bool:
    """True while this address may not try to log in as ``username``."""
    pair, address = _keys(request, username)
    limit = settings.LOGIN_FAILURE_LIMIT
    return (cache.get(pair) or 0) >= limit or (cache.get(address) or 0) >= limit * SPRAY_FACTOR


def _count(key: str) -> None:
    cache.add(key, 0, settings.LOGIN_FAILURE_WINDOW_SECONDS)
    try:
        cache.incr(key)
    except ValueError:  # expired between add and incr: start again
        cache.set(key, 1, settings.LOGIN_FAILURE_WINDOW_SECONDS)


@receiver(user_login_failed, dispatch_uid="qaportal-login-failed")
def _failed(
    sender: Any, credentials: dict[str, Any], request: HttpRequest | None = None, **_: Any
) -> None:
    for key in _keys(request, credentials.get("username")):
        _count(key)


@receiver(user_logged_in, dispatch_uid="qaportal-login-succeeded")
def _succeeded(sender: Any, request: HttpRequest | None, user: Any, **_: Any) -> None:
    cache.delete(_keys(request, user.get_username())[0])


class RateLimitedModelBackend(ModelBackend):
    """Django's model backend, refusing everyone while the login is locked."""

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> Any:
        if login_locked(request=request, username=username or kwargs.get("username")):
            raise PermissionDenied("Too many failed logins; try again later.")
        return super().authenticate(request, username=username, password=password, **kwargs)
