"""Caddy's own CPU per request, by setting: deploy/Caddyfile in front of two gunicorn
sync nodes (2 workers each, as ``worker_cycles.py --proxy``) that answer at once.

    python3 bench/proxy_cpu_bench.py                      # every variant, 3 rounds x 6 s
    python3 bench/proxy_cpu_bench.py --variants compose,before --rounds 5

The nodes serve a fixed WSGI app (below: a 7.7 KB page and 302s with the response
headers qaportal's pages carry), so the app costs next to nothing and the load
generator (bench/loadgen.py's client, K simulated workers doing POST -> GET -> POST,
the worker cycle's shape) reaches the proxy's own limits. Each variant starts its own
Caddy; the variants alternate, in reversed order every other round, and Caddy's CPU
(utime + stime of its process, /proc) is divided by the requests it carried. The
machine is shared: compare the variants of one run, not runs.

Variants (``compose`` is what docker-compose.yml's proxy service runs):

    before      the Caddyfile's settings before 29 Nov 2026: the access log, Go's
                defaults (GOMAXPROCS = every core, GOGC=100), a new client connection
                per request (Connection: close)
    keepalive   as before, the client's connection kept (a browser's)
    compose     keepalive, with compose's GOMAXPROCS=1 and GOGC=400
    log-off     compose with CADDY_ACCESS_LOG=off
    gzip        compose, the client accepting gzip (the page compressed, as for browsers)

Only loopback traffic; every loop is bounded in time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import loadgen  # noqa: E402
from worker_cycles import (  # noqa: E402
    HOST,
    ROOT,
    Server,
    caddy_env,
    free_port,
    log,
    proc_cpu,
)

# --- the upstream app (gunicorn imports this module: proxy_cpu_bench:application) ----

PAGE = (
    b"<!doctype html><html><head><title>task</title></head><body>"
    + b"<p>lorem ipsum dolor sit amet</p>" * 230
    + b"</body></html>"
)
HEADERS = [
    ("Content-Type", "text/html; charset=utf-8"),
    ("X-Frame-Options", "DENY"),
    ("Vary", "Cookie"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "same-origin"),
    ("Cross-Origin-Opener-Policy", "same-origin"),
    (
        "Content-Security-Policy",
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "frame-ancestors 'none'",
    ),
    ("X-Request-ID", "0123456789abcdef0123456789abcdef"),
    ("Cache-Control", "private, no-store"),
    ("Set-Cookie", "csrftoken=abcdefghijklmnopqrstuvwxyz012345; Path=/; SameSite=Lax"),
]


def application(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    if environ["REQUEST_METHOD"] == "POST":
        environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        start_response("302 Found", [*HEADERS, ("Location", "/page/"), ("Content-Length", "0")])
        return [b""]
    start_response("200 OK", [*HEADERS, ("Content-Length", str(len(PAGE)))])
    return [PAGE]


# --- variants -------------------------------------------------------------------------

GO_DEFAULTS = {"GOMAXPROCS": "", "GOGC": ""}  # empty: unset, Go's own defaults
VARIANTS: dict[str, dict[str, Any]] = {
    "before": {"env": {**GO_DEFAULTS, "CADDY_ACCESS_LOG": "on"}, "keep_alive": False},
    "keepalive": {"env": {**GO_DEFAULTS, "CADDY_ACCESS_LOG": "on"}, "keep_alive": True},
    "compose": {"env": {}, "keep_alive": True},
    "log-off": {"env": {"CADDY_ACCESS_LOG": "off"}, "keep_alive": True},
    "gzip": {"env": {}, "keep_alive": True, "headers": {"Accept-Encoding": "gzip"}},
}


def caddy(tmp: Path, name: str, port: int, nodes: list[int], env: dict[str, str]) -> Server:
    exe = shutil.which("caddy")
    if exe is None:
        raise SystemExit("needs caddy (apt-get install caddy)")
    folder = tmp / f"caddy-{name}"
    folder.mkdir(exist_ok=True)
    proxy_env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        **caddy_env(folder, port, nodes),
    }
    for key, value in env.items():
        if value:
            proxy_env[key] = value
        else:
            proxy_env.pop(key, None)
    cmd = [exe, "run", "--config", str(ROOT / "deploy" / "Caddyfile"), "--adapter", "caddyfile"]
    return Server(f"caddy-{name}", cmd, proxy_env, folder, tmp / f"caddy-{name}.log", port)


async def load(
    port: int, workers: int, seconds: float, keep_alive: bool, headers: dict[str, str] | None
) -> int:
    clients = [loadgen.Client(HOST, port, 10.0, keep_alive=keep_alive) for _ in range(workers)]
    deadline = time.perf_counter() + seconds
    done = 0

    async def worker(client: loadgen.Client) -> None:
        nonlocal done
        try:
            while time.perf_counter() < deadline:
                await client.request("POST", "/accept/", form={"csrfmiddlewaretoken": "x" * 64})
                await client.request(
                    "GET", "/page/?workerId=A1B2C3D4&assignmentId=3XYZ", headers=headers
                )
                await client.request("POST", "/submit/", form={"answer": "y" * 200})
                done += 3
        finally:
            await client.close()

    await asyncio.gather(*(worker(c) for c in clients))
    return done


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=6.0, help="measured seconds per slice")
    p.add_argument("--workers", type=int, default=10, help="simulated workers (K)")
    args = p.parse_args()
    names = [n for n in args.variants.split(",") if n]
    unknown = set(names) - set(VARIANTS)
    if unknown:
        raise SystemExit(f"unknown variants {sorted(unknown)}; known: {sorted(VARIANTS)}")
    tmp = Path(tempfile.mkdtemp(prefix="qaportal-proxy-cpu-"))
    gunicorn = ROOT / ".venv" / "bin" / "gunicorn"
    nodes: list[Server] = []
    results: dict[str, list[float]] = {n: [] for n in names}
    try:
        for n in (1, 2):
            port = free_port()
            cmd = [str(gunicorn), "proxy_cpu_bench:application", "--chdir", str(BENCH)]
            cmd += ["--bind", f"{HOST}:{port}", "--workers", "2", "--log-level", "warning"]
            nodes.append(Server(f"node{n}", cmd, dict(os.environ), BENCH, tmp / f"n{n}.log", port))
        for node in nodes:
            node.wait_ready("/")
        port = free_port()  # each variant's Caddy in turn, stopped before the next
        for rnd in range(args.rounds):
            for name in names if rnd % 2 == 0 else names[::-1]:
                v = VARIANTS[name]
                proxy = caddy(tmp, name, port, [n.port for n in nodes], v["env"])
                try:
                    proxy.wait_ready("/")
                    headers = v.get("headers")
                    asyncio.run(load(proxy.port, args.workers, 2.0, v["keep_alive"], headers))
                    cpu0, t0, load0 = proc_cpu(proxy.proc.pid), time.time(), os.getloadavg()[0]
                    n_req = asyncio.run(
                        load(proxy.port, args.workers, args.seconds, v["keep_alive"], headers)
                    )
                    used = proc_cpu(proxy.proc.pid) - cpu0
                    wall = time.time() - t0
                finally:
                    proxy.stop()
                results[name].append(used / n_req * 1e6)
                log(
                    f"round {rnd + 1} {name:10s} {n_req / wall:7.1f} requests/s, "
                    f"Caddy {results[name][-1]:6.1f} us CPU per request (load {load0:.1f})"
                )
    finally:
        for node in nodes:
            node.stop()
    print("\nvariant     Caddy CPU per request (median; all rounds), us; per 3-request cycle, ms")
    for name, values in results.items():
        med = statistics.median(values)
        runs = " ".join(f"{x:.0f}" for x in values)
        print(f"{name:10s}  {med:6.1f}  ({runs})  {3 * med / 1000:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
