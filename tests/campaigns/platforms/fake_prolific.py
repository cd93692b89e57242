"""A local fake of Prolific's REST API: a real HTTP server on 127.0.0.1 in a thread.

Held to the contract: every request is validated against Prolific's published OpenAPI
document (``reference/openapi.yml``, through ``prolific_contract``): an operation the
document does not have is refused (404), and so is a query parameter it does not list
or a body its schema refuses (400, naming the fields at fault). On top of the schema
the fake implements what Prolific's prose documents and qaportal relies on:

- study transitions as the ``publish-study`` table says (``STOP`` → ``COMPLETED``);
  a published study's places only grow, and growing an ``AWAITING REVIEW`` or
  ``COMPLETED`` study makes it ``ACTIVE`` again (``update-study``);
- ``maximum_allowed_time`` of at least 2 + 2·estimate + 2·√estimate minutes, and a
  reward of at least ``MIN_HOURLY_PENCE`` an hour for the estimated time;
- bulk approval and bonus payment are asynchronous: the call is accepted, and the work
  is "in progress" for ``async_lag`` further requests (0 by default: done by the next
  one), then done (``settle()`` finishes everything at once);
- a burst of study creations, or of bonus set-ups and payments, gets 429 with
  ``Retry-After`` (``rate_limits``);
- hook subscriptions are listed by ``is_enabled`` (enabled ones when not given);
- the filters catalogue (``get-filters``) with the country filter's choices.

It records every call (method, path, query, JSON body, status) and can inject faults:
429 with ``Retry-After``, 5xx, and dropped connections (before or after the request
took effect). Tests drive participants with ``start_submission`` /
``complete_submission``.
"""

from __future__ import annotations

import json
import math
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

from tests.campaigns.platforms.prolific_contract import request_problems


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
    query: dict[str, list[str]] = field(default_factory=dict)
    operation_id: str = ""


@dataclass
class Job:
    """Work Prolific does after answering: done once ``due`` requests have been served."""

    due: int
    kind: str  # "approve" or "bonus"
    payload: Any


@dataclass
class State:
    studies: dict[str, dict[str, Any]] = field(default_factory=dict)
    submissions: dict[str, dict[str, Any]] = field(default_factory=dict)
    bulk_bonuses: dict[str, dict[str, Any]] = field(default_factory=dict)
    groups: dict[str, dict[str, Any]] = field(default_factory=dict)
    messages: list[dict[str, Any]] = field(default_factory=list)
    test_participants: dict[str, str] = field(default_factory=dict)
    hooks: dict[str, dict[str, Any]] = field(default_factory=dict)
    hook_secrets: dict[str, dict[str, Any]] = field(default_factory=dict)
    hook_confirm_secrets: dict[str, str] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    jobs: list[Job] = field(default_factory=list)
    served: int = 0
    recent: dict[str, list[float]] = field(default_factory=dict)


