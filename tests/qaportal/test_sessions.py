"""Sessions kept per process, confirmed by the request's first statement (qaportal/sessions.py).

A process keeps the sessions it read from Redis and uses them without reading Redis
again; a logout, flush, key rotation or change made anywhere else (another process,
another thread) takes effect on the very next request: that request is void (nothing it
wrote stays) and answered with a 307 to itself, which is then served with the session
read afresh.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.db import connection, transaction
from django.http import HttpRequest, HttpResponse
from django.test import Client, RequestFactory
from django.test.utils import CaptureQueriesContext

from campaigns.models import Assignment
from campaigns.work.invites import invite_create, invite_token
from qaportal import sessions
from qaportal.cache import DegradingRedisCache
from tests.factories import UserFactory
from tests.helpers import local_pipeline
from tests.infra.conftest import clean_env, run_python

PASSWORD = "correct horse battery"
postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="LISTEN/NOTIFY: PostgreSQL's"
)


@pytest.fixture
def session_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The session keys read from Redis (``cached_db``'s GET or the store's GET + PTTL)."""
    reads: list[str] = []
    get, get_with_ttl = DegradingRedisCache.get, DegradingRedisCache.get_with_ttl

    def counted_get(self, key, default=None, version=None):
        if str(key).startswith(sessions.cached_db.KEY_PREFIX):
            reads.append(str(key))
        return get(self, key, default, version)

    def counted_get_with_ttl(self, key, version=None):
        reads.append(str(key))
        return get_with_ttl(self, key, version)

    monkeypatch.setattr(DegradingRedisCache, "get", counted_get)
    monkeypatch.setattr(DegradingRedisCache, "get_with_ttl", counted_get_with_ttl)
    return reads


@pytest.fixture(autouse=True)
def nothing_kept() -> Iterator[None]:
    """Each test starts with no kept session (as a new connection would)."""
    sessions._thread.kept.clear()
    sessions._thread.raw = None
    yield
    sessions._thread.kept.clear()
    sessions._thread.raw = None


def _signed_in() -> Client:
    user: User = UserFactory(username="alice")  # type: ignore[assignment]
    user.set_password(PASSWORD)
    user.save()
    client = Client()
    response = client.post("/accounts/login/", {"username": "alice", "password": PASSWORD})
    assert response.status_code == 302
    return client


def _session_key(client: Client) -> str:
    return client.cookies[settings.SESSION_COOKIE_NAME].value


