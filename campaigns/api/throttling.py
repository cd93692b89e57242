"""Rate limits per API token: one count for reads, one for writes.

The rates come from ``settings.API_THROTTLE_RATES`` (``API_THROTTLE_READ`` and
``API_THROTTLE_WRITE`` in the environment), read on every request so a test or
an operator's override takes effect without re-importing DRF. Counts live in the
cache: Redis on the production stack, so every web process shares them. Over the
rate DRF answers 429 with ``Retry-After``.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


class TokenRateThrottle(SimpleRateThrottle):
    """Counts requests per token (per user for a session, per address when anonymous)."""

    scope = "read"

    def allow_request(self, request: Request, view: Any) -> bool:
        self.scope = "read" if request.method in SAFE_METHODS else "write"
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)
        return super().allow_request(request, view)

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
