"""CPU and queries per worker request, in process (the WSGI handler, no HTTP, no server).

    . env (as worker_cycles' qaportal: DATABASE_URL, REDIS_URL, SECRET_KEY, DEBUG=0, ...)
    .venv/bin/python bench/worker_pages_cpu.py --config CONFIG_JSON [--cycles 300] [--profile KIND]

``CONFIG_JSON`` is what ``qaportal_setup.py`` prints (invite, stage path, answer form).
One browser joins through the invite, then repeats cycles of the crowd simulator's
requests: stage page GET, accept POST, task page GET, submit POST, thank-you page GET,
as a browser sends them (cookies, the CSRF token read from the page). Reports, per
request kind, the CPU time of the WSGI call (``time.process_time``, this process), the
CPU time of the PostgreSQL backend serving it (from /proc: the server must run on this
machine; coarse, 10 ms ticks, so averaged over many cycles) and the queries it ran.
``--profile KIND[,KIND]`` runs cProfile (CPU time) around those kinds' calls and prints
the top functions; with ``--pyinstrument``, a pyinstrument call tree instead.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import re
import statistics
import sys
import time
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "qaportal.settings")

import django

django.setup()

from django.core.handlers.wsgi import WSGIHandler  # noqa: E402
from django.db import connection  # noqa: E402

CSRF_RE = re.compile(rb'name="csrfmiddlewaretoken" value="([^"]+)"')


class Browser:
    """Cookies, the CSRF token of the last page, and one WSGI call per request."""

    def __init__(self, app: WSGIHandler) -> None:
        self.app = app
        self.cookies: SimpleCookie = SimpleCookie()
        self.csrf = ""

    def call(
        self, method: str, path: str, data: dict[str, str] | None = None
    ) -> tuple[int, dict, bytes]:
        body = urlencode(data or {}).encode()
        environ: dict[str, Any] = {
            "REQUEST_METHOD": method,
            "PATH_INFO": path,
            "SCRIPT_NAME": "",
            "QUERY_STRING": "",
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "8000",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "HTTP_HOST": "127.0.0.1:8000",
            "HTTP_USER_AGENT": "worker_pages_cpu",
            "HTTP_ACCEPT": "text/html",
            "REMOTE_ADDR": "127.0.0.1",
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(body),
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": False,
            "wsgi.multiprocess": True,
            "wsgi.run_once": False,
        }
        if self.cookies:
            environ["HTTP_COOKIE"] = "; ".join(f"{k}={m.value}" for k, m in self.cookies.items())
        if method == "POST":
            environ["CONTENT_TYPE"] = "application/x-www-form-urlencoded"
            environ["CONTENT_LENGTH"] = str(len(body))
            environ["HTTP_ORIGIN"] = "http://127.0.0.1:8000"
            environ["HTTP_REFERER"] = "http://127.0.0.1:8000/"
        status: list[str] = []
        headers: list[tuple[str, str]] = []

        def start_response(s: str, h: list[tuple[str, str]], exc_info: Any = None) -> Any:
            status.append(s)
            headers.extend(h)
            return lambda data: None

        result = self.app(environ, start_response)
        try:
            content = b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close:
                close()
        out: dict[str, str] = {}
        for k, v in headers:
            if k.lower() == "set-cookie":
                self.cookies.load(v)
            out[k.lower()] = v
        m = CSRF_RE.search(content)
        if m:
            self.csrf = m.group(1).decode()
        return int(status[0].split()[0]), out, content


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--config", required=True, help="qaportal_setup.py's JSON line")
    p.add_argument("--cycles", type=int, default=300)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument(
        "--profile",
        default="",
        help="request kinds to profile, comma-separated (stage, accept, page, submit, done)",
    )
    p.add_argument("--profile-lines", type=int, default=45)
    p.add_argument("--sort", default="cumulative")
    p.add_argument(
        "--pyinstrument",
        action="store_true",
        help="profile --profile KIND with pyinstrument (if installed)",
    )
    a = p.parse_args()
    cfg = json.loads(a.config)

    app = WSGIHandler()
    b = Browser(app)
    invite = cfg["invites"][0]
    b.call("GET", invite)
    st, h, _ = b.call("POST", invite, {"csrfmiddlewaretoken": b.csrf})
    assert st == 302, st

    queries = [0]

    def count(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        queries[0] += 1
        return execute(sql, params, many, context)

    cpu: dict[str, list[float]] = {}
    db_cpu: dict[str, float] = {}

    def backend_cpu() -> float:
        """CPU seconds of this connection's PostgreSQL backend (same machine), or 0."""
        if connection.vendor != "postgresql" or connection.connection is None:
            return 0.0
        pid = connection.connection.get_backend_pid()
        try:
            with open(f"/proc/{pid}/stat") as f:
                parts = f.read().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")

    nq: dict[str, int] = {}
    profiler: Any = None
    if a.profile and a.pyinstrument:
        from pyinstrument import Profiler  # a dev tool: pip install pyinstrument

        profiler = Profiler(interval=0.0002, async_mode="disabled")
        profiler.enable, profiler.disable = profiler.start, profiler.stop  # sessions combine
    elif a.profile:
        profiler = cProfile.Profile(time.process_time)

    def req(kind: str, method: str, path: str, data: dict | None = None, ok=(200, 302)):
        queries[0] = 0
        prof = profiler is not None and kind in a.profile.split(",") and measuring
        with connection.execute_wrapper(count):
            if prof:
                profiler.enable()
            d0 = backend_cpu()
            t0 = time.process_time()
            st, h, body = b.call(method, path, data)
            t = time.process_time() - t0
            d = backend_cpu() - d0
            if prof:
                profiler.disable()
        if st not in ok:
            raise SystemExit(
                f"{kind}: {method} {path} -> {st}\n{body[:2000].decode(errors='replace')}"
            )
        if measuring:
            cpu.setdefault(kind, []).append(t * 1000)
            db_cpu[kind] = db_cpu.get(kind, 0.0) + d * 1000
            nq[kind] = queries[0]
        return st, h, body

    stage = cfg["stage_path"]
    for n in range(a.warmup + a.cycles):
        measuring = n >= a.warmup
        req("stage", "GET", stage)
        st, h, _ = req(
            "accept", "POST", stage + "accept/", {"csrfmiddlewaretoken": b.csrf}, ok=(302,)
        )
        page = h["location"]
        aid = re.search(r"/work/a/(\d+)/", page).group(1)  # type: ignore[union-attr]
        req("page", "GET", page)
        data = {k: v.format(id=aid) for k, v in cfg["answer"].items()}
        data["telemetry"] = json.dumps({"keystrokes": 40, "page_ms": 9000, "pastes": []})
        data["csrfmiddlewaretoken"] = b.csrf
        st, h, _ = req("submit", "POST", page, data, ok=(302,))
        req("done", "GET", h["location"])

    print(f"{a.cycles} cycles, load {os.getloadavg()[0]:.2f}")
    print(f"{'kind':8} {'mean ms':>8} {'median':>8} {'p10':>8} {'queries':>8} {'db ms':>8}")
    total = 0.0
    for kind, values in cpu.items():
        values.sort()
        mean = statistics.fmean(values)
        total += mean
        print(
            f"{kind:8} {mean:8.2f} {statistics.median(values):8.2f} "
            f"{values[len(values) // 10]:8.2f} {nq[kind]:8d} {db_cpu[kind] / len(values):8.2f}"
        )
    worker_cycle = sum(statistics.fmean(cpu[k]) for k in ("accept", "page", "submit"))
    worker_db = sum(db_cpu[k] / len(cpu[k]) for k in ("accept", "page", "submit"))
    print(
        f"all five {total:.2f} ms; accept+page+submit "
        f"(worker_cycles' cycle) app {worker_cycle:.2f} ms + db {worker_db:.2f} ms"
    )
    if profiler is not None and a.pyinstrument:
        print(profiler.output_text(unicode=False, color=False, show_all=False))
    elif profiler is not None:
        s = io.StringIO()
        pstats.Stats(profiler, stream=s).sort_stats(a.sort).print_stats(a.profile_lines)
        print(s.getvalue())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
