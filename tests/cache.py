"""The test suite's cache: qaportal's Redis cache (``qaportal.cache``) whose ``clear()``
empties only this test process's keys.

Parallel test workers (pytest-xdist) share one Redis database, each with a key
prefix of its own (``tests/settings.py``). Django's ``RedisCache.clear()`` is a
``FLUSHDB``, which would also empty the other workers' caches (and the Celery queues
on the same database) in the middle of their tests; here it deletes the keys under
this process's prefix instead.
"""

from __future__ import annotations

from qaportal.cache import DegradingRedisCache


class ScopedRedisCache(DegradingRedisCache):
    """``RedisCache`` with a ``clear()`` limited to ``KEY_PREFIX`` (which must be set)."""

    def __init__(self, server: str, params: dict) -> None:
        super().__init__(server, params)
        if not self.key_prefix:
            raise ValueError("ScopedRedisCache needs a KEY_PREFIX")

    def clear(self) -> None:
        client = self._cache.get_client(None, write=True)
        batch: list[bytes] = []
        for key in client.scan_iter(match=f"{self.key_prefix}:*", count=1000):
            batch.append(key)
            if len(batch) >= 1000:
                client.delete(*batch)
                batch.clear()
        if batch:
            client.delete(*batch)
