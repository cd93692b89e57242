"""Sessions (``SESSION_ENGINE``): ``cached_db``, with each web process keeping the sessions
it has read, confirmed by the request's first SQL statement instead of a Redis read.

Every worker page reads its session, and with ``cached_db`` that is a Redis round trip
on every request (~100 µs of the app's CPU with its wake-up, 12-16 % of a worker
page's). Here a thread keeps the sessions it read from Redis; a request that finds its
session kept uses it without asking Redis, **provisionally**: the request's first SQL
statement on the primary confirms it.

How a change reaches every process at once. Whatever changes or ends a session through
this store (``save`` of a key that existed: login, an invite's join; ``delete``: logout,
``flush``, ``cycle_key``'s old key) sends, after its database and Redis writes, a PostgreSQL
``NOTIFY qaportal_session, '<key>'``. Each thread's primary connection ``LISTEN``\\ s on
that channel before it keeps a session (connection set-up, once per connection).
PostgreSQL signals the listening backends when the NOTIFY commits, before the
committing statement returns, and a signalled backend that is idle sends the
notification before it reads its client's next statement; so the answer to any
statement sent after a change was committed comes after that change's notification on
the same socket (psycopg2 collects it into ``connection.notifies``). A request that used
a kept session therefore reads the notifications that came with its first statement's
answer (``_confirming``, an ``execute_wrapper`` on the primary): if its session is
among them, the session changed before that statement was sent, and the request is
void:

- no statement after that one runs (each raises ``SessionChangedError``), and an open
  transaction is rolled back (``set_rollback``), so nothing the request wrote stays;
- its session is not saved, and the browser gets ``307`` to the same URL (the same
  method and body), which the next request serves with the session read afresh.

The statement that confirms must not commit before its answer is read: one inside a
transaction (``atomic``: it is rolled back) or a ``SELECT`` outside one (it writes
nothing). An autocommit statement that may write is preceded by a ``SELECT 1`` that
confirms the session (one round trip, as the Redis read it replaces). A request that
sends no statement on the primary confirms with a ``SELECT 1`` at its end, before its
response leaves.

A session is kept only when the thread's connection listened before it was read from
Redis and has stayed open since (a new connection starts with nothing kept), and only
outside a transaction (a ``LISTEN`` in one takes effect at its commit, and a backend
in a transaction holds notifications back until it ends); each is kept for at most the
life Redis gives it (its expiry) and read from Redis again after that; at most
``KEPT_PER_THREAD``. Sessions changed or deleted in the database behind the store's
back (``Session.objects…delete()``) are not seen, as ``cached_db``'s Redis copy does
not see them either. Off with ``SESSIONS_IN_PROCESS=0`` (needed behind a pooler that
shares server connections between clients, PgBouncer in transaction mode: ``LISTEN``
needs the client's own connection), on SQLite, without Redis, and outside requests:
``cached_db`` as Django has it.
"""

from __future__ import annotations

import pickle
import threading
import time
from collections import OrderedDict
from typing import Any

from django.conf import settings
from django.contrib.sessions.backends import cached_db
from django.contrib.sessions.middleware import SessionMiddleware as DjangoSessionMiddleware
from django.core.exceptions import BadRequest
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.http import HttpRequest, HttpResponse

from qaportal.prepared import prepared_select

CHANNEL = "qaportal_session"
KEPT_PER_THREAD = 10_000
_IDLE = 0  # psycopg2's TRANSACTION_STATUS_IDLE


class SessionChangedError(BadRequest):
    """The session a request used from its process's copy changed or ended before the
    request's first statement: the request is answered with a 307 to itself. (A
    ``BadRequest``: raised outside a view, Django answers 400 with a warning instead of
    a 500 with an error, and the middleware's 307 replaces it.)"""


class _Thread(threading.local):
    def __init__(self) -> None:
        self.raw: Any = None  # the DB-API connection whose LISTEN guards ``kept``
        self.kept: OrderedDict[str, tuple[bytes, float]] = OrderedDict()
        self.in_request = False
        self.unconfirmed: set[str] = set()  # kept sessions this request used
        self.stale = False  # ... and it changed before the request's first statement


_thread = _Thread()


def _enabled() -> bool:
    return bool(getattr(settings, "SESSIONS_IN_PROCESS", True))


def _primary_idle_connection(db: Any) -> Any:
    """``db``'s DB-API connection, health-checked and open, if it is PostgreSQL and idle
    outside any transaction; else None. (A notification waiting on a kept connection
    makes the health check read it: ``qaportal.pgbackend``.)"""
    if db.vendor != "postgresql" or db.in_atomic_block:
        return None
    db.close_if_health_check_failed()
    db.ensure_connection()
    raw = db.connection
    if raw is None or raw.closed or not db.autocommit or raw.get_transaction_status() != _IDLE:
        return None
    return raw


def _forget_notified(raw: Any) -> None:
    notifies = raw.notifies
    if not notifies:
        return
    t = _thread
    for note in notifies:
        if note.channel == CHANNEL:
            t.kept.pop(note.payload, None)
            if note.payload in t.unconfirmed:
                t.stale = True
    notifies.clear()