# Prolific's minimum reward (researcher help, "Prolific's payment principles"): £6.00 an hour.
MIN_HOURLY_PENCE = 600
# Rate limits: operation group -> (calls, seconds); a call beyond them gets 429.
RATE_LIMITS = {"studies": (20, 60.0), "payments": (120, 60.0)}
RATE_GROUPS = {
    "create-study": "studies",
    "create-bonus-payments": "payments",
    "pay-bonus-payments": "payments",
}
# The fake's filters catalogue (get-filters): range filters and select filters with choices.
COUNTRIES = {
    "0": "United Kingdom",
    "1": "United States",
    "2": "Ireland",
    "3": "Germany",
    "4": "France",
    "5": "Spain",
    "6": "Italy",
    "7": "Netherlands",
    "8": "Australia",
    "9": "New Zealand",
    "10": "South Africa",
    "11": "India",
    "45": "Canada",
}
FILTER_CATALOGUE: list[dict[str, Any]] = [
    {
        "filter_id": "approval_rate",
        "type": "range",
        "question": "Approval rate",
        "min": 0,
        "max": 100,
        "data_type": "integer",
    },
    {
        "filter_id": "approval_numbers",
        "type": "range",
        "question": "Number of previous submissions approved",
        "min": 0,
        "max": 100000,
        "data_type": "integer",
    },
    {
        "filter_id": "current-country-of-residence",
        "type": "select",
        "question": "In which country do you currently reside?",
        "choices": COUNTRIES,
        "data_type": "ChoiceID",
    },
    {
        "filter_id": "participant_group_allowlist",
        "type": "select",
        "question": "Participant group allowlist",
        "choices": {},
        "data_type": "ChoiceID",
    },
    {
        "filter_id": "participant_group_blocklist",
        "type": "select",
        "question": "Participant group blocklist",
        "choices": {},
        "data_type": "ChoiceID",
    },
]
STUDY_TRANSITIONS = {  # the publish-study operation's table
    ("UNPUBLISHED", "PUBLISH"): "ACTIVE",
    ("ACTIVE", "PAUSE"): "PAUSED",
    ("PAUSED", "START"): "ACTIVE",
    ("ACTIVE", "STOP"): "COMPLETED",
    ("PAUSED", "STOP"): "COMPLETED",
}
PUBLISHED = frozenset({"ACTIVE", "PAUSED", "SCHEDULED"})
FINISHED = frozenset({"AWAITING REVIEW", "COMPLETED"})
# update-study: what a published study still takes.
PUBLISHED_UPDATABLE = frozenset(
    {"internal_name", "total_available_places", "access_details", "submissions_config"}
)
HOOK_EVENT_TYPES = (
    "study.status.change",
    "study.progress.change",
    "submission.status.change",
)
REJECT_MESSAGE_MIN = 100


def maximum_time_least(estimate: float) -> float:
    """Prolific's least ``maximum_allowed_time``: 2 + 2·estimate + 2·√estimate minutes."""
    return 2 + 2 * estimate + 2 * math.sqrt(estimate)


