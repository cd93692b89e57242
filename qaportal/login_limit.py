"""One lockout policy for every login path, keyed on the account and the real client
address (django-axes' model, kept small).

Three counters, each over ``LOGIN_FAILURE_WINDOW_SECONDS``:

- one account from one address: after ``LOGIN_FAILURE_LIMIT`` failures, that pair is
  refused for ``LOGIN_BACKOFF_BASE_SECONDS``, doubled with every further failure (at
  most the window), whether the password is right or not;
- one address, any accounts (password spraying): the same at ten times the limit;
- one account, any addresses (a botnet on one account): after
  ``LOGIN_ACCOUNT_FAILURE_LIMIT`` failures the account is refused, for at most
  ``LOGIN_ACCOUNT_BACKOFF_MAX_SECONDS``, *to the addresses that failed on it*. An
  address that has not failed on the account still opens it with the right password,
  so nobody can keep a requester out from afar.

Only passwords actually tried count: a refusal while locked is not a failure (Django
still sends ``user_login_failed`` for it; the backend marks the request so it is not
counted). No counter is site-wide. The client address is ``REMOTE_ADDR``, unless that is
one of ``TRUSTED_PROXIES`` (the documented reverse proxy): then the last address of
``X-Forwarded-For`` that is not a trusted proxy. Behind a proxy that is not listed,
every client shares the proxy's address: set ``TRUSTED_PROXIES``.

The paths: the login page and the admin's login (both answer 429 with ``Retry-After``
while locked, ``frontend.views.auth``), any other ``authenticate()`` call (the backend
refuses), and the password change form, whose old password counts as a login
(``login_failure_record`` / ``login_success_record``). Failures are counted in the
cache (Redis in production); a success clears the pair's and the account's counts.
Only digests of usernames are used as keys; nothing is logged.
"""

from __future__ import annotations

import hashlib
import ipaddress
import time
from typing import Any

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.dispatch import receiver
from django.http import HttpRequest

SPRAY_FACTOR = 10
PREFIX = "qaportal:login-fail"


def _trusted(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address.strip())
    except ValueError:
        return False
    for network in settings.TRUSTED_PROXIES:
        try:
            if ip in ipaddress.ip_network(network, strict=False):
                return True
        except ValueError:
            continue
    return False


def client_address(request: HttpRequest | None) -> str:
    """The real client address: ``REMOTE_ADDR``, or behind a trusted proxy the last
    ``X-Forwarded-For`` entry that is not a trusted proxy (a client can prepend
    anything; only what trusted proxies appended is believed)."""
    if request is None:
        return "-"
    remote = str(request.META.get("REMOTE_ADDR") or "-")
    if not _trusted(remote):
        return remote
    forwarded = [a.strip() for a in str(request.META.get("HTTP_X_FORWARDED_FOR", "")).split(",")]
    for address in reversed([a for a in forwarded if a]):
        if not _trusted(address):
            try:
                return str(ipaddress.ip_address(address))
            except ValueError:
                return remote  # garbage from the client's side of the proxy
    return remote


def _who(username: str | None) -> str:
    return hashlib.sha256((username or "").strip().casefold().encode()).hexdigest()[:24]


def _counters(request: HttpRequest | None, username: str | None) -> list[tuple[str, int, float]]:
    """``(key, limit, longest lock in seconds)`` of each counter this attempt feeds."""
    limit: int = settings.LOGIN_FAILURE_LIMIT
    window = float(settings.LOGIN_FAILURE_WINDOW_SECONDS)
    address, who = client_address(request), _who(username)
    return [
        (f"{PREFIX}:pair:{address}:{who}", limit, window),
        (f"{PREFIX}:address:{address}", limit * SPRAY_FACTOR, window),
        (
            f"{PREFIX}:account:{who}",
            settings.LOGIN_ACCOUNT_FAILURE_LIMIT,
            float(settings.LOGIN_ACCOUNT_BACKOFF_MAX_SECONDS),
        ),
    ]


def login_retry_after(*, request: HttpRequest | None, username: str | None) -> float:
    """Seconds until this address may try to log in as ``username`` again (0: now).

    The account's own lock holds only against addresses that have failed on it."""
    now = time.time()
    (pair, _l, _g), (address, _l2, _g2), (account, _l3, _g3) = _counters(request, username)
    values = cache.get_many([pair, f"{pair}:until", f"{address}:until", f"{account}:until"])
    waits = [values.get(f"{pair}:until") or 0, values.get(f"{address}:until") or 0]
    if values.get(pair):
        waits.append(values.get(f"{account}:until") or 0)
    return max(0.0, *(w - now for w in waits))


def login_locked(*, request: HttpRequest | None, username: str | None) -> bool:
    """True while this address may not try to log in as ``username``."""
    return login_retry_after(request=request, username=username) > 0


def _count(key: str, limit: int, longest: float) -> None:
    window: int = settings.LOGIN_FAILURE_WINDOW_SECONDS
    cache.add(key, 0, window)
    try:
        failures = cache.incr(key)
    except ValueError:  # expired between add and incr: start again
        cache.set(key, 1, window)
        failures = 1
    if failures >= limit:
        base = float(settings.LOGIN_BACKOFF_BASE_SECONDS)
        lock = min(longest, base * 2 ** min(failures - limit, 30))
        cache.set(f"{key}:until", time.time() + lock, int(lock) + 1)


# Set on a request the backend refused while locked: no password was tried.
REFUSED_WHILE_LOCKED = "_qaportal_login_refused_while_locked"


def login_failure_record(*, request: HttpRequest | None, username: str | None) -> None:
    """Count one wrong password for ``username`` from this request's address."""
    for key, limit, longest in _counters(request, username):
        _count(key, limit, longest)


def login_success_record(*, request: HttpRequest | None, username: str | None) -> None:
    """A right password: clear the pair's and the account's counts (not the address's)."""
    pair, _address, account = _counters(request, username)
    cache.delete_many([pair[0], f"{pair[0]}:until", account[0], f"{account[0]}:until"])


@receiver(user_login_failed, dispatch_uid="qaportal-login-failed")
def _failed(
    sender: Any, credentials: dict[str, Any], request: HttpRequest | None = None, **_: Any
) -> None:
    if request is not None and getattr(request, REFUSED_WHILE_LOCKED, False):
        return  # refused unheard: not a password tried
    login_failure_record(request=request, username=credentials.get("username"))


@receiver(user_logged_in, dispatch_uid="qaportal-login-succeeded")
def _succeeded(sender: Any, request: HttpRequest | None, user: Any, **_: Any) -> None:
    login_success_record(request=request, username=user.get_username())


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
            if request is not None:
                setattr(request, REFUSED_WHILE_LOCKED, True)
            raise PermissionDenied("Too many failed logins; try again later.")
        return super().authenticate(request, username=username, password=password, **kwargs)
