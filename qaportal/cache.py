"""Django's Redis cache, keeping its ``redis.Redis`` clients instead of making one per call.

Django's ``RedisCacheClient.get_client`` builds a new ``redis.Redis`` for every cache
operation, and redis-py fills ~170 response callbacks into each new one: about 70 µs of
CPU, as much as the GET itself. Every worker page reads its session from the cache
(``cached_db``), so that was paid on every request. A ``redis.Redis`` holds no
connection of its own (it borrows one from the pool per command) and is safe to share,
so one per connection pool is kept.

``get`` (every request's session read) goes further: it sends its GET on a connection
the thread keeps for itself, without redis-py's command machinery (taking a connection
from the pool and probing its socket, retries, observability hooks, giving it back):
~39 → ~17 µs of CPU a read in a loop. A kept connection that answered before and that
the server has closed since (a restart, an idle timeout) is found on use and the GET is
sent once more on a new connection, as the pool's probe would have reconnected. Any
other failure (no server, a timeout) reaches the caller at once, where redis-py would
have tried three more times with backoff; the cache then answers as an empty cache
(``DegradingRedisCache`` below).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import redis
from django.core.cache import cache
from django.core.cache.backends import redis as django_redis
from django.core.cache.backends.base import DEFAULT_TIMEOUT


class RedisCacheClient(django_redis.RedisCacheClient):
    """``RedisCacheClient`` with one ``redis.Redis`` per connection pool."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}
        self._kept = threading.local()  # each thread's connections for ``get``

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        django_client: Any = self  # its pool helpers are not in django-stubs
        index = django_client._get_connection_pool_index(write)
        client = self._clients.get(index)
        if client is None:
            pool = django_client._get_connection_pool(write)
            client = self._clients.setdefault(index, django_client._client(connection_pool=pool))
        return client

    def get(self, key: Any, default: Any) -> Any:
        """Django's ``get``, the GET sent on this thread's kept connection (``_kept_get``)."""
        django_client: Any = self
        pool = django_client._get_connection_pool(False)
        value = _kept_get(self._kept, pool, key)
        return default if value is None else django_client._serializer.loads(value)

    def get_with_ttl(self, key: Any) -> tuple[Any, float | None]:
        """(``key``'s value or None, the seconds it has left to live or None when it has
        no expiry or is gone): GET and PTTL sent together on this thread's kept
        connection."""
        django_client: Any = self
        pool = django_client._get_connection_pool(False)
        value, ttl_ms = _kept_get(self._kept, pool, key, with_ttl=True)
        if value is None:
            return None, None
        return django_client._serializer.loads(value), (ttl_ms / 1000 if ttl_ms > 0 else None)


def _kept_get(kept: threading.local, pool: Any, key: Any, *, with_ttl: bool = False) -> Any:
    """Redis GET of ``key`` on the connection to ``pool``'s server that this thread keeps
    (made on first use, with the pool's settings; a forked process makes its own); with
    ``with_ttl``, (the value, its PTTL in ms) from one round trip."""
    pid = os.getpid()
    if getattr(kept, "pid", None) != pid:
        kept.pid, kept.conns = pid, {}
    slot = kept.conns.get(id(pool))
    if slot is None:
        slot = kept.conns[id(pool)] = [pool.connection_class(**pool.connection_kwargs), False]
    conn, answered_before = slot
    try:
        return _get_on(conn, slot, key, with_ttl)
    except redis.exceptions.ConnectionError:
        # A connection that answered before and is closed now: the server restarted or
        # dropped it while idle. Once more on a new one (redis-py connects on send).
        if not answered_before:
            raise
    return _get_on(conn, slot, key, with_ttl)


def _get_on(conn: Any, slot: list[Any], key: Any, with_ttl: bool = False) -> Any:
    slot[1] = False
    try:
        if with_ttl:
            conn.send_packed_command(conn.pack_commands([("GET", key), ("PTTL", key)]))
            value = (conn.read_response(), conn.read_response())
        else:
            conn.send_command("GET", key)
            value = conn.read_response()
    except redis.exceptions.ResponseError:
        slot[1] = True  # an error reply: the connection is fine
        raise
    except BaseException:
        conn.disconnect()  # a reply may be left unread
        raise
    slot[1] = True
    return value


