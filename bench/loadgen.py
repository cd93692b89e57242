"""Closed-loop load generator for worker cycles (accept -> page -> submit).

Standard library only: an asyncio HTTP/1.1 client, a cookie jar per simulated
worker, and per-app drivers that know the URLs and forms. The same runner and the
same client drive both apps; only the driver differs. The client either sends
``Connection: close`` (one connection per request) or, with ``keep_alive``, keeps its
connection as a browser does for as long as the server keeps it: gunicorn's sync
workers close it after every response anyway, a proxy in front of them (Caddy) keeps
it, so only the client's side of a proxy changes.

Every loop here is bounded: a level stops starting cycles at its deadline, every
request has a timeout, and a level gives up after ``max_errors`` failed cycles.
Only loopback addresses are accepted as targets.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import ipaddress
import re
import time
import urllib.parse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

LOOPBACK_ONLY = True


class CycleError(Exception):
    """A cycle that did not complete: wrong status, missing form, timeout."""

    def __init__(self, step: str, message: str) -> None:
        super().__init__(f"{step}: {message}")
        self.step = step


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    set_cookies: list[str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    @property
    def location(self) -> str:
        loc = self.headers.get("location", "")
        return urllib.parse.urlsplit(loc).path + (
            "?" + urllib.parse.urlsplit(loc).query if urllib.parse.urlsplit(loc).query else ""
        )


class Client:
    """One simulated worker's browser: its own cookies, one request at a time."""

    def __init__(
        self, host: str, port: int, timeout: float = 30.0, keep_alive: bool = False
    ) -> None:
        if LOOPBACK_ONLY and not ipaddress.ip_address(host).is_loopback:
            raise ValueError(f"refusing non-loopback target {host}")
        self.host, self.port, self.timeout = host, port, timeout
        self.keep_alive = keep_alive
        self.cookies: dict[str, str] = {}
        self.state: dict[str, Any] = {}  # driver's per-worker state (tokens, URLs)
        # The kept connection (keep_alive only), and how many connections were opened.
        self._conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self.connections = 0

    async def close(self) -> None:
        """Drop the kept connection, if any."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn[1].close()
            with contextlib.suppress(ConnectionError, OSError):
                await conn[1].wait_closed()

    def _store_cookies(self, set_cookies: list[str]) -> None:
        for raw in set_cookies:
            first, *attrs = raw.split(";")
            name, _, value = first.strip().partition("=")
            expired = value in ('""', "") or any(a.strip().lower() in ("max-age=0",) for a in attrs)
            if expired:
                self.cookies.pop(name, None)
            else:
                self.cookies[name] = value

    async def request(
        self,
        method: str,
        path: str,
        form: dict[str, str] | list[tuple[str, str]] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Response:
        return await asyncio.wait_for(self._request(method, path, form, headers), self.timeout)

    async def _request(self, method, path, form, headers) -> Response:
        body = b""
        lines = [
            f"{method} {path} HTTP/1.1",
            f"Host: {self.host}:{self.port}",
            *([] if self.keep_alive else ["Connection: close"]),
            "User-Agent: qaportal-bench/1",
            "Accept: text/html",
        ]
        if self.cookies:
            lines.append("Cookie: " + "; ".join(f"{k}={v}" for k, v in self.cookies.items()))
        if form is not None:
            body = urllib.parse.urlencode(form).encode()
            lines.append("Content-Type: application/x-www-form-urlencoded")
        if method != "GET":
            lines.append(f"Content-Length: {len(body)}")
        for k, v in (headers or {}).items():
            lines.append(f"{k}: {v}")
        raw = ("\r\n".join(lines) + "\r\n\r\n").encode() + body
        reused = self._conn is not None
        try:
            try:
                status_line = await self._send(raw)
            except (ConnectionError, OSError, asyncio.IncompleteReadError):
                if not reused:
                    raise
                status_line = b""
            if not status_line and reused:
                # The kept connection was closed by the server while idle, before it
                # read this request (nothing came back): a browser sends it again on a
                # new connection, once.
                await self.close()
                status_line = await self._send(raw)
            response, keep = await self._read_response(status_line)
        except BaseException:
            await self.close()
            raise
        if not keep:
            await self.close()
        self._store_cookies(response.set_cookies)
        return response

    async def _send(self, raw: bytes) -> bytes:
        """Write one request on the kept connection (or a new one); its status line."""
        if self._conn is None:
            self._conn = await asyncio.open_connection(self.host, self.port)
            self.connections += 1
        reader, writer = self._conn
        writer.write(raw)
        await writer.drain()
        return await reader.readline()

    async def _read_response(self, status_line: bytes) -> tuple[Response, bool]:
        assert self._conn is not None
        reader = self._conn[0]
        parts = status_line.decode("latin-1").split(" ", 2)
        if len(parts) < 2:
            raise ConnectionError(f"bad status line {status_line!r}")
        status = int(parts[1])
        hdrs: dict[str, str] = {}
        set_cookies: list[str] = []
        while True:
            line = await reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            k, _, v = line.decode("latin-1").partition(":")
            k, v = k.strip().lower(), v.strip()
            if k == "set-cookie":
                set_cookies.append(v)
            else:
                hdrs[k] = v
        keep = self.keep_alive and hdrs.get("connection", "").lower() != "close"
        if status in (204, 304) or 100 <= status < 200:
            data = b""
        elif "content-length" in hdrs:
            data = await reader.readexactly(int(hdrs["content-length"]))
        elif hdrs.get("transfer-encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    await reader.readline()
                    break
                chunks.append(await reader.readexactly(size))
                await reader.readline()
            data = b"".join(chunks)
        else:
            data = await reader.read()
            keep = False
        return Response(status, hdrs, set_cookies, data), keep


# --- HTML helpers (forms are parsed as a browser would submit them) ----------------

_FORM_RE = re.compile(r"<form\b([^>]*)>(.*?)</form>", re.S | re.I)
_ATTR_RE = re.compile(r"""([\w:-]+)\s*=\s*("([^"]*)"|'([^']*)'|([^\s>]+))""", re.S)
_INPUT_RE = re.compile(r"<(input|textarea|select)\b([^>]*)>", re.S | re.I)


