"""Web requests and jobs get their own PostgreSQL statement_timeout on every new
connection: a runaway query is cancelled instead of holding a web worker."""

from __future__ import annotations

import pytest
from django.db import OperationalError, connection

from qaportal.db_timeout import (
    statement_timeout_install,
    statement_timeout_seconds,
    statement_timeout_uninstall,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _uninstalled():
    yield
    statement_timeout_uninstall()


def _fresh_timeout() -> tuple[str, object]:
    fresh = connection.copy()
    try:
        with fresh.cursor() as cursor:
            cursor.execute("SHOW statement_timeout")
            shown = cursor.fetchone()[0]
            try:
                cursor.execute("SELECT pg_sleep(1.5)")
                slept: object = True
            except OperationalError as exc:
                slept = exc
        return shown, slept
    finally:
        fresh.close()


def test_web_and_job_timeouts_on_new_connections(settings):
    assert connection.vendor == "postgresql"  # SQLite has no statement timeout
    settings.DB_STATEMENT_TIMEOUT_WEB_SECONDS = 1
    settings.DB_STATEMENT_TIMEOUT_JOB_SECONDS = 5
    statement_timeout_install(role="web")
    shown, slept = _fresh_timeout()
    assert shown == "1s"
    assert isinstance(slept, OperationalError)
    assert "statement timeout" in str(slept)

    statement_timeout_install(role="job")
    shown, slept = _fresh_timeout()
    assert (shown, slept) == ("5s", True)


def test_defaults_and_off(settings):
    assert statement_timeout_seconds(role="web") == 30
    assert statement_timeout_seconds(role="job") == 300
    settings.DB_STATEMENT_TIMEOUT_WEB_SECONDS = 0
    statement_timeout_install(role="web")
    shown, slept = _fresh_timeout()
    assert (shown, slept) == ("0", True)
    with pytest.raises(ValueError, match="role is one of"):
        statement_timeout_seconds(role="cron")