class FakeProlific:
    """``with FakeProlific(token=…) as fake: fake.url`` — the API base URL."""

    def __init__(self, *, token: str = "test-token", async_lag: int = 0) -> None:
        self.token = token
        self.state = State()
        self.lock = threading.Lock()
        self.async_lag = async_lag
        self.rate_limits = dict(RATE_LIMITS)
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

    def settle(self) -> None:
        """Prolific finishes every asynchronous job (bulk approvals, bonus payments)."""
        with self.lock:
            _jobs_run(self.state, everything=True)

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
            study = self.state.studies.get(study_id)
            if study is not None:
                study["places_taken"] = study.get("places_taken", 0) + 1
            return dict(sub)

    def complete_submission(self, submission_id: str, code: str) -> None:
        with self.lock:
            sub = self.state.submissions[submission_id]
            sub.update(status="AWAITING REVIEW", completed_at=_now(), entered_code=code)
            study = self.state.studies.get(sub["study_id"])
            if (
                study is not None
                and study["status"] == "ACTIVE"
                and study.get("places_taken", 0) >= study["total_available_places"]
            ):
                study["status"] = "AWAITING REVIEW"  # every place taken: recruiting ends

    def return_submission(self, submission_id: str) -> None:
        """The participant gave the study back (Prolific's "return")."""
        with self.lock:
            sub = self.state.submissions[submission_id]
            sub.update(status="RETURNED")
            study = self.state.studies.get(sub["study_id"])
            if study is not None:
                study["places_taken"] = max(0, study.get("places_taken", 0) - 1)

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
        path, _, raw_query = self.path.partition("?")
        query = parse_qs(raw_query, keep_blank_values=True)
        fault = None
        with fake.lock:
            for f in fake.state.faults:
                if f.times > 0 and f.method == method and re.match(f.path, path):
                    f.times -= 1
                    fault = f
                    break
        if self.headers.get("Authorization") != f"Token {fake.token}":
            self._record(method, path, body, 401, query)
            self._send(401, _error(401, "Invalid token.")[1])
            return
        if fault is not None and fault.kind in ("429", "500", "502", "503"):
            status = int(fault.kind)
            self._record(method, path, body, status, query)
            headers = {"Retry-After": fault.retry_after} if fault.retry_after else None
            self._send(status, {"error": {"detail": "injected"}}, headers)
            return
        if fault is not None and fault.kind == "drop_before":
            self._record(method, path, body, 0, query)
            self._drop()
            return
        routed: tuple[Any, ...]
        operation_id = ""
        if raw and body is None:
            routed = _error(400, "Malformed JSON.")
        else:
            op, problems = request_problems(method, path, query, body, has_body=bool(raw))
            operation_id = op.operation_id if op is not None else ""
            if op is None:
                routed = _error(404, problems[0])
            elif problems:
                routed = _error(400, problems, title=f"Refused by {operation_id}'s schema")
            else:
                with fake.lock:
                    wait = _throttled(fake, operation_id)
                    if wait is not None:
                        routed = (*_error(429, "Request was throttled."), {"Retry-After": wait})
                    else:
                        fake.state.served += 1
                        _jobs_run(fake.state)
                        params = op.pattern.match(path)
                        assert params is not None
                        routed = _route(
                            fake, operation_id, params.groups(), body, query, has_body=bool(raw)
                        )
        status, answer = routed[0], routed[1]
        extra = routed[2] if len(routed) > 2 else {}
        with fake.lock:
            fake.state.calls.append(Call(method, path, body, status, query, operation_id))
        if fault is not None and fault.kind == "drop_after":
            self._drop()
            return
        self._send(status, answer, extra or None)

    def _record(
        self, method: str, path: str, body: Any, status: int, query: dict[str, list[str]]
    ) -> None:
        with self.fake.lock:
            self.fake.state.calls.append(Call(method, path, body, status, query))


def _error(status: int, detail: Any, title: str = "") -> tuple[int, Any]:
    titles = {400: "Invalid request", 401: "Unauthorized", 404: "Not found", 429: "Throttled"}
    return status, {
        "error": {"status": status, "title": title or titles.get(status, ""), "detail": detail}
    }


def _throttled(fake: FakeProlific, operation_id: str) -> str | None:
    """Seconds to wait (``Retry-After``) when this call exceeds its group's rate limit."""
    group = RATE_GROUPS.get(operation_id)
    if group is None or group not in fake.rate_limits:
        return None
    most, window = fake.rate_limits[group]
    now = time.monotonic()
    recent = [t for t in fake.state.recent.get(group, []) if now - t < window]
    if len(recent) >= most:
        fake.state.recent[group] = recent
        return str(max(1, math.ceil(window - (now - recent[0]))))
    fake.state.recent[group] = [*recent, now]
    return None


def _jobs_run(state: State, *, everything: bool = False) -> None:
    """Finish the asynchronous jobs whose time has come."""
    waiting = []
    for job in state.jobs:
        if not everything and job.due > state.served:
            waiting.append(job)
            continue
        if job.kind == "approve":
            for sid in job.payload:
                if state.submissions[sid]["status"] == "AWAITING REVIEW":
                    state.submissions[sid]["status"] = "APPROVED"
        elif job.kind == "bonus":
            for sid, amount in job.payload:
                state.submissions[sid]["bonus_payments"].append(amount)
    state.jobs = waiting


def _later(fake: FakeProlific, kind: str, payload: Any) -> None:
    # ``async_lag`` requests after this one still find it in progress; the next finds it done.
    fake.state.jobs.append(Job(fake.state.served + fake.async_lag + 1, kind, payload))