def _log_out_in_another_process(client: Client) -> None:
    """POST /logout/ with ``client``'s session cookie, from a process of its own."""
    code = (
        "import django; django.setup()\n"
        "from django.test import Client\n"
        "c = Client()\n"
        f"c.cookies[{settings.SESSION_COOKIE_NAME!r}] = {_session_key(client)!r}\n"
        "print(c.post('/accounts/logout/').status_code)\n"
    )
    env = clean_env(
        DJANGO_SETTINGS_MODULE="tests.settings",
        DATABASE_URL=_database_url(),
        REDIS_URL=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/1"),
        PYTEST_XDIST_WORKER=settings.TEST_WORKER,
    )
    if "PYTEST_XDIST_WORKER" not in os.environ:
        env.pop("PYTEST_XDIST_WORKER")
    result = run_python(code, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split()[-1] == "302", result.stdout


def _database_url() -> str:
    d = connection.settings_dict
    return (
        f"postgres://{d['USER']}:{d['PASSWORD'] or ''}@{d['HOST']}:{d['PORT'] or 5432}/{d['NAME']}"
    )


def _in_another_thread(work: Callable[[], None]) -> None:
    """``work`` in a thread of its own (its own database connection), to its end."""
    failed: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:
            failed.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(60)
    assert not thread.is_alive()
    assert not failed, failed


def _served(client: Client, method: str, url: str) -> tuple[list[int], HttpResponse]:
    """The statuses of ``method url`` and of the 307s it may be answered with (a change
    the process read before the request used its session needs none), and the last
    response."""
    statuses: list[int] = []
    for _ in range(3):
        response = getattr(client, method)(url)
        statuses.append(response.status_code)
        if response.status_code != 307:
            return statuses, response
        assert response["Location"] == url
        assert response["Cache-Control"] == "no-store"
        assert settings.SESSION_COOKIE_NAME not in response.cookies  # nothing saved or set
    raise AssertionError(statuses)


# --- Kept, and read again when they may have changed -------------------------------------


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_a_kept_session_is_used_without_reading_redis(session_reads: list[str]) -> None:
    client = _signed_in()
    assert client.get("/").status_code == 200
    first = len(session_reads)
    assert first >= 1
    for _ in range(3):
        assert client.get("/").status_code == 200
    assert len(session_reads) == first  # no Redis read after the first


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_a_request_confirms_its_kept_session_with_its_own_first_statement() -> None:
    client = _signed_in()
    assert client.get("/").status_code == 200
    with CaptureQueriesContext(connection) as kept:
        assert client.get("/").status_code == 200
    assert sessions._thread.kept  # it was used
    assert not sessions._thread.unconfirmed  # and confirmed ...
    assert [q for q in kept.captured_queries if q["sql"].strip() == "SELECT 1"] == []  # so


@pytest.mark.django_db(transaction=True)
def test_off_by_setting_every_request_reads_redis(settings, session_reads: list[str]) -> None:
    settings.SESSIONS_IN_PROCESS = False
    client = _signed_in()
    assert client.get("/").status_code == 200
    first = len(session_reads)
    assert client.get("/").status_code == 200
    assert len(session_reads) == first + 1
    assert not sessions._thread.kept


ON_SQLITE = """
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0, interactive=False)
from django.contrib.auth.models import User
from django.test import Client
from qaportal import sessions
from qaportal.cache import DegradingRedisCache
reads = []
get = DegradingRedisCache.get
def counted(self, key, default=None, version=None):
    if str(key).startswith(sessions.cached_db.KEY_PREFIX):
        reads.append(key)
    return get(self, key, default, version)
DegradingRedisCache.get = counted
User.objects.create_user("alice", password="pw")
client = Client()
assert client.post("/accounts/login/", {"username": "alice", "password": "pw"}).status_code == 302
before = len(reads)
statuses = [client.get("/").status_code for _ in range(2)]
print(statuses[0], statuses[1], len(reads) - before, len(sessions._thread.kept))
"""


@pytest.mark.slow(seconds=20)
def test_on_sqlite_nothing_is_kept(tmp_path: Path) -> None:
    """The embedded default (a fresh SQLite file, as ``make run`` has it, in a child
    process: this suite's database is PostgreSQL) reads every session from Redis."""
    env = clean_env(
        DJANGO_SETTINGS_MODULE="tests.settings",
        DATABASE_URL=f"sqlite:///{tmp_path / 'embedded.sqlite3'}",
        REDIS_URL=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/1"),
    )
    result = run_python(ON_SQLITE, env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split()[-4:] == ["200", "200", "2", "0"], result.stdout


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_a_session_is_kept_no_longer_than_redis_keeps_it(
    monkeypatch: pytest.MonkeyPatch, session_reads: list[str]
) -> None:
    client = _signed_in()
    assert client.get("/").status_code == 200
    (until,) = [until for _, until in sessions._thread.kept.values()]
    assert until <= sessions.time.time() + settings.SESSION_COOKIE_AGE + 1
    first = len(session_reads)
    monkeypatch.setattr(sessions.time, "time", lambda: until + 1)
    assert client.get("/").status_code == 200
    assert len(session_reads) == first + 1


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_a_new_database_connection_keeps_nothing_from_the_old(session_reads: list[str]) -> None:
    client = _signed_in()
    assert client.get("/").status_code == 200
    first = len(session_reads)
    connection.close()  # as CONN_MAX_AGE or an error does
    assert client.get("/").status_code == 200
    assert len(session_reads) == first + 1


# --- A logout elsewhere takes effect at once ---------------------------------------------


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_logout_in_another_process_ends_the_session_here_at_once() -> None:
    client = _signed_in()
    assert client.get("/").status_code == 200  # kept here
    _log_out_in_another_process(client)
    statuses, response = _served(client, "get", "/")
    assert statuses in ([302], [307, 302])
    assert response["Location"].startswith("/accounts/login/")


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_logout_in_another_thread_ends_the_session_here_at_once() -> None:
    client = _signed_in()
    assert client.get("/").status_code == 200
    key = _session_key(client)

    def log_out() -> None:
        other = Client()
        other.cookies[settings.SESSION_COOKIE_NAME] = key
        assert other.post("/accounts/logout/").status_code == 302

    _in_another_thread(log_out)
    statuses, _response = _served(client, "get", "/")
    assert statuses in ([302], [307, 302])


@pytest.fixture
def worker_client(requester) -> tuple[Client, str, str]:
    """A worker who joined through an invite, with their stage's page and accept URLs."""
    campaign, _writing, _ = local_pipeline(requester, slug="kept-sessions", topics=("a", "b"))
    invite = invite_create(campaign=campaign, created_by=requester, expires_in=timedelta(days=1))
    client = Client()
    joined = client.post(f"/work/i/{invite_token(invite=invite)}/")
    assert joined.status_code == 302
    return client, joined["Location"], f"{joined['Location']}accept/"


def _after_the_next_session_read(
    monkeypatch: pytest.MonkeyPatch, work: Callable[[], None]
) -> list[bool]:
    """Run ``work`` (in another thread) right after the next request has read its
    session from this process's keeping, before its first statement: the race."""
    done: list[bool] = []
    load = sessions.SessionStore.load

    def load_then_work(self: sessions.SessionStore) -> dict[str, Any]:
        data = load(self)
        if not done and sessions._thread.unconfirmed:
            done.append(True)
            _in_another_thread(work)
        return data

    monkeypatch.setattr(sessions.SessionStore, "load", load_then_work)
    return done


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_a_worker_flushed_elsewhere_during_an_accept_takes_no_place(
    worker_client, monkeypatch: pytest.MonkeyPatch
) -> None:
    client, stage_url, accept_url = worker_client
    assert client.get(stage_url).status_code == 200  # kept here
    key = _session_key(client)

    def flush() -> None:
        store = sessions.SessionStore(key)
        store.load()
        store.flush()

    raced = _after_the_next_session_read(monkeypatch, flush)
    before = Assignment.objects.count()
    statuses, _response = _served(client, "post", accept_url)
    assert raced  # the accept read the kept session, then the flush committed
    assert statuses == [307, 403]  # its transaction void; then no worker
    assert Assignment.objects.count() == before


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_a_worker_flushed_elsewhere_before_an_accept_takes_no_place(worker_client) -> None:
    client, stage_url, accept_url = worker_client
    assert client.get(stage_url).status_code == 200
    key = _session_key(client)

    def flush() -> None:
        store = sessions.SessionStore(key)
        store.load()
        store.flush()

    _in_another_thread(flush)
    before = Assignment.objects.count()
    statuses, _ = _served(client, "post", accept_url)
    assert statuses in ([403], [307, 403])
    assert Assignment.objects.count() == before


@postgresql_only
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("race", [False, True])
def test_a_session_changed_elsewhere_is_read_again(
    worker_client, requester, monkeypatch: pytest.MonkeyPatch, race: bool
) -> None:
    client, stage_url, _ = worker_client
    assert client.get(stage_url).status_code == 200
    key = _session_key(client)
    other_campaign, other_stage, _ = local_pipeline(requester, slug="kept-2", topics=("c",))
    invite = invite_create(
        campaign=other_campaign, created_by=requester, expires_in=timedelta(days=1)
    )

    def join_there() -> None:  # the same browser, served by another thread
        other = Client()
        other.cookies[settings.SESSION_COOKIE_NAME] = key
        assert other.post(f"/work/i/{invite_token(invite=invite)}/").status_code == 302

    if race:
        _after_the_next_session_read(monkeypatch, join_there)
    else:
        _in_another_thread(join_there)
    statuses, _ = _served(client, "get", f"/work/s/{other_stage.pk}/")
    assert statuses == [307, 200] if race else statuses in ([200], [307, 200])
    assert client.get(stage_url).status_code == 200  # the first worker still


# --- The middleware's rules, with views of its own ---------------------------------------


def _kept_request(client: Client) -> HttpRequest:
    request = RequestFactory().get("/somewhere/?a=1")
    request.COOKIES[settings.SESSION_COOKIE_NAME] = _session_key(client)
    return request


def _middleware(view: Callable[[HttpRequest], HttpResponse]) -> sessions.SessionMiddleware:
    def get_response(request: HttpRequest) -> HttpResponse:
        assert request.session.get("_auth_user_id")  # reads it
        return view(request)

    return sessions.SessionMiddleware(get_response)


def _marker_row(key: str) -> None:
    Session.objects.create(
        session_key=key, session_data="", expire_date="2099-01-01T00:00:00+00:00"
    )


@postgresql_only
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("first_statement", ["none", "autocommit write", "atomic write"])
def test_a_void_request_leaves_nothing_written(first_statement: str) -> None:
    client = _signed_in()
    assert client.get("/").status_code == 200
    key = _session_key(client)
    ran: list[str] = []

    def view(request: HttpRequest) -> HttpResponse:
        ran.append(first_statement)
        if len(ran) == 2:  # the session read; now a logout elsewhere, before any statement
            _in_another_thread(log_out)
        if first_statement == "autocommit write":
            _marker_row("marker-autocommit-0000000000000000")
        elif first_statement == "atomic write":
            with transaction.atomic():
                _marker_row("marker-atomic-000000000000000000000")
        return HttpResponse("ok")

    def log_out() -> None:
        other = Client()
        other.cookies[settings.SESSION_COOKIE_NAME] = key
        assert other.post("/accounts/logout/").status_code == 302

    middleware = _middleware(view)
    assert middleware(_kept_request(client)).status_code == 200  # the kept session
    Session.objects.filter(session_key__startswith="marker-").delete()
    response = middleware(_kept_request(client))
    assert ran == [first_statement, first_statement]  # the view ran with the kept session
    assert response.status_code == 307
    assert response["Location"] == "/somewhere/?a=1"
    assert not Session.objects.filter(session_key__startswith="marker-").exists()
    assert not Session.objects.filter(session_key=key).exists()
