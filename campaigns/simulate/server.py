"""An in-process HTTP server for the simulator: the real WSGI app on 127.0.0.1."""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Any

from django.contrib.staticfiles.handlers import StaticFilesHandler
from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
from django.core.wsgi import get_wsgi_application


class _QuietHandler(WSGIRequestHandler):
    """No access log: the simulator counts statuses itself."""

    def log_message(self, format: str, *args: Any) -> None:
        return


class LocalServer:
    """``with LocalServer() as url:`` serves qaportal (and its static files, from the
    finders, as ``runserver`` does) on a free 127.0.0.1 port in a daemon thread.

    Each request runs in its own thread and closes its database connections at
    the end (``ThreadedWSGIServer``), so the data the caller committed is what the
    pages see: tests need ``django_db(transaction=True)``.
    """

    def __init__(self) -> None:
        self._server: ThreadedWSGIServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> str:
        server = ThreadedWSGIServer(("127.0.0.1", 0), _QuietHandler, allow_reuse_address=False)
        server.set_app(StaticFilesHandler(get_wsgi_application()))
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, name="simulate-crowd-server", daemon=True
        )
        self._thread.start()
        return f"http://127.0.0.1:{server.server_address[1]}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = self._thread = None

    def __enter__(self) -> str:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
