"""The simulator's browsers call the app in process (``WSGITransport``): cookies,
redirects and answers as over HTTP; on PostgreSQL the run's sessions commit without
waiting for the disk, and get their setting back at the end; what was there before the
run is out of the garbage collector's sight during it."""

from __future__ import annotations

import gc

import pytest
from django.db import connection

from campaigns.platforms.publishing import campaign_start
from campaigns.simulate import simulate_crowd
from campaigns.simulate.browser import Browser
from campaigns.simulate.server import local_app


def _app(environ, start_response):
    """Sets a cookie, redirects on the site and off it, echoes what it was sent."""
    path, method = environ["PATH_INFO"], environ["REQUEST_METHOD"]
    if path == "/login":
        start_response("302 Found", [("Location", "/home"), ("Set-Cookie", "sid=abc; Path=/")])
        return [b""]
    if path == "/away":
        start_response("302 Found", [("Location", "https://example.org/done?cc=X")])
        return [b""]
    if path == "/boom":
        raise RuntimeError("the app raised")
    body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    text = f"{method} {path} cookie={environ.get('HTTP_COOKIE', '')} body={body.decode()}"
    start_response("404 Not Found" if path == "/missing" else "200 OK", [])
    return [text.encode()]


def test_cookies_redirects_and_statuses_as_over_http():
    browser = Browser(base_url="http://127.0.0.1", app=_app)
    page = browser.post("/login", {"a": ["1"]}, csrf="t", referer="/")
    # A POST answered by a redirect goes on as a GET, with the cookie just set.
    assert (page.status, page.path, page.method) == (200, "/home", "POST")
    assert page.text == "GET /home cookie=sid=abc body="
    assert browser.get("/echo").text == "GET /echo cookie=sid=abc body="
    assert browser.post("/echo", {"b": ["2"]}, csrf="t", referer="/").text.endswith(
        "body=b=2&csrfmiddlewaretoken=t"
    )
    away = browser.get("/away")
    assert (away.offsite, away.status, away.url) == (True, 302, "https://example.org/done?cc=X")
    assert browser.get("/missing").status == 404
    assert browser.get("/boom").status == 500
    # Six pages, seven requests: the POST's redirect to /home is a request of its own;
    # /away's off-site target is not requested.
    assert (browser.pages, browser.requests) == (6, 7)


@pytest.mark.django_db(transaction=True)
def test_the_real_app_in_process():
    browser = Browser(base_url="http://127.0.0.1", app=local_app())
    assert browser.get("/healthz").status == 200


@pytest.mark.django_db(transaction=True)
def test_commits_unsynced_and_no_health_pings_during_a_run_only(mintaka_campaign, monkeypatch):
    assert connection.settings_dict["CONN_HEALTH_CHECKS"]  # as qaportal's settings have it
    # The suite's own connections commit unsynced (tests/settings.py); this test's starts
    # from the server's default, as the app's connections do.
    monkeypatch.delitem(connection.settings_dict["OPTIONS"], "options", raising=False)
    connection.close()
    campaign = campaign_start(campaign=mintaka_campaign(stages=1), to_state="live")
    seen: list[tuple[str, bool]] = []

    def requester(campaign) -> bool:
        with connection.cursor() as cursor:
            cursor.execute("SHOW synchronous_commit")
            seen.append((cursor.fetchone()[0], getattr(connection, "health_check_enabled")))  # noqa: B009
        frozen.append(gc.get_freeze_count())
        return False

    frozen: list[int] = []
    assert gc.get_freeze_count() == 0
    result = simulate_crowd(campaign=campaign, workers=2, seed=1, requester=requester)
    assert result.ok, "\n".join(result.lines())
    assert seen == [("off", False)]
    assert frozen[0] > 1000  # the set-up's objects: modules, settings, the URLconf
    assert gc.get_freeze_count() == 0  # handed back to the collector
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone()[0] == "on"
    assert getattr(connection, "health_check_enabled")  # noqa: B009 (not in the stubs)
    assert connection.settings_dict["CONN_HEALTH_CHECKS"]


def _cookie_app(environ, start_response):
    """Sets, changes, scopes and deletes cookies; echoes the Cookie header it was sent."""
    path = environ["PATH_INFO"]
    headers = {
        "/set": [("Set-Cookie", "a=1; Path=/")],
        "/change": [("Set-Cookie", "a=2; Path=/")],
        "/scoped": [("Set-Cookie", "b=3; Path=/only")],
        "/drop": [
            ("Set-Cookie", "a=; Path=/; Max-Age=0"),
            ("Set-Cookie", "b=; Path=/only; Max-Age=0"),
        ],
    }.get(path, [])
    start_response("200 OK", headers)
    return [environ.get("HTTP_COOKIE", "").encode()]


def test_the_cookie_header_follows_every_change_of_the_jar():
    """The transport keeps the Cookie header it built while the jar holds still: each
    Set-Cookie (new, changed, deleted) and each path-scoped cookie is seen as a browser
    would see it."""
    browser = Browser(base_url="http://127.0.0.1", app=_cookie_app)
    assert browser.get("/echo").text == ""
    browser.get("/set")
    assert [browser.get("/echo").text, browser.get("/other").text] == ["a=1", "a=1"]
    browser.get("/change")
    assert browser.get("/echo").text == "a=2"
    browser.get("/scoped")
    assert browser.get("/echo").text == "a=2"
    assert browser.get("/only/here").text == "b=3; a=2"
    assert browser.get("/echo").text == "a=2"
    browser.get("/drop")
    assert [browser.get("/echo").text, browser.get("/only/here").text] == ["", ""]
