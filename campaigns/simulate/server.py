"""qaportal's WSGI app for the simulator: ``local_app()`` (what ``simulate_crowd``'s
browsers call in process) and ``LocalServer``, the same app behind a real socket on
127.0.0.1 for a client that needs one."""

from __future__ import annotations

import queue
import socket
import threading
from types import TracebackType
from typing import Any

from django.contrib.staticfiles.handlers import StaticFilesHandler
from django.contrib.staticfiles.storage import ManifestFilesMixin, staticfiles_storage
from django.core.servers.basehttp import WSGIRequestHandler, WSGIServer
from django.core.wsgi import get_wsgi_application
from django.db import connections

# Threads serving requests: more than the simulator's concurrency ever needs at once.
DEFAULT_THREADS = 8


class _QuietHandler(WSGIRequestHandler):
    """No access log: the simulator counts statuses itself."""

    def log_message(self, format: str, *args: Any) -> None:
        return


class _PooledWSGIServer(WSGIServer):
    """Requests served by a fixed pool of threads, each keeping its database connection
    between requests as a gunicorn worker does (``CONN_MAX_AGE``; Django's
    ``close_old_connections`` still drops an old or broken one at each request's start
    and end). Django's ``ThreadedWSGIServer`` starts a thread and opens a new database
    connection for every request: on PostgreSQL, a new backend process each time, which
    cost more than the request itself."""

    def __init__(self, address: tuple[str, int], threads: int) -> None:
        super().__init__(address, _QuietHandler, allow_reuse_address=False)
        self._requests: queue.SimpleQueue[tuple[socket.socket, Any] | None] = queue.SimpleQueue()
        self._threads = [
            threading.Thread(target=self._serve, name=f"simulate-crowd-server-{n}", daemon=True)
            for n in range(threads)
        ]
        for thread in self._threads:
            thread.start()

    def process_request(self, request: Any, client_address: Any) -> None:
        self._requests.put((request, client_address))

    def _serve(self) -> None:
        try:
            while (job := self._requests.get()) is not None:
                request, client_address = job
                try:
                    self.finish_request(request, client_address)
                except Exception:
                    self.handle_error(request, client_address)
                finally:
                    self.shutdown_request(request)
        finally:
            connections.close_all()  # this thread's own connections

    def server_close(self) -> None:
        super().server_close()
        for _ in self._threads:
            self._requests.put(None)
        for thread in self._threads:
            thread.join(timeout=10)


def local_app() -> Any:
    """qaportal's WSGI app as ``LocalServer`` serves it, static files included: from the
    finders as ``runserver`` does, or, with hashed names (``DEBUG`` off; they are not in
    the finders), by the app's WhiteNoise from the collected files, as in production."""
    app = get_wsgi_application()
    return app if isinstance(staticfiles_storage, ManifestFilesMixin) else StaticFilesHandler(app)


class LocalServer:
    """``with LocalServer() as url:`` serves qaportal (and its static files: from the
    finders as ``runserver`` does, or collected with hashed names through WhiteNoise
    when ``DEBUG`` is off) on a free 127.0.0.1 port in a daemon thread.

    Requests are served by a pool of ``threads`` threads that keep their database
    connections until the server stops, and the pages see what the caller committed:
    tests need ``django_db(transaction=True)``.
    """

    def __init__(self, *, threads: int = DEFAULT_THREADS) -> None:
        self.threads = threads
        self._server: _PooledWSGIServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> str:
        server = _PooledWSGIServer(("127.0.0.1", 0), threads=self.threads)
        server.set_app(local_app())
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
