"""Work a web process would otherwise do on its first request, done at start-up."""

from __future__ import annotations

from django.urls import get_resolver

from qaportal.celery import app


def process_warm_up() -> None:
    """Build the URL resolver's reverse map (``reverse()``'s first call builds it: some
    200 ms) and load Celery's result backend and broker transport (loaded on the first
    task sent: some 100 ms). Opens no connection: a broker that is down does not stop a
    start."""
    get_resolver().reverse_dict  # noqa: B018 - built on first access
    app.backend  # noqa: B018 - loaded on first access
    connection = app.connection_for_write()
    try:
        connection.transport  # noqa: B018 - the transport class, imported on first access
    finally:
        connection.release()
