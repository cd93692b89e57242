"""Logs as JSON lines, each with the request id of the request it belongs to.

A request's id is its ``X-Request-ID`` header when a proxy (or client) sent a sane
one, else a new one; ``RequestIdMiddleware`` keeps it for the request's thread and
answers it in ``X-Request-ID``. A Celery task sent while it is set carries it in the
message's headers, and the worker logs the task's lines under the same id: a slow
export or a failed payment can be followed from the click to the worker.

``JsonFormatter`` writes one JSON object a line (time, level, logger, message,
request_id, exception); the values of ``workerId``, ``assignmentId`` and
``PROLIFIC_PID`` in any URL a message holds are redacted, as in gunicorn's access log.
``LOG_FORMAT`` picks ``json`` (the default with ``DEBUG`` off) or ``plain``.
"""

from __future__ import annotations

import contextvars
import json
import logging
import os
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from django.http import HttpRequest, HttpResponse

from qaportal.gunicorn_logging import redact

HEADER = "X-Request-ID"
TASK_HEADER = "qaportal_request_id"
_META_KEY = "HTTP_" + HEADER.upper().replace("-", "_")
_SANE = re.compile(r"[A-Za-z0-9._:-]{8,64}")

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="")


def request_id_for(sent: str | None) -> str:
    """The id a request is logged under: the one sent, when it is sane, or a new one."""
    if sent and _SANE.fullmatch(sent):
        return sent
    # 128 random bits as 32 hex digits (as ``uuid4().hex``, at a quarter of its CPU).
    return os.urandom(16).hex()


class RequestIdMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # META, not ``request.headers``: building the headers' mapping costs more than
        # the rest of this middleware (HTTP_X_REQUEST_ID is how WSGI spells the header).
        token = request_id.set(request_id_for(request.META.get(_META_KEY)))
        try:
            response = self.get_response(request)
            response[HEADER] = request_id.get()
            return response
        finally:
            request_id.reset(token)


class RequestIdFilter(logging.Filter):
    """Puts the current request id on every record (``record.request_id``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, "request_id", ""):
            record.request_id = request_id.get()
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": redact(record.getMessage()),
            "request_id": getattr(record, "request_id", "") or request_id.get(),
        }
        if record.exc_info:
            entry["exception"] = redact(self.formatException(record.exc_info))
        return json.dumps(entry, ensure_ascii=False, default=str)


# --- Celery: the id travels with the tasks a request sends ------------------------------


def _task_published(headers: dict[str, Any] | None = None, **_: Any) -> None:
    current = request_id.get()
    if current and headers is not None and TASK_HEADER not in headers:
        headers[TASK_HEADER] = current


_task_tokens: dict[str, contextvars.Token[str]] = {}


def _task_starts(task_id: str = "", task: Any = None, **_: Any) -> None:
    """A worker runs a task that a request sent: log it under that request's id (a
    task run in-process, eagerly, keeps the id it already has)."""
    sent = getattr(getattr(task, "request", None), TASK_HEADER, None)
    if sent:
        _task_tokens[task_id] = request_id.set(str(sent))


def _task_ends(task_id: str = "", **_: Any) -> None:
    token = _task_tokens.pop(task_id, None)
    if token is not None:
        request_id.reset(token)


def _celery_handlers_json(logger: logging.Logger | None = None, **_: Any) -> None:
    """Celery sets up its own handlers in a worker: give them ours."""
    from django.conf import settings

    if logger is None or settings.LOG_FORMAT != "json":
        return
    for handler in logger.handlers:
        handler.setFormatter(JsonFormatter())
        handler.addFilter(RequestIdFilter())


def celery_signals_connect() -> None:
    from celery import signals

    signals.before_task_publish.connect(_task_published, weak=False)
    signals.task_prerun.connect(_task_starts, weak=False)
    signals.task_postrun.connect(_task_ends, weak=False)
    signals.after_setup_logger.connect(_celery_handlers_json, weak=False)
    signals.after_setup_task_logger.connect(_celery_handlers_json, weak=False)


# --- Error reporting (sentry-sdk, when SENTRY_DSN is set) --------------------------------


def sentry_before_send(event: dict[str, Any], hint: dict[str, Any]) -> dict[str, Any]:
    """Every event leaves tagged with its request id and without worker ids (their
    values are redacted wherever in the event they appear: URL, query, message, frames)."""
    event.setdefault("tags", {})["request_id"] = request_id.get() or "-"
    scrubbed: dict[str, Any] = json.loads(redact(json.dumps(event, default=str)))
    return scrubbed


def sentry_init(*, dsn: str, environment: str, traces_sample_rate: float) -> None:
    import sentry_sdk
    from sentry_sdk.integrations.celery import CeleryIntegration
    from sentry_sdk.integrations.django import DjangoIntegration

    sentry_sdk.init(
        dsn=dsn,
        environment=environment,
        integrations=[DjangoIntegration(), CeleryIntegration()],
        send_default_pii=False,  # no user names, e-mail or IP addresses, no cookies
        traces_sample_rate=traces_sample_rate,
        before_send=sentry_before_send,  # type: ignore[arg-type]
    )