def _confirming(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
    """``execute_wrapper`` on the primary while a request's kept session is unconfirmed:
    the statement's answer brings every change committed before it was sent."""
    t = _thread
    db = context["connection"]
    if t.stale:
        # A void request: its answer will be the 307 whatever it reads, but it writes
        # nothing more (the middlewares after its view may still read, e.g. the user).
        if not db.in_atomic_block and _reads_only(sql):
            return execute(sql, params, many, context)
        raise SessionChangedError("The session changed during this request.")
    if not t.unconfirmed:
        return execute(sql, params, many, context)
    if db.connection is not t.raw:  # a new connection: it did not listen before
        _void(db)
    if not db.in_atomic_block and not _reads_only(sql):
        _confirm(db)  # an autocommit write commits as it runs: confirm before it
        return execute(sql, params, many, context)
    result = execute(sql, params, many, context)
    _forget_notified(db.connection)
    if t.stale:
        _void(db)
    _confirmed(db)
    return result


def _reads_only(sql: str) -> bool:
    head = sql.lstrip()[:7].upper()
    if head.startswith("EXECUTE"):
        return prepared_select(sql)
    return head.startswith("SELECT") and "NEXTVAL(" not in sql.upper()


def _void(db: Any) -> None:
    _thread.stale = True
    for key in _thread.unconfirmed:
        _thread.kept.pop(key, None)
    if db.in_atomic_block:
        db.set_rollback(True)
    raise SessionChangedError("The session changed before this request's first statement.")


def _confirmed(db: Any) -> None:
    _thread.unconfirmed.clear()
    if _confirming in db.execute_wrappers:
        db.execute_wrappers.remove(_confirming)


def _confirm(db: Any) -> None:
    """Confirm the request's kept session with a round trip of its own (``SELECT 1``,
    which ``_confirming`` confirms by)."""
    with db.cursor() as cursor:
        cursor.execute("SELECT 1")


def _notify_changed(session_key: str) -> None:
    """Tell every process that ``session_key`` changed or ended (after the database's and
    Redis's writes: a process that reads it again reads the new one)."""
    _thread.kept.pop(session_key, None)
    db = connections[DEFAULT_DB_ALIAS]
    if db.vendor != "postgresql" or not _enabled():
        return
    with db.cursor() as cursor:
        cursor.execute("SELECT pg_notify(%s, %s)", [CHANNEL, session_key])


class SessionStore(cached_db.SessionStore):
    """``cached_db`` with the thread's kept copies (see the module's docstring)."""

    def load(self) -> dict[str, Any]:
        t = _thread
        key = self.session_key
        store: Any = self  # cached_db's ``_cache``: not in django-stubs
        get_with_ttl = getattr(store._cache, "get_with_ttl", None)
        if not t.in_request or key is None or get_with_ttl is None or not _enabled():
            return super().load()
        db = connections[DEFAULT_DB_ALIAS]
        try:
            raw = _primary_idle_connection(db)
            if raw is not None and raw is not t.raw:
                # A new connection: it listens before anything is kept (set-up, as
                # Django's own SET statements: on the DB-API cursor).
                t.kept.clear()
                t.raw = None
                with db.wrap_database_errors:
                    raw.cursor().execute(f"LISTEN {CHANNEL}")
                t.raw = raw
            elif raw is not None:
                _forget_notified(raw)  # what the health check read
        except DatabaseError:
            t.raw, raw = None, None
            t.kept.clear()
        if raw is None:
            return super().load()
        kept = t.kept.get(key)
        if kept is not None:
            data, until = kept
            if time.time() < until:
                t.unconfirmed.add(key)
                if _confirming not in db.execute_wrappers:
                    db.execute_wrappers.insert(0, _confirming)  # outermost
                return pickle.loads(data)  # noqa: S301 - pickled here
            del t.kept[key]
        data, ttl = get_with_ttl(self.cache_key)
        if data is None:
            return super().load()  # from the database
        if ttl is not None:
            t.kept[key] = (pickle.dumps(data, pickle.HIGHEST_PROTOCOL), time.time() + ttl)
            if len(t.kept) > KEPT_PER_THREAD:
                t.kept.popitem(last=False)
        return data

    def save(self, must_create: bool = False) -> None:
        # A new key was in no process's keeping (only what Redis had is kept).
        new = must_create or self.session_key is None
        super().save(must_create)
        if self.session_key and not new:
            _notify_changed(self.session_key)

    def delete(self, session_key: str | None = None) -> None:
        key = session_key if session_key is not None else self.session_key
        super().delete(session_key)
        if key:
            _notify_changed(key)


class SessionMiddleware(DjangoSessionMiddleware):
    """Django's, with a request's kept session confirmed before its response leaves and
    a request void (a 307 to itself) when that session changed before it. Synchronous
    only (under ASGI Django runs it in a thread, as its database calls are)."""

    sync_capable = True
    async_capable = False

    def __call__(self, request: HttpRequest) -> HttpResponse:
        t = _thread
        t.in_request, t.stale = True, False
        t.unconfirmed.clear()
        try:
            try:
                response: Any = super().__call__(request)
                if t.unconfirmed and not t.stale:
                    _confirm(connections[DEFAULT_DB_ALIAS])  # no statement on the primary
            except SessionChangedError:
                pass
            except DatabaseError:
                if not t.unconfirmed or t.stale:
                    raise
                for key in t.unconfirmed:  # unconfirmed: read afresh on the retry
                    t.kept.pop(key, None)
                t.stale = True
            if t.stale:
                return _retry(request)
            return response
        finally:
            t.in_request, t.stale = False, False
            t.unconfirmed.clear()
            db = connections[DEFAULT_DB_ALIAS]
            if _confirming in db.execute_wrappers:
                db.execute_wrappers.remove(_confirming)

    def process_exception(self, request: HttpRequest, exception: Exception) -> Any:
        if isinstance(exception, SessionChangedError):
            return _retry(request)
        return None

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if _thread.stale:
            return response  # a void request saves nothing and sets no cookie
        return super().process_response(request, response)


def _retry(request: HttpRequest) -> HttpResponse:
    """The same request again (307 keeps the method and the body), with its session read
    afresh: the one it used changed or ended while it was on its way."""
    response = HttpResponse(status=307)
    response["Location"] = request.get_full_path()
    response["Cache-Control"] = "no-store"
    return response
