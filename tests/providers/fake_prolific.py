"""A local fake of Prolific's REST API: a real HTTP server on 127.0.0.1 in a thread.

It follows the request and response shapes of docs.prolific.com's API reference
for the endpoints qaportal uses, records every call (method, path, JSON body), and
can inject faults: 429 with ``Retry-After``, 5xx, and dropped connections (before
or after the request took effect). Tests drive participants with
``start_submission`` / ``complete_submission``.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _id() -> str:
    return secrets.token_hex(12)  # Prolific ids are 24 hex characters


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


@dataclass
class Fault:
    method: str
    path: str  # regex, matched from the start of the path
    kind: str  # "429", "500", "503", "drop_before", "drop_after"
    times: int = 1
    retry_after: str | None = None


@dataclass
class Call:
    method: str
    path: str
    body: Any
    status: int


@dataclass
class State:
    studies: dict[str, dict[str, Any]] = field(default_factory=dict)
    submissions: dict[str, dict[str, Any]] = field(default_factory=dict)
    bulk_bonuses: dict[str, dict[str, Any]] = field(default_factory=dict)
    groups: dict[str, dict[str, Any]] = field(default_factory=dict)
    messages: list[dict[str, Any]] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)


STUDY_REQUIRED = (
    "name",
    "description",
    "external_study_url",
    "prolific_id_option",
    "completion_codes",
    "total_available_places",
    "estimated_completion_time",
    "reward",
)
STUDY_TRANSITIONS = {
    ("UNPUBLISHED", "PUBLISH"): "ACTIVE",
    ("ACTIVE", "PAUSE"): "PAUSED",
    ("PAUSED", "START"): "ACTIVE",
    ("ACTIVE", "STOP"): "AWAITING REVIEW",
    ("PAUSED", "STOP"): "AWAITING REVIEW",
}


class FakeProlific:
    """``with FakeProlific(token=…) as fake: fake.url`` — the API base URL."""

    def __init__(self, *, token: str = "test-token") -> None:
        self.token = token
        self.state = State()
        self.lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ------------------------------------------------------------------

    def start(self) -> str:
        fake = self

        class Handler(_Handler):
            pass

        Handler.fake = fake
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self.url

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeProlific:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    # --- test helpers ---------------------------------------------------------------

    def inject(
        self,
        method: str,
        path: str,
        kind: str,
        *,
        times: int = 1,
        retry_after: str | None = None,
    ) -> None:
        with self.lock:
            self.state.faults.append(Fault(method, path, kind, times, retry_after))

    def calls(self, method: str | None = None, path: str | None = None) -> list[Call]:
        with self.lock:
            return [
                c
                for c in self.state.calls
                if (method is None or c.method == method)
                and (path is None or re.match(path, c.path))
            ]

    def start_submission(
        self, study_id: str, participant_id: str | None = None, submission_id: str | None = None
    ) -> dict[str, Any]:
        """A participant starts the study: an ACTIVE submission (its id is SESSION_ID).

        ``submission_id``: the id to give it (a simulated participant that entered with
        its own SESSION_ID); a new one by default.
        """
        with self.lock:
            sub: dict[str, Any] = {
                "id": submission_id or _id(),
                "study_id": study_id,
                "participant": participant_id or _id(),
                "status": "ACTIVE",
                "started_at": _now(),
                "completed_at": None,
                "entered_code": None,
                "bonus_payments": [],
            }
            self.state.submissions[sub["id"]] = sub
            return dict(sub)

    def complete_submission(self, submission_id: str, code: str) -> None:
        with self.lock:
            sub = self.state.submissions[submission_id]
            sub.update(status="AWAITING REVIEW", completed_at=_now(), entered_code=code)

    def return_submission(self, submission_id: str) -> None:
        """The participant gave the study back (Prolific's "return")."""
        with self.lock:
            self.state.submissions[submission_id].update(status="RETURNED")

    def submission(self, submission_id: str) -> dict[str, Any]:
        with self.lock:
            return dict(self.state.submissions[submission_id])


class _Handler(BaseHTTPRequestHandler):
    fake: FakeProlific
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def _send(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _drop(self) -> None:
        self.close_connection = True
        self.connection.close()

    def _handle(self, method: str) -> None:
        fake = self.fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = self.path.split("?", 1)[0]
        fault = None
        with fake.lock:
            for f in fake.state.faults:
                if f.times > 0 and f.method == method and re.match(f.path, path):
                    f.times -= 1
                    fault = f
                    break
        if self.headers.get("Authorization") != f"Token {fake.token}":
            self._record(method, path, body, 401)
            self._send(401, {"error": {"detail": "Invalid token."}})
            return
        if fault is not None and fault.kind in ("429", "500", "502", "503"):
            status = int(fault.kind)
            self._record(method, path, body, status)
            headers = {"Retry-After": fault.retry_after} if fault.retry_after else None
            self._send(status, {"error": {"detail": "injected"}}, headers)
            return
        if fault is not None and fault.kind == "drop_before":
            self._record(method, path, body, 0)
            self._drop()
            return
        with fake.lock:
            status, answer = _route(fake.state, method, path, body)
            fake.state.calls.append(Call(method, path, body, status))
        if fault is not None and fault.kind == "drop_after":
            self._drop()
            return
        self._send(status, answer)

    def _record(self, method: str, path: str, body: Any, status: int) -> None:
        with self.fake.lock:
            self.fake.state.calls.append(Call(method, path, body, status))


def _error(status: int, detail: str) -> tuple[int, Any]:
    return status, {"error": {"detail": detail}}


def _route(state: State, method: str, path: str, body: Any) -> tuple[int, Any]:
    body = body if isinstance(body, dict) else {}
    study: dict[str, Any] | None
    sub: dict[str, Any] | None
    bulk: dict[str, Any] | None
    group: dict[str, Any] | None
    if path == "/api/v1/studies/":
        if method == "GET":
            return 200, {"results": list(state.studies.values()), "_links": {"next": None}}
        missing = [k for k in STUDY_REQUIRED if k not in body]
        if missing:
            return _error(400, f"missing: {', '.join(missing)}")
        study = {**body, "id": _id(), "status": "UNPUBLISHED", "date_created": _now()}
        state.studies[study["id"]] = study
        return 201, study
    m = re.fullmatch(r"/api/v1/studies/([^/]+)/(transition/|submissions/)?", path)
    if m:
        study = state.studies.get(m.group(1))
        if study is None:
            return _error(404, "Not found.")
        if m.group(2) == "transition/" and method == "POST":
            new = STUDY_TRANSITIONS.get((study["status"], body.get("action")))
            if new is None:
                return _error(400, f"cannot {body.get('action')} a {study['status']} study")
            study["status"] = new
            return 200, study
        if m.group(2) == "submissions/" and method == "GET":
            subs = [
                {
                    "id": s["id"],
                    "participant_id": s["participant"],
                    "status": s["status"],
                    "started_at": s["started_at"],
                    "completed_at": s["completed_at"],
                    "study_code": s["entered_code"],
                    "has_siblings": False,
                }
                for s in state.submissions.values()
                if s["study_id"] == study["id"]
            ]
            return 200, {
                "results": subs,
                "_links": {"next": {"href": None}},
                "meta": {"count": len(subs)},
            }
        if method == "GET":
            return 200, study
        if method == "PATCH":
            study.update(body)
            return 200, study
    m = re.fullmatch(r"/api/v1/submissions/([^/]+)/(transition/)?", path)
    if m and m.group(1) not in ("bonus-payments", "bulk-approve"):
        sub = state.submissions.get(m.group(1))
        if sub is None:
            return _error(404, "Not found.")
        if m.group(2) and method == "POST":
            action = body.get("action")
            target = {"APPROVE": "APPROVED", "REJECT": "REJECTED"}.get(action or "")
            if target is None:
                return _error(400, "unknown action")
            if sub["status"] == target:
                return 200, _submission(sub)  # idempotent, as documented
            if sub["status"] != "AWAITING REVIEW":
                return _error(400, f"cannot {action} a {sub['status']} submission")
            if action == "REJECT" and (
                len(body.get("message", "")) < 100 or not body.get("rejection_category")
            ):
                return _error(400, "message of 100+ characters and rejection_category required")
            sub["status"] = target
            return 200, _submission(sub)
        if method == "GET":
            return 200, _submission(sub)
    if path == "/api/v1/submissions/bulk-approve/" and method == "POST":
        for sid in body.get("submission_ids", []):
            sub = state.submissions.get(sid)
            if sub is not None and sub["status"] == "AWAITING REVIEW":
                sub["status"] = "APPROVED"
        return 200, "The request to bulk approve has been made successfully."
    if path == "/api/v1/submissions/bonus-payments/" and method == "POST":
        study = state.studies.get(body.get("study_id", ""))
        if study is None:
            return _error(400, "unknown study")
        rows = []
        for line in filter(None, body.get("csv_bonuses", "").splitlines()):
            who, amount = line.split(",")
            sub = state.submissions.get(who) or next(
                (
                    s
                    for s in state.submissions.values()
                    if s["participant"] == who and s["study_id"] == study["id"]
                ),
                None,
            )
            if sub is None or sub["study_id"] != study["id"]:
                return _error(400, f"{who} did not take part in this study")
            rows.append((sub["id"], int(Decimal(amount) * 100)))
        total = sum(a for _, a in rows)
        fees = round(total * 0.333, 2)
        bulk = {"id": _id(), "study": study["id"], "rows": rows, "paid": 0}
        state.bulk_bonuses[bulk["id"]] = bulk
        return 201, {
            "id": bulk["id"],
            "study": study["id"],
            "amount": total,
            "fees": fees,
            "total_amount": total + fees,
            "vat": 0,
        }
    m = re.fullmatch(r"/api/v1/bulk-bonus-payments/([^/]+)/pay/", path)
    if m and method == "POST":
        bulk = state.bulk_bonuses.get(m.group(1))
        if bulk is None:
            return _error(404, "Not found.")
        bulk["paid"] += 1  # not idempotent, as documented: every call pays
        for sid, amount in bulk["rows"]:
            state.submissions[sid]["bonus_payments"].append(amount)
        return 202, f"Bulk bonus payment with ID {bulk['id']} is being processed asynchronously."
    if path == "/api/v1/messages/bulk/" and method == "POST":
        if not body.get("ids") or not body.get("body") or not body.get("study_id"):
            return _error(400, "ids, body and study_id are required")
        state.messages.append(body)
        return 204, None
    if path == "/api/v1/participant-groups/":
        if method == "GET":
            return 200, {"results": list(state.groups.values())}
        group = {
            "id": _id(),
            "name": body.get("name"),
            "workspace_id": body.get("workspace_id"),
            "participant_ids": list(body.get("participant_ids", [])),
            "is_deleted": False,
        }
        state.groups[group["id"]] = group
        return 201, group
    m = re.fullmatch(r"/api/v1/participant-groups/([^/]+)/participants/", path)
    if m:
        group = state.groups.get(m.group(1))
        if group is None:
            return _error(404, "Not found.")
        ids = body.get("participant_ids", [])
        if method == "POST":
            group["participant_ids"] += [i for i in ids if i not in group["participant_ids"]]
        elif method == "DELETE":
            group["participant_ids"] = [i for i in group["participant_ids"] if i not in ids]
        return 200, {"results": [{"participant_id": i} for i in group["participant_ids"]]}
    return _error(404, f"no route {method} {path}")


def _submission(sub: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": sub["id"],
        "study_id": sub["study_id"],
        "participant": sub["participant"],
        "status": sub["status"],
        "started_at": sub["started_at"],
        "completed_at": sub["completed_at"],
        "entered_code": sub["entered_code"],
        "bonus_payments": list(sub["bonus_payments"]),
    }
