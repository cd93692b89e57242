"""A counting middleware for ``simulate_bench.py`` (``SIMBENCH_COUNT_QUERIES=1``): per kind
of request (method and path, numbers as ``N``), how many, their queries, the process's
CPU time and the wall time spent in the rest of the stack (the database's share is the
difference). Benchmarks only: it turns on Django's query log for the request."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from django.db import connection

# "GET /work/a/N/" -> (requests, queries, CPU seconds, wall seconds)
STATS: dict[str, tuple[int, int, float, float]] = {}
_NUMBER = re.compile(r"/\d+(?=/)")


class CountQueries:
    def __init__(self, get_response: Callable[[Any], Any]) -> None:
        self.get_response = get_response

    def __call__(self, request: Any) -> Any:
        key = f"{request.method} {_NUMBER.sub('/N', request.path)}"
        before = len(connection.queries_log)
        forced = connection.force_debug_cursor
        connection.force_debug_cursor = True
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            return self.get_response(request)
        finally:
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            connection.force_debug_cursor = forced
            n, queries, cpu_s, wall_s = STATS.get(key, (0, 0, 0.0, 0.0))
            queries += len(connection.queries_log) - before
            STATS[key] = (n + 1, queries, cpu_s + cpu, wall_s + wall)