def attrs(tag_attrs: str) -> dict[str, str]:
    out = {}
    for m in _ATTR_RE.finditer(tag_attrs):
        val = (
            m.group(3)
            if m.group(3) is not None
            else m.group(4)
            if m.group(4) is not None
            else m.group(5)
        )
        out[m.group(1).lower()] = html.unescape(val)
    return out


@dataclass
class Form:
    action: str
    method: str
    fields: list[tuple[str, str, str]]  # (tag/type, name, value)
    attrs: dict[str, str]
    body: str

    def names(self) -> list[str]:
        return [n for _, n, _ in self.fields]


def forms(page: str, base_path: str) -> list[Form]:
    out = []
    for m in _FORM_RE.finditer(page):
        a = attrs(m.group(1))
        action = a.get("action") or base_path
        action = urllib.parse.urljoin(base_path, action)
        fields = []
        for im in _INPUT_RE.finditer(m.group(2)):
            ia = attrs(im.group(2))
            if "name" not in ia:
                continue
            kind = im.group(1).lower()
            if kind == "input":
                kind = ia.get("type", "text").lower()
            fields.append((kind, ia["name"], ia.get("value", "")))
        out.append(Form(action, a.get("method", "get").lower(), fields, a, m.group(2)))
    return out


# --- statistics -----------------------------------------------------------------------


def percentile(sorted_values: list[float], q: float) -> float | None:
    """Nearest-rank percentile of an ascending list (None when empty)."""
    if not sorted_values:
        return None
    k = max(0, min(len(sorted_values) - 1, round(q / 100.0 * len(sorted_values) + 0.5) - 1))
    return sorted_values[k]


