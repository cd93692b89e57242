"""The cache's GET on a connection each thread keeps (``qaportal.cache``): the same
answers as redis-py's, a connection the server closed is replaced without a miss, a
forked process makes its own, and an unreachable server still reads as an empty cache."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.core.cache import cache

from qaportal import cache as qcache
from qaportal.cache import DegradingRedisCache, cache_available


def _kept_connection() -> Any:
    client: Any = cache._cache  # type: ignore[attr-defined]
    pool = client._get_connection_pool(False)
    return client._kept.conns[id(pool)][0], client.get_client(None)


def test_get_answers_as_redis_py() -> None:
    values: dict[str, Any] = {
        "kept-dict": {"worker_ids": [3, 1]},
        "kept-int": 42,
        "kept-text": "Ünïcode",
        "kept-bytes": b"\x00\xff",
    }
    for key, value in values.items():
        cache.set(key, value, 60)
    for key, value in values.items():
        assert cache.get(key) == value
    assert cache.get("kept-missing") is None
    assert cache.get("kept-missing", "default") == "default"
    cache.delete("kept-dict")
    assert cache.get("kept-dict", 0) == 0
    assert cache.incr("kept-int") == 43
    assert cache.get("kept-int") == 43


def test_a_connection_the_server_closed_is_replaced_without_a_miss() -> None:
    cache.set("kept-session", {"worker_ids": [7]}, 60)
    assert cache.get("kept-session") == {"worker_ids": [7]}
    conn, client = _kept_connection()
    conn.send_command("CLIENT", "ID")
    client_id = conn.read_response()
    assert client.client_kill_filter(_id=client_id) == 1  # as a restart or idle timeout does
    assert cache.get("kept-session") == {"worker_ids": [7]}
    assert cache_available()
    conn.send_command("CLIENT", "ID")
    assert conn.read_response() != client_id  # a new connection


def test_a_forked_process_makes_its_own_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    cache.set("kept-fork", 1, 60)
    assert cache.get("kept-fork") == 1
    before, _ = _kept_connection()
    monkeypatch.setattr(qcache.os, "getpid", lambda: -1)
    assert cache.get("kept-fork") == 1
    after, _ = _kept_connection()
    assert after is not before


def test_an_unreachable_server_reads_as_an_empty_cache() -> None:
    # Port 9 (discard) on the loopback: nothing listens, the connection is refused.
    down = DegradingRedisCache("redis://127.0.0.1:9/0", {"OPTIONS": {"socket_connect_timeout": 1}})
    with pytest.raises(redis.exceptions.ConnectionError):
        down._cache.get(down.make_key("k"), None)
    assert down.get("k", "default") == "default"
    assert not down.available


def test_an_error_reply_keeps_the_connection() -> None:
    cache.set("kept-after-error", "fine", 60)
    assert cache.get("kept-after-error") == "fine"
    conn, client = _kept_connection()
    conn.send_command("CLIENT", "ID")
    client_id = conn.read_response()
    key = cache.make_key("kept-a-list")
    client.rpush(key, b"x")
    try:
        with pytest.raises(redis.exceptions.ResponseError):  # WRONGTYPE
            cache._cache.get(key, None)  # type: ignore[attr-defined]
        assert cache.get("kept-after-error") == "fine"
        conn.send_command("CLIENT", "ID")
        assert conn.read_response() == client_id  # the same connection
    finally:
        client.delete(key)
