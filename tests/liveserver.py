"""The suite's live server (``live_server``: the browser tests, the API fuzz test): Django's
``LiveServerThread``, whose requests are served by threads that are kept and reused, each
keeping its database and cache connections between requests as a gunicorn worker does
(``CONN_MAX_AGE``, Django's ``close_old_connections`` at each request's start and end).

Django's ``ThreadedWSGIServer`` starts a thread for every TCP connection and closes that
thread's database connections when the TCP connection ends: on PostgreSQL, a new backend
process (and its catalog caches filled again), the session's settings and a new Redis
connection with its handshake for every request of a client that closes after each
answer, as the API fuzz test does (one TCP connection per request: see
tests/security/test_api_fuzz.py). Here a TCP connection goes to an idle kept thread, or
to a new one when none is idle (so a browser's kept-alive connections never wait for
each other); every thread closes its own database connections when the server stops,
before the test databases are dropped.
"""

from __future__ import annotations

import queue
import socket
import socketserver
import threading
from typing import Any

from django.core.servers.basehttp import ThreadedWSGIServer
from django.db import connections
from django.test.testcases import LiveServerThread
from pytest_django.live_server_helper import LiveServer


class KeptThreadsWSGIServer(ThreadedWSGIServer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._jobs: queue.SimpleQueue[tuple[socket.socket, Any] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._kept: list[threading.Thread] = []

    @property
    def threads(self) -> tuple[int, int]:
        """(threads kept, of which idle)."""
        with self._lock:
            return len(self._kept), self._idle

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._lock:
            if self._idle:
                self._idle -= 1  # an idle thread takes it
            else:
                thread = threading.Thread(
                    target=self._serve, name=f"live-server-{len(self._kept)}", daemon=True
                )
                self._kept.append(thread)
                thread.start()
        self._jobs.put((request, client_address))

    def _serve(self) -> None:
        for alias, conn in (self.connections_override or {}).items():
            connections[alias] = conn  # as ThreadedWSGIServer does (in-memory SQLite)
        try:
            while (job := self._jobs.get()) is not None:
                request, client_address = job
                try:
                    self.finish_request(request, client_address)
                except Exception:
                    self.handle_error(request, client_address)
                finally:
                    self.shutdown_request(request)
                    with self._lock:
                        self._idle += 1
        finally:
            if not self.connections_override:
                connections.close_all()  # this thread's own

    def close_request(self, request: Any) -> None:
        # The socket only: the thread's database connections stay for its next request.
        socketserver.TCPServer.close_request(self, request)

    def server_close(self) -> None:
        super().server_close()
        with self._lock:
            kept = list(self._kept)
        for _ in kept:
            self._jobs.put(None)
        for thread in kept:
            thread.join(timeout=30)


class KeptThreadsLiveServerThread(LiveServerThread):
    server_class = KeptThreadsWSGIServer


def live_server_start(addr: str) -> LiveServer:
    """pytest-django's ``LiveServer`` on ``addr``, its thread serving with kept threads."""
    server = LiveServer(addr, start=False)
    thread = server.thread
    server.thread = KeptThreadsLiveServerThread(
        thread.host,
        static_handler=thread.static_handler,
        connections_override=thread.connections_override,
        port=thread.port,
    )
    server.thread.daemon = True
    server.start()
    return server