def summary(values: list[float]) -> dict[str, Any]:
    s = sorted(values)
    ms = lambda v: None if v is None else round(v * 1000.0, 1)  # noqa: E731
    return {
        "count": len(s),
        "p50_ms": ms(percentile(s, 50)),
        "p95_ms": ms(percentile(s, 95)),
        "p99_ms": ms(percentile(s, 99)),
        "max_ms": ms(s[-1] if s else None),
        "mean_ms": ms(sum(s) / len(s) if s else None),
    }


@dataclass
class LevelResult:
    app: str
    concurrency: int
    duration_s: float = 0.0
    cycles: int = 0
    failed_cycles: int = 0
    cycle_latencies: list[float] = field(default_factory=list)
    request_latencies: dict[str, list[float]] = field(default_factory=dict)
    request_errors: dict[str, int] = field(default_factory=dict)  # non-2xx/3xx or transport
    error_samples: list[str] = field(default_factory=list)
    acked: list[int] = field(default_factory=list)  # submission ids the app acknowledged
    aborted: str = ""

    def merge(self, other: LevelResult) -> None:
        """Add another slice of the same app and concurrency (interleaved rounds)."""
        self.duration_s += other.duration_s
        self.cycles += other.cycles
        self.failed_cycles += other.failed_cycles
        self.cycle_latencies += other.cycle_latencies
        for k, v in other.request_latencies.items():
            self.request_latencies.setdefault(k, []).extend(v)
        for k, n in other.request_errors.items():
            self.request_errors[k] = self.request_errors.get(k, 0) + n
        self.error_samples += other.error_samples[: max(0, 20 - len(self.error_samples))]
        self.acked += other.acked
        self.aborted = self.aborted or other.aborted

    def record(self, step: str, seconds: float, ok: bool) -> None:
        self.request_latencies.setdefault(step, []).append(seconds)
        if not ok:
            self.request_errors[step] = self.request_errors.get(step, 0) + 1

    def report(self) -> dict[str, Any]:
        return {
            "app": self.app,
            "concurrency": self.concurrency,
            "duration_s": round(self.duration_s, 2),
            "cycles": self.cycles,
            "cycles_per_s": round(self.cycles / self.duration_s, 2) if self.duration_s else 0.0,
            "failed_cycles": self.failed_cycles,
            "cycle": summary(self.cycle_latencies),
            "requests": {k: summary(v) for k, v in self.request_latencies.items()},
            "request_errors": dict(self.request_errors),
            "error_samples": self.error_samples[:10],
            "acknowledged_submissions": len(self.acked),
            "aborted": self.aborted,
        }


class Driver:
    """Knows one app's worker URLs and forms. Subclasses implement the three hooks."""

    name = "app"

    def __init__(
        self, host: str, port: int, config: dict[str, Any], keep_alive: bool = False
    ) -> None:
        self.host, self.port, self.config = host, port, config
        self.keep_alive = keep_alive

    def client(self, index: int, timeout: float) -> Client:
        c = Client(self.host, self.port, timeout, keep_alive=self.keep_alive)
        self.init_client(c, index)
        return c

    def init_client(self, client: Client, index: int) -> None:
        """Give the simulated worker its identity (cookies, invite link)."""

    async def prepare(self, client: Client) -> None:
        """Untimed: whatever a worker does once before the cycles (open the invite link)."""

    async def cycle(self, client: Client, step: Callable[..., Awaitable[Response]]) -> int:
        """One accept -> page -> submit cycle; returns the acknowledged submission's id.

        ``step(name, method, path, form=None, expect=(codes))`` sends a request,
        records its latency under ``name`` and raises CycleError on an unexpected status.
        """
        raise NotImplementedError


