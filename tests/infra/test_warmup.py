"""The web process's start-up warm-up: it loads what the first request would, and opens
no connection (a broker that is down does not stop a start)."""

from __future__ import annotations

import socket

import pytest
from kombu.exceptions import OperationalError

from qaportal.celery import app
from qaportal.warmup import process_warm_up


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_warm_up_opens_no_broker_connection(monkeypatch):
    down = f"redis://127.0.0.1:{_closed_port()}/0"
    monkeypatch.setattr(app.conf, "broker_url", down)
    monkeypatch.setattr(app.conf, "broker_write_url", down)
    connection = app.connection_for_write()
    with pytest.raises(OperationalError):  # the broker is down indeed
        connection.ensure_connection(max_retries=1, interval_start=0)
    connection.release()

    process_warm_up()
