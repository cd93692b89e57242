"""Rate limits per API token: one count for reads, one for writes.

The rates come from ``settings.API_THROTTLE_RATES`` (``API_THROTTLE_READ`` and
``API_THROTTLE_WRITE`` in the environment), read on every request so a test or
an operator's override takes effect without re-importing DRF. Over the rate DRF
answers 429 with ``Retry-After``.

Counted atomically: one counter per (token, scope, window) in the cache, raised with
``incr`` (Redis ``INCR``; the key made with ``add`` and an expiry of one window), so
concurrent requests on any web process each get a distinct count and none slips past
the limit. DRF's own ``SimpleRateThrottle`` reads a list, appends and writes it back,
which loses counts under concurrency (the hostile tester: 1,260 reads in 9.8 s at
1,200/min, no 429). Fixed windows allow at most twice the rate across a window's
edge, as every fixed-window limiter does. While Redis is down (``qaportal.cache``)
each process counts for itself, so the limit still holds, per process.
"""

from __future__ import annotations

import hashlib
import math
import time
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.core.cache.backends.locmem import LocMemCache
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from qaportal.cache import cache_available

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
# Each process's own counts, used only while the shared cache is unavailable.
_LOCAL = LocMemCache("api-throttle-fallback", {"OPTIONS": {"MAX_ENTRIES": 10_000}})


def _count(store: Any, key: str, ttl: int) -> int:
    """Raise ``key`` by one atomically and answer the count (1 for a new window)."""
    store.add(key, 0, ttl)
    try:
        return int(store.incr(key))
    except ValueError:  # gone between add and incr (expired, or the cache went away)
        store.set(key, 1, ttl)
        return 1


class TokenRateThrottle(SimpleRateThrottle):
    """Counts requests per token (per user for a session, per address when anonymous)."""

    scope = "read"

    def allow_request(self, request: Request, view: Any) -> bool:
        self.scope = "read" if request.method in SAFE_METHODS else "write"
        self.rate = self.get_rate()
        if self.rate is None:
            return True
        limit, duration = self.parse_rate(self.rate)
        self.num_requests, self.duration = limit, duration
        key = self.get_cache_key(request, view)
        if key is None or limit is None or not duration:
            return True
        now = time.time()
        window = int(now // duration)
        self._now, self._window_end = now, float((window + 1) * duration)
        store = cache if cache_available() else _LOCAL
        return _count(store, f"{key}:{window}", int(duration) + 1) <= limit

    def wait(self) -> float | None:
        return max(1.0, math.ceil(self._window_end - self._now))

    def get_rate(self) -> str | None:
        rates: dict[str, str] = getattr(settings, "API_THROTTLE_RATES", {})
        return rates.get(self.scope)

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        token = getattr(request.auth, "key", None)
        if token:
            # The token itself never goes into the cache, only a digest of it.
            ident = "t:" + hashlib.sha256(str(token).encode()).hexdigest()[:32]
        elif request.user and request.user.is_authenticated:
            ident = f"u:{request.user.pk}"
        else:
            ident = f"a:{self.get_ident(request)}"
        return f"throttle:{self.scope}:{ident}"