async def _step(
    client: Client,
    result: LevelResult | None,
    name: str,
    method: str,
    path: str,
    form=None,
    expect=(200,),
    headers=None,
) -> Response:
    t0 = time.perf_counter()
    try:
        r = await client.request(method, path, form, headers)
    except TimeoutError as exc:
        if result is not None:
            result.record(name, time.perf_counter() - t0, False)
        raise CycleError(name, f"timeout after {client.timeout}s") from exc
    except (OSError, ConnectionError, asyncio.IncompleteReadError, ValueError) as exc:
        if result is not None:
            result.record(name, time.perf_counter() - t0, False)
        raise CycleError(name, f"transport error {exc!r}") from exc
    dt = time.perf_counter() - t0
    ok_class = 200 <= r.status < 400
    if result is not None:
        result.record(name, dt, ok_class)
    if r.status not in expect:
        snippet = re.sub(r"\s+", " ", r.text[:300])
        raise CycleError(
            name,
            f"{method} {path} -> {r.status} (wanted {expect}) "
            f"location={r.headers.get('location', '')!r} body={snippet!r}",
        )
    return r


async def prepare_clients(driver: Driver, clients: list[Client], parallel: int = 10) -> None:
    sem = asyncio.Semaphore(parallel)

    async def one(c: Client) -> None:
        async with sem:
            await driver.prepare(c)

    await asyncio.gather(*(one(c) for c in clients))


async def run_level(
    driver: Driver,
    clients: list[Client],
    duration: float,
    *,
    max_cycles: int = 1_000_000,
    max_errors: int = 500,
    record: bool = True,
) -> LevelResult:
    """K = len(clients) workers each loop on cycles until ``duration`` has passed."""
    result = LevelResult(driver.name, len(clients))
    started = 0
    deadline = time.perf_counter() + duration

    async def worker(c: Client) -> None:
        nonlocal started
        while time.perf_counter() < deadline and started < max_cycles and not result.aborted:
            started += 1
            t0 = time.perf_counter()

            async def step(name, method, path, form=None, expect=(200,), headers=None):
                return await _step(c, result, name, method, path, form, expect, headers)

            try:
                ack = await driver.cycle(c, step)
            except CycleError as exc:
                result.failed_cycles += 1
                if len(result.error_samples) < 20:
                    result.error_samples.append(str(exc))
                if result.failed_cycles >= max_errors:
                    result.aborted = f"{result.failed_cycles} failed cycles"
                await asyncio.sleep(0.05)
                continue
            result.cycles += 1
            result.cycle_latencies.append(time.perf_counter() - t0)
            result.acked.append(ack)

    t_start = time.perf_counter()
    await asyncio.gather(*(worker(c) for c in clients))
    result.duration_s = time.perf_counter() - t_start
    return result


# --- drivers --------------------------------------------------------------------------

_TURKLE_PAGE_RE = re.compile(r"^/task/(\d+)/assignment/(\d+)/$")


class TurkleDriver(Driver):
    """Turkle 3.1: accept_next_task -> assignment page -> its iframe (the form) -> POST.

    A browser loads the iframe to show the task form, so the page step is the
    outer page plus the iframe; both are timed (as ``page`` and ``iframe``).
    """

    name = "turkle"

    def init_client(self, client: Client, index: int) -> None:
        sessions = self.config["sessions"]
        client.cookies.update(sessions[index % len(sessions)])

    async def cycle(self, client: Client, step) -> int:
        batch = self.config["batch_id"]
        r = await step("accept", "GET", f"/batch/{batch}/accept_next_task/", expect=(302,))
        page = r.location
        m = _TURKLE_PAGE_RE.match(page.split("?")[0])
        if not m:
            raise CycleError("accept", f"no task assigned: redirected to {page!r}")
        task_id, assignment_id = m.group(1), m.group(2)
        r = await step("page", "GET", page)
        if "task_assignment_iframe" not in r.text:
            raise CycleError("page", "assignment page without the task iframe")
        iframe = f"/task/{task_id}/assignment/iframe/{assignment_id}/"
        r = await step("iframe", "GET", iframe)
        fs = [f for f in forms(r.text, iframe) if f.attrs.get("id") == "mturk_form"]
        if not fs or self.config["field"] not in fs[0].names():
            raise CycleError("iframe", "task form or its answer field missing")
        f = fs[0]
        data = [(n, v) for kind, n, v in f.fields if kind == "hidden"]
        data.append((self.config["field"], f"word{assignment_id}"))
        r = await step("submit", "POST", f.action, form=data, expect=(302,))
        return int(assignment_id)