class RedisCache(django_redis.RedisCache):
    """Django's ``RedisCache`` on :class:`RedisCacheClient` (settings: ``CACHES``)."""

    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = RedisCacheClient


# --- Degrading when Redis is down --------------------------------------------------------
#
# Cache and broker share one Redis in the compose shape. With it down, a cache that
# raised would turn every signed-in page (sessions are ``cached_db``), every API call
# (the throttle's counts) and every login into a 500, and workers could not submit.
# The cache is an optimisation everywhere it is used, so this one answers as an empty
# cache instead: reads miss, writes are dropped, ``incr`` finds no key. After a failure
# it does not call Redis again for ``DOWN_SECONDS``, so a hung server costs one timeout
# per process now and then, not one per call. What relies on counts in the cache says
# how it degrades: the API throttle counts in the process (``campaigns.api.throttling``),
# the login limit does not lock (``qaportal.login_limit``); sessions come from the
# database. The outbox lives in PostgreSQL, so nothing that must follow a commit is lost.

DOWN_SECONDS = 5.0
_REDIS_DOWN = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)
logger = logging.getLogger(__name__)


class DegradingRedisCache(RedisCache):
    """``RedisCache`` answering as an empty cache while Redis cannot be reached."""

    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._down_until = 0.0

    @property
    def available(self) -> bool:
        """False while Redis is taken to be down (a recent call could not reach it)."""
        return time.monotonic() >= self._down_until

    def _call(self, default: Any, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if not self.available:
            return default
        try:
            return method(*args, **kwargs)
        except _REDIS_DOWN as exc:
            if self.available:
                logger.warning(
                    "cache: Redis unreachable (%s); answering as an empty cache for %.0f s",
                    type(exc).__name__,
                    DOWN_SECONDS,
                )
            self._down_until = time.monotonic() + DOWN_SECONDS
            return default

    def add(self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None) -> Any:
        return self._call(False, super().add, key, value, timeout, version)

    def get(self, key: Any, default: Any = None, version: Any = None) -> Any:
        return self._call(default, super().get, key, default, version)

    def get_with_ttl(self, key: Any, version: Any = None) -> tuple[Any, float | None]:
        """(``key``'s value or None, the seconds it has left to live or None): see
        :meth:`RedisCacheClient.get_with_ttl`; (None, None) while Redis is down."""
        made = self.make_and_validate_key(key, version=version)
        client: Any = self._cache  # a RedisCacheClient of this module
        return self._call((None, None), client.get_with_ttl, made)

    def set(
        self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None
    ) -> None:
        self._call(None, super().set, key, value, timeout, version)

    def touch(self, key: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None) -> Any:
        return self._call(False, super().touch, key, timeout, version)

    def delete(self, key: Any, version: Any = None) -> Any:
        return self._call(False, super().delete, key, version)

    def get_many(self, keys: Any, version: Any = None) -> Any:
        return self._call({}, super().get_many, keys, version)

    def has_key(self, key: Any, version: Any = None) -> Any:
        return self._call(False, super().has_key, key, version)

    def incr(self, key: Any, delta: int = 1, version: Any = None) -> Any:
        found = self._call(None, super().incr, key, delta, version)
        if found is None:
            raise ValueError(f"Key {key!r} not found (the cache is unavailable).")
        return found

    def set_many(self, data: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None) -> Any:
        return self._call(list(data), super().set_many, data, timeout, version)

    def delete_many(self, keys: Any, version: Any = None) -> None:
        self._call(None, super().delete_many, keys, version)


def cache_available() -> bool:
    """Whether the default cache is taken to be reachable (always, but for a degrading
    Redis cache that recently could not reach Redis)."""
    return bool(getattr(cache, "available", True))


def counter_within(*, key: str, limit: int, timeout: int = 90) -> bool:
    """Count one more under ``key`` in the shared cache (made with ``timeout`` seconds to
    live when new) and say whether the count is still at most ``limit``: a rate per
    window when the caller puts the window (e.g. the clock minute) in the key."""
    try:
        count = cache.incr(key)
    except ValueError:  # not there yet (or expired): make it, unless another did first
        if cache.add(key, 1, timeout):
            return limit >= 1
        count = cache.incr(key)
    return count <= limit