# --- What the prose documents, beyond the schema ---------------------------------------


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _study_problems(state: State, body: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """The rules a draft study meets (``body`` merged over ``current``)."""
    study = {**current, **body}
    problems = []
    places = _number(study.get("total_available_places"))
    estimate = _number(study.get("estimated_completion_time"))
    reward = _number(study.get("reward"))
    if places is not None and (places < 1 or places != int(places)):
        problems.append("total_available_places: a whole number of 1 or more.")
    if estimate is not None and estimate < 1:
        problems.append("estimated_completion_time: 1 minute or more.")
    most = _number(study.get("maximum_allowed_time"))
    if most is not None and estimate is not None and most < maximum_time_least(estimate):
        problems.append(
            f"maximum_allowed_time: at least {math.ceil(maximum_time_least(estimate))} minutes "
            f"for an estimate of {estimate:g} (2 + 2·estimate + 2·√estimate)."
        )
    if reward is not None and estimate is not None and reward * 60 < MIN_HOURLY_PENCE * estimate:
        problems.append(
            f"reward: {reward:g} pence for {estimate:g} minutes is below the minimum of "
            f"£{MIN_HOURLY_PENCE / 100:.2f} an hour."
        )
    codes = study.get("completion_codes") or []
    seen: set[str] = set()
    for n, code in enumerate(codes):
        value = code.get("code")
        if value is not None and value in seen:
            problems.append(f"completion_codes/{n}: code {value!r} is not unique.")
        seen.add(value)
        names = [a.get("action") for a in code.get("actions", [])]
        if {"AUTOMATICALLY_APPROVE", "MANUALLY_REVIEW"} <= set(names):
            problems.append(f"completion_codes/{n}: AUTOMATICALLY_APPROVE with MANUALLY_REVIEW.")
    for n, f in enumerate(study.get("filters") or []):
        problems += [f"filters/{n}: {m}" for m in _filter_problems(state, f)]
    return problems


def _filter_problems(state: State, f: dict[str, Any]) -> list[str]:
    found = next((c for c in FILTER_CATALOGUE if c["filter_id"] == f.get("filter_id")), None)
    if found is None:
        return [f"{f.get('filter_id')!r} is not a filter (get-filters)."]
    if found["type"] == "range":
        if "selected_range" not in f:
            return [f"{found['filter_id']} is a range filter: selected_range."]
        bounds = [f["selected_range"].get(k) for k in ("lower", "upper")]
        for bound in bounds:
            if bound is None:
                continue
            try:
                value = float(bound)
            except (TypeError, ValueError):
                return [f"{bound!r} is not a number."]
            if not found["min"] <= value <= found["max"]:
                return [f"{bound!r} is outside {found['min']}..{found['max']}."]
        return []
    values = f.get("selected_values")
    if values is None:
        return [f"{found['filter_id']} is a select filter: selected_values."]
    if not values:
        return ["selected_values: at least one choice."]
    if found["filter_id"].startswith("participant_group_"):
        unknown = [v for v in values if v not in state.groups]
        return [f"participant groups {unknown} do not exist."] if unknown else []
    unknown = [v for v in values if v not in found["choices"]]
    return [f"{unknown} are not choices of {found['filter_id']}."] if unknown else []


def _study_short(study: dict[str, Any]) -> dict[str, Any]:
    return {
        k: study.get(k)
        for k in ("id", "name", "internal_name", "status", "total_available_places", "reward")
    }


def _page(rows: list[Any], query: dict[str, list[str]], path: str) -> dict[str, Any]:
    """``page`` / ``page_size`` paging (get-submissions), with a ``next`` link."""
    size = int((query.get("page_size") or ["20"])[0])
    page = int((query.get("page") or ["1"])[0])
    chunk = rows[(page - 1) * size : page * size]
    more = page * size < len(rows)
    return {
        "results": chunk,
        "_links": {"next": {"href": f"{path}?page={page + 1}" if more else None}},
        "meta": {"count": len(rows)},
    }


def _route(
    fake: FakeProlific,
    operation_id: str,
    args: tuple[str, ...],
    body: Any,
    query: dict[str, list[str]],
    *,
    has_body: bool,
) -> tuple[int, Any] | tuple[int, Any, dict[str, str]]:
    state = fake.state
    body = body if isinstance(body, dict) else {}
    arg = args[0] if args else ""
    study: dict[str, Any] | None
    sub: dict[str, Any] | None
    bulk: dict[str, Any] | None
    group: dict[str, Any] | None
    hook: dict[str, Any] | None
    rows: list[Any]
    wrong: list[str]
    # --- studies ---------------------------------------------------------------------
    if operation_id == "get-studies":
        return 200, {"results": [_study_short(s) for s in state.studies.values()]}
    if operation_id == "create-study":
        problems = _study_problems(state, body, {})
        if problems:
            return _error(400, problems)
        study = {
            **body,
            "id": _id(),
            "status": "UNPUBLISHED",
            "date_created": _now(),
            "internal_name": body.get("internal_name") or "",
            "places_taken": 0,
            "currency_code": "GBP",
            "is_test": False,
        }
        state.studies[study["id"]] = study
        return 201, study
    if operation_id in ("get-study", "update-study", "publish-study", "create-test-study"):
        study = state.studies.get(arg)
        if study is None:
            return _error(404, "Not found.")
        if operation_id == "get-study":
            return 200, study
        if operation_id == "publish-study":
            new = STUDY_TRANSITIONS.get((study["status"], body["action"]))
            if new is None:
                return _error(400, f"Cannot {body['action']} a {study['status']} study.")
            study["status"] = new
            return 200, study
        if operation_id == "create-test-study":
            if study["status"] != "UNPUBLISHED":
                return _error(400, "A test study is made from a draft (UNPUBLISHED) study.")
            if not state.test_participants:
                return _error(400, "Create a test participant first (create-test-participant).")
            test = {**study, "id": _id(), "status": "ACTIVE", "is_test": True}
            state.studies[test["id"]] = test
            return 200, {
                "study_id": test["id"],
                "study_url": f"https://app.prolific.com/studies/{test['id']}",
            }
        # update-study
        if study["status"] == "UNPUBLISHED":
            problems = _study_problems(state, body, study)
            if problems:
                return _error(400, problems)
        else:
            others = sorted(set(body) - PUBLISHED_UPDATABLE)
            if others:
                return _error(400, {f: ["Cannot be changed once published."] for f in others})
            places = body.get("total_available_places")
            if places is not None and places < study["total_available_places"]:
                return _error(400, {"total_available_places": ["Places can only be increased."]})
            grows = places is not None and places > study["total_available_places"]
            if grows and study["status"] in FINISHED:
                study["status"] = "ACTIVE"  # growing a finished study reactivates it
        study.update(body)
        return 200, study
    if operation_id == "get-study-submissions":
        study = state.studies.get(arg)
        if study is None:
            return _error(404, "Not found.")
        return 200, {
            "results": [_short(s) for s in state.submissions.values() if s["study_id"] == arg]
        }
    # --- submissions -------------------------------------------------------------------
    if operation_id == "get-submissions":
        study_id = query["study"][0]
        rows = [_short(s) for s in state.submissions.values() if s["study_id"] == study_id]
        return 200, _page(rows, query, "/api/v1/submissions/")
    if operation_id == "get-submission":
        sub = state.submissions.get(arg)
        return (200, _submission(sub)) if sub is not None else _error(404, "Not found.")
    if operation_id == "transition-submission":
        sub = state.submissions.get(arg)
        if sub is None:
            return _error(404, "Not found.")
        action = body["action"]
        if action == "REJECT":
            problems = []
            if len(body.get("message") or "") < REJECT_MESSAGE_MIN:
                problems.append(f"message: required for REJECT, {REJECT_MESSAGE_MIN}+ characters.")
            if "rejection_category" not in body:
                problems.append("rejection_category: required for REJECT.")
            if problems:
                return _error(400, problems)
        target = {"APPROVE": "APPROVED", "REJECT": "REJECTED"}.get(action)
        if target is None:
            return _error(400, f"{action} needs completion codes this study does not have.")
        if sub["status"] == target:
            return 200, _submission(sub)
        if sub["status"] != "AWAITING REVIEW":
            return _error(400, f"Cannot {action} a {sub['status']} submission.")
        sub["status"] = target
        return 200, _submission(sub)
    if operation_id == "bulk-approve-submissions":
        if "submission_ids" in body:
            found = [state.submissions.get(i) for i in body["submission_ids"]]
        else:
            found = [
                next(
                    (
                        s
                        for s in state.submissions.values()
                        if s["participant"] == p and s["study_id"] == body["study_id"]
                    ),
                    None,
                )
                for p in body["participant_ids"]
            ]
        if not found or any(s is None for s in found):
            return _error(400, "Some ids are not submissions of your studies.")
        _later(fake, "approve", [s["id"] for s in found if s is not None])
        return 200, "The request to bulk approve has been made successfully."
    if operation_id == "create-bonus-payments":
        study = state.studies.get(body.get("study_id") or "")
        if study is None or not isinstance(body.get("csv_bonuses"), str):
            return _error(400, {"study_id": ["A study of yours."], "csv_bonuses": ["Required."]})
        rows, wrong = [], []
        for line in filter(None, body["csv_bonuses"].splitlines()):
            parts = line.split(",")
            if len(parts) != 2:
                return _error(400, {"csv_bonuses": [f"{line!r} is not <id>,<amount>."]})
            who, amount = parts[0].strip(), parts[1].strip()
            if not re.fullmatch(r"\d+(\.\d{1,2})?", amount) or Decimal(amount) <= 0:
                return _error(400, {"csv_bonuses": [f"{amount!r} is not an amount like 1.50."]})
            sub = state.submissions.get(who) or next(
                (
                    s
                    for s in state.submissions.values()
                    if s["participant"] == who and s["study_id"] == study["id"]
                ),
                None,
            )
            if sub is None or sub["study_id"] != study["id"]:
                wrong.append(who)
                continue
            rows.append((sub["id"], int(Decimal(amount) * 100)))
        if wrong or not rows:
            return _error(400, {"csv_bonuses": [f"Not in this study: {wrong}"]})
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
    if operation_id == "pay-bonus-payments":
        bulk = state.bulk_bonuses.get(arg)
        if bulk is None:
            return _error(404, "Not found.")
        bulk["paid"] += 1  # not idempotent, as documented: every call pays
        _later(fake, "bonus", list(bulk["rows"]))
        return 202, f"Bulk bonus payment with ID {bulk['id']} is being processed asynchronously."
    # --- messages, groups, test participants ---------------------------------------------
    if operation_id == "bulk-message-participants":
        if body["study_id"] not in state.studies or not body["ids"] or not body["body"].strip():
            return _error(400, "ids, body and a study of yours are required.")
        state.messages.append(body)
        return 204, None
    if operation_id == "get-participant-groups":
        scope = (query.get("workspace_id") or query.get("project_id") or [""])[0]
        return 200, {"results": [g for g in state.groups.values() if g["workspace_id"] == scope]}
    if operation_id == "create-participant-group":
        if not body.get("workspace_id") and not body.get("organisation_id"):
            return _error(400, "Either a workspace or organisation ID must be specified.")
        group = {
            "id": _id(),
            "name": body["name"],
            "workspace_id": body.get("workspace_id"),
            "participant_ids": list(body.get("participant_ids", [])),
            "is_deleted": False,
        }
        state.groups[group["id"]] = group
        return 201, group
    if operation_id in (
        "get-participant-group-participants",
        "add-to-participant-group",
        "remove-from-participant-group",
    ):
        group = state.groups.get(arg)
        if group is None:
            return _error(404, "Not found.")
        ids = body.get("participant_ids") or []
        if operation_id == "add-to-participant-group":
            group["participant_ids"] += [i for i in ids if i not in group["participant_ids"]]
        elif operation_id == "remove-from-participant-group":
            group["participant_ids"] = [i for i in group["participant_ids"] if i not in ids]
        return 200, {"results": [{"participant_id": i} for i in group["participant_ids"]]}
    if operation_id == "create-test-participant-for-researcher":
        if body["email"] in state.test_participants.values():
            return _error(400, {"email": ["A participant with this email exists."]})
        pid = _id()
        state.test_participants[pid] = body["email"]
        return 201, {"participant_id": pid}
    if operation_id == "get-filters":
        return 200, {"results": FILTER_CATALOGUE, "_links": {}, "meta": {}}
    # --- hooks -------------------------------------------------------------------------------
    if operation_id == "get-event-types":
        return 200, {"results": [{"event_type": e} for e in HOOK_EVENT_TYPES]}
    if operation_id == "create-secret":
        if not body.get("workspace_id"):
            return _error(400, {"workspace_id": ["Required."]})
        secret = {
            "id": _id(),
            "value": secrets.token_urlsafe(32),
            "workspace_id": body["workspace_id"],
        }
        state.hook_secrets[body["workspace_id"]] = secret  # one active secret per workspace
        return 201, secret
    if operation_id == "get-subscriptions":
        scope = (query.get("workspace_id") or [""])[0]
        enabled = (query.get("is_enabled") or ["true"])[0] == "true"  # enabled ones by default
        listed = [
            h
            for h in state.hooks.values()
            if (not scope or h["workspace_id"] == scope) and h["is_enabled"] == enabled
        ]
        return 200, {"results": listed}
    if operation_id == "create-subscription":
        target = body["target_url"]
        problems = []
        if body["event_type"] not in HOOK_EVENT_TYPES:
            problems.append(f"event_type: {body['event_type']!r} is not an event type.")
        if not target.startswith("https://") or re.match(r"https://(localhost|127\.)", target):
            problems.append("target_url: must use https:// and be publicly accessible.")
        if body["workspace_id"] not in state.hook_secrets:
            problems.append("workspace_id: create the workspace's secret first (create-secret).")
        if problems:
            return _error(400, problems)
        hook = {
            "id": _id(),
            "workspace_id": body["workspace_id"],
            "event_type": body["event_type"],
            "target_url": target,
            "is_enabled": False,
        }
        confirm = secrets.token_hex(16)
        state.hooks[hook["id"]] = hook
        state.hook_confirm_secrets[hook["id"]] = confirm
        return 201, {"results": [hook]}, {"X-Hook-Secret": confirm}
    if operation_id == "confirm-subscription":
        hook = state.hooks.get(arg)
        if hook is None:
            return _error(404, "Not found.")
        if body["secret"] != state.hook_confirm_secrets.get(hook["id"]):
            return _error(400, {"secret": ["Does not match the subscription's X-Hook-Secret."]})
        hook["is_enabled"] = True
        return 200, hook
    if operation_id == "get-secrets":
        active = state.hook_secrets.get(query["workspace_id"][0])
        return 200, {"results": [active] if active else []}
    if operation_id == "delete-subscription":
        if state.hooks.pop(arg, None) is None:
            return _error(404, "Not found.")
        return 204, None
    if operation_id == "get-subscription":
        hook = state.hooks.get(arg)
        return (200, hook) if hook is not None else _error(404, "Not found.")
    return _error(501, f"The fake does not implement {operation_id}.")


def _short(sub: dict[str, Any]) -> dict[str, Any]:
    """A submission as get-study-submissions / get-submissions list it (SubmissionShort)."""
    return {
        "id": sub["id"],
        "participant_id": sub["participant"],
        "status": sub["status"],
        "started_at": sub["started_at"],
        "completed_at": sub["completed_at"],
        "study_code": sub["entered_code"],
        "has_siblings": False,
    }


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