class QaportalDriver(Driver):
    """qaportal local workforce: invite link -> stage page; cycle: POST accept ->
    assignment page -> POST submit. Forms and their actions are read from the pages,
    the answer fields from ``config['answer']`` (field name -> value template)."""

    name = "qaportal"

    def init_client(self, client: Client, index: int) -> None:
        invites = self.config["invites"]
        client.state["invite"] = invites[index % len(invites)]

    async def prepare(self, client: Client) -> None:
        """Open the invite link, press Start (POST), land on the stage page."""
        invite = client.state["invite"]
        stage_path = self.config["stage_path"]
        r = await _step(client, None, "invite", "GET", invite, expect=(200, 302))
        if r.status == 200:
            start = [f for f in forms(r.text, invite) if f.method == "post"]
            if not start:
                raise CycleError("invite", "no Start form on the invite page")
            data = self._csrf(
                client, [(n, v) for kind, n, v in start[0].fields if kind == "hidden"]
            )
            r = await _step(
                client, None, "invite-start", "POST", start[0].action, form=data, expect=(302, 303)
            )
        if r.location.split("?")[0] != stage_path:
            raise CycleError("invite", f"invite led to {r.location!r}, not {stage_path!r}")
        r = await _step(client, None, "stage", "GET", stage_path)
        accept = self._accept_form(r.text, stage_path)
        client.state["accept_form"] = accept

    def _accept_form(self, page: str, base: str) -> Form:
        fs = [f for f in forms(page, base) if f.method == "post"]
        for f in fs:
            if "accept" in f.action or "accept" in f.body.lower():
                return f
        raise CycleError("stage", f"no accept form on the stage page ({len(fs)} POST forms)")

    async def cycle(self, client: Client, step) -> int:
        af: Form = client.state["accept_form"]
        data = [(n, v) for kind, n, v in af.fields if kind in ("hidden", "submit") and n]
        data = self._csrf(client, data)
        r = await step("accept", "POST", af.action, form=data, expect=(302, 303))
        page = r.location
        m = re.search(r"/work/a/([^/]+)/", page)
        if not m:
            raise CycleError("accept", f"no assignment: redirected to {page!r}")
        assignment = m.group(1)
        r = await step("page", "GET", page)
        fs = [f for f in forms(r.text, page) if f.method == "post"]
        answer: dict[str, str] = self.config["answer"]
        f = next((f for f in fs if all(n in f.names() for n in answer)), None)
        if f is None:
            raise CycleError("page", f"no submit form with fields {sorted(answer)}")
        data = [(n, v) for kind, n, v in f.fields if kind == "hidden" and n not in answer]
        data += [(n, v.format(id=assignment)) for n, v in answer.items()]
        data = self._csrf(client, data)
        r = await step(
            "submit", "POST", f.action, form=data, expect=self.config.get("submit_ok", (302, 303))
        )
        if r.status in (302, 303) and re.search(rf"/work/a/{assignment}/?$", r.location):
            # redirected back to the task page: the submission was refused
            raise CycleError("submit", f"submission refused, back to {r.location!r}")
        return int(assignment) if assignment.isdigit() else hash(assignment)

    @staticmethod
    def _csrf(client: Client, data: list[tuple[str, str]]) -> list[tuple[str, str]]:
        if not any(n == "csrfmiddlewaretoken" for n, _ in data) and "csrftoken" in client.cookies:
            data = [*data, ("csrfmiddlewaretoken", client.cookies["csrftoken"])]
        return data
