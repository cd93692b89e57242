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
from urllib.parse import parse_qs


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
    test_participants: dict[str, str] = field(default_factory=dict)
    hooks: dict[str, dict[str, Any]] = field(default_factory=dict)
    hook_secrets: dict[str, dict[str, Any]] = field(default_factory=dict)
    hook_confirm_secrets: dict[str, str] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)


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
        path, _, raw_query = self.path.partition("?")
        query = parse_qs(raw_query)
        fault = None
        with fake.lock:
            for f in fake.state.faults:
                if f.times > 0 and f.method == method and re.match(f.path, path):
                    f.times -= 1
                    fault = f
                    break
        if self.headers.get("Authorization") != f"Token {fake.token}":
            self._record(method, path, body, 401)
            self._send(401, _error(401, "Invalid token.")[1])
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
        routed: tuple[Any, ...]
        if raw and body is None:
            routed = _error(400, "Malformed JSON.")
        else:
            with fake.lock:
                routed = _route(fake.state, method, path, body, query)
        status, answer = routed[0], routed[1]
        extra = routed[2] if len(routed) > 2 else {}
        with fake.lock:
            fake.state.calls.append(Call(method, path, body, status))
        if fault is not None and fault.kind == "drop_after":
            self._drop()
            return
        self._send(status, answer, extra or None)

    def _record(self, method: str, path: str, body: Any, status: int) -> None:
        with self.fake.lock:
            self.fake.state.calls.append(Call(method, path, body, status))


# --- Validation: the shapes of docs.prolific.com's API reference ---------------------------
# Every refusal answers as Prolific does: a 4xx with {"error": {"status", "title", "detail"}},
# "detail" naming the fields at fault, so that a request qaportal builds wrongly fails a test.

STUDY_FIELDS = frozenset(
    {
        "name",
        "internal_name",
        "description",
        "external_study_url",
        "access_details",
        "prolific_id_option",
        "completion_codes",
        "total_available_places",
        "estimated_completion_time",
        "maximum_allowed_time",
        "reward",
        "device_compatibility",
        "peripheral_requirements",
        "filters",
        "filter_set_id",
        "filter_set_version",
        "project",
        "submissions_config",
        "study_labels",
        "content_warnings",
        "is_custom_screening",
        "naivety_distribution_rate",
    }
)
STUDY_REQUIRED = (
    "name",
    "description",
    "prolific_id_option",
    "completion_codes",
    "total_available_places",
    "estimated_completion_time",
    "reward",
)
PROLIFIC_ID_OPTIONS = frozenset({"question", "url_parameters", "not_required"})
DEVICES = frozenset({"desktop", "tablet", "mobile"})
PERIPHERALS = frozenset({"audio", "camera", "download", "microphone"})
CODE_ACTIONS = frozenset(
    {
        "AUTOMATICALLY_APPROVE",
        "MANUALLY_REVIEW",
        "ADD_TO_PARTICIPANT_GROUP",
        "REMOVE_FROM_PARTICIPANT_GROUP",
        "REQUEST_RETURN",
        "FIXED_SCREEN_OUT_PAYMENT",
        "DYNAMIC_SCREEN_OUT_PAYMENT",
    }
)
CODE_TYPES = frozenset(
    {
        "COMPLETED",
        "FAILED_ATTENTION_CHECK",
        "FOLLOW_UP_STUDY",
        "GIVE_BONUS",
        "INCOMPATIBLE_DEVICE",
        "NO_CONSENT",
        "OTHER",
        "SCREENED_OUT",
    }
)
STUDY_ACTIONS = frozenset({"PUBLISH", "START", "PAUSE", "STOP"})
STUDY_TRANSITIONS = {
    ("UNPUBLISHED", "PUBLISH"): "ACTIVE",
    ("ACTIVE", "PAUSE"): "PAUSED",
    ("PAUSED", "START"): "ACTIVE",
    ("ACTIVE", "STOP"): "AWAITING REVIEW",
    ("PAUSED", "STOP"): "AWAITING REVIEW",
}
SUBMISSION_ACTIONS = frozenset({"APPROVE", "REJECT", "PARTIALLY_APPROVE", "SCREEN_OUT", "COMPLETE"})
REJECTION_CATEGORIES = frozenset(
    {
        "TOO_QUICKLY",
        "TOO_SLOWLY",
        "FAILED_INSTRUCTIONS",
        "INCOMP_LONGITUDINAL",
        "FAILED_CHECK",
        "LOW_EFFORT",
        "MALINGERING",
        "NO_CODE",
        "BAD_CODE",
        "NO_DATA",
        "UNSUPP_DEVICE",
        "OTHER",
    }
)
# The fake's filter catalogue (GET /api/v1/filters/): id -> "range" or "select".
FILTERS = {
    "approval_rate": "range",
    "approval_numbers": "range",
    "age": "range",
    "current-country-of-residence": "select",
    "participant_group_allowlist": "select",
    "participant_group_blocklist": "select",
    "custom_allowlist": "select",
    "custom_blocklist": "select",
}
COUNTRY_CHOICES = frozenset(str(n) for n in range(0, 250))
HOOK_EVENT_TYPES = (
    "study.status.change",
    "study.progress.change",
    "submission.status.change",
)
PUBLISHED = frozenset({"ACTIVE", "PAUSED", "SCHEDULED"})


def _error(status: int, detail: Any, title: str = "") -> tuple[int, Any]:
    titles = {400: "Invalid request", 401: "Unauthorized", 404: "Not found", 409: "Conflict"}
    return status, {
        "error": {"status": status, "title": title or titles.get(status, ""), "detail": detail}
    }


def _is_int(value: Any, *, low: int | None = None) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and (low is None or value >= low)


def _study_problems(state: State, body: dict[str, Any], *, partial: bool) -> dict[str, list[str]]:
    """Field -> messages, for a create (``partial`` False) or an update of a draft."""
    problems: dict[str, list[str]] = {}

    def bad(name_: str, message: str) -> None:
        problems.setdefault(name_, []).append(message)

    for name_ in sorted(set(body) - STUDY_FIELDS):
        bad(name_, "Unknown name_.")
    if not partial:
        for name_ in STUDY_REQUIRED:
            if name_ not in body:
                bad(name_, "This name_ is required.")
        if not body.get("external_study_url") and not body.get("access_details"):
            bad("external_study_url", "Provide external_study_url or access_details.")
    if "name" in body and not (isinstance(body["name"], str) and body["name"].strip()):
        bad("name", "Must be a non-empty string.")
    url = body.get("external_study_url")
    if url is not None and not (isinstance(url, str) and url.startswith(("https://", "http://"))):
        bad("external_study_url", "Enter a valid URL.")
    if "prolific_id_option" in body and body["prolific_id_option"] not in PROLIFIC_ID_OPTIONS:
        bad("prolific_id_option", f"Not one of {sorted(PROLIFIC_ID_OPTIONS)}.")
    for name_ in ("total_available_places", "estimated_completion_time", "reward"):
        if name_ in body and not _is_int(body[name_], low=1):
            bad(name_, "A whole number of 1 or more (reward in the currency's minor unit).")
    if "maximum_allowed_time" in body:
        most = body["maximum_allowed_time"]
        least = body.get("estimated_completion_time")
        if not _is_int(most, low=1) or (_is_int(least) and most < least):
            bad("maximum_allowed_time", "A whole number of minutes, at least the estimate.")
    for name_, allowed in (
        ("device_compatibility", DEVICES),
        ("peripheral_requirements", PERIPHERALS),
    ):
        if name_ in body:
            values = body[name_]
            if not isinstance(values, list) or not set(values) <= allowed:
                bad(name_, f"Values from {sorted(allowed)}.")
    if "completion_codes" in body:
        codes = body["completion_codes"]
        if not isinstance(codes, list) or not codes:
            bad("completion_codes", "Specify at least one completion code.")
        else:
            seen: set[str] = set()
            for n, code in enumerate(codes):
                if (
                    not isinstance(code, dict)
                    or not isinstance(code.get("code"), str)
                    or not code["code"]
                ):
                    bad("completion_codes", f"[{n}].code is required.")
                    continue
                if code["code"] in seen:
                    bad("completion_codes", f"[{n}].code {code['code']!r} is not unique.")
                seen.add(code["code"])
                if code.get("code_type") not in CODE_TYPES:
                    bad(
                        "completion_codes", f"[{n}].code_type {code.get('code_type')!r} is unknown."
                    )
                actions = code.get("actions")
                if not isinstance(actions, list):
                    bad("completion_codes", f"[{n}].actions must be a list.")
                    continue
                names = [a.get("action") if isinstance(a, dict) else None for a in actions]
                for name in names:
                    if name not in CODE_ACTIONS:
                        bad("completion_codes", f"[{n}].actions: {name!r} is not an action.")
                if {"AUTOMATICALLY_APPROVE", "MANUALLY_REVIEW"} <= set(names):
                    bad("completion_codes", f"[{n}]: AUTOMATICALLY_APPROVE with MANUALLY_REVIEW.")
    if "filters" in body:
        filters = body["filters"]
        if not isinstance(filters, list):
            bad("filters", "Must be a list.")
        else:
            for n, f in enumerate(filters):
                for message in _filter_problems(state, f):
                    bad("filters", f"[{n}] {message}")
    config = body.get("submissions_config")
    if config is not None:
        most = config.get("max_submissions_per_participant") if isinstance(config, dict) else None
        if not (_is_int(most, low=1) or most == -1):
            bad("submissions_config", "max_submissions_per_participant: -1 or 1 and more.")
    return problems


def _filter_problems(state: State, f: Any) -> list[str]:
    if not isinstance(f, dict) or "filter_id" not in f:
        return ["filter_id is required."]
    kind = FILTERS.get(f["filter_id"])
    if kind is None:
        return [f"{f['filter_id']!r} is not a filter (GET /api/v1/filters/)."]
    if kind == "range":
        rng = f.get("selected_range")
        if "selected_values" in f or not isinstance(rng, dict):
            return [f"{f['filter_id']} is a range filter: selected_range {{lower, upper}}."]
        lower, upper = rng.get("lower"), rng.get("upper")
        if lower is None and upper is None:
            return ["selected_range needs lower or upper."]
        if any(v is not None and not isinstance(v, int | float) for v in (lower, upper)):
            return ["selected_range bounds are numbers."]
        if f["filter_id"] == "approval_rate" and any(
            v is not None and not 0 <= v <= 100 for v in (lower, upper)
        ):
            return ["approval_rate is 0 to 100."]
        return []
    values = f.get("selected_values")
    if "selected_range" in f or not isinstance(values, list) or not values:
        return [f"{f['filter_id']} is a select filter: a non-empty selected_values list."]
    if not all(isinstance(v, str) for v in values):
        return ["selected_values are strings."]
    if f["filter_id"] == "current-country-of-residence":
        unknown = [v for v in values if v not in COUNTRY_CHOICES]
        if unknown:
            return [f"{unknown} are not choices of current-country-of-residence."]
    if f["filter_id"].startswith("participant_group_"):
        unknown = [v for v in values if v not in state.groups]
        if unknown:
            return [f"participant groups {unknown} do not exist."]
    return []


def _route(
    state: State, method: str, path: str, body: Any, query: dict[str, list[str]] | None = None
) -> tuple[int, Any] | tuple[int, Any, dict[str, str]]:
    raw = body
    body = body if isinstance(body, dict) else {}
    query = query or {}
    study: dict[str, Any] | None
    sub: dict[str, Any] | None
    bulk: dict[str, Any] | None
    group: dict[str, Any] | None
    if method in ("POST", "PATCH") and raw is not None and not isinstance(raw, dict):
        return _error(400, "The request body must be a JSON object.")
    # --- studies ---------------------------------------------------------------------------
    if path == "/api/v1/studies/":
        if method == "GET":
            return 200, {"results": list(state.studies.values()), "_links": {"next": None}}
        if method != "POST":
            return _error(405, f"{method} not allowed.")
        problems = _study_problems(state, body, partial=False)
        if problems:
            return _error(400, problems)
        study = {
            **body,
            "id": _id(),
            "status": "UNPUBLISHED",
            "date_created": _now(),
            "internal_name": body.get("internal_name", ""),
            "places_taken": 0,
            "currency_code": "GBP",
            "is_test": False,
        }
        state.studies[study["id"]] = study
        return 201, study
    m = re.fullmatch(r"/api/v1/studies/([^/]+)/test-study", path)
    if m and method == "POST":
        draft = state.studies.get(m.group(1))
        if draft is None:
            return _error(404, "Not found.")
        if draft["status"] != "UNPUBLISHED":
            return _error(400, "A test study is made from a draft (UNPUBLISHED) study.")
        if not state.test_participants:
            return _error(
                400, "Create a test participant first (POST /api/v1/researchers/participants/)."
            )
        test = {**draft, "id": _id(), "status": "ACTIVE", "is_test": True, "date_created": _now()}
        state.studies[test["id"]] = test
        return 200, {
            "study_id": test["id"],
            "study_url": f"https://app.prolific.com/studies/{test['id']}",
        }
    m = re.fullmatch(r"/api/v1/studies/([^/]+)/(transition/|submissions/)?", path)
    if m:
        study = state.studies.get(m.group(1))
        if study is None:
            return _error(404, "Not found.")
        if m.group(2) == "transition/" and method == "POST":
            action = body.get("action")
            if action not in STUDY_ACTIONS:
                return _error(
                    400, {"action": [f"{action!r} is not one of {sorted(STUDY_ACTIONS)}."]}
                )
            new = STUDY_TRANSITIONS.get((study["status"], action))
            if new is None:
                return _error(400, f"cannot {action} a {study['status']} study")
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
        if m.group(2) is None and method == "GET":
            return 200, study
        if m.group(2) is None and method == "PATCH":
            if study["status"] == "UNPUBLISHED":
                problems = _study_problems(state, body, partial=True)
                if problems:
                    return _error(400, problems)
            elif study["status"] in PUBLISHED:
                others = sorted(set(body) - {"total_available_places", "internal_name"})
                if others:
                    return _error(
                        400, {f: ["Cannot be changed once the study is published."] for f in others}
                    )
                places = body.get("total_available_places")
                if places is not None and (
                    not _is_int(places, low=1) or places < study["total_available_places"]
                ):
                    return _error(
                        400, {"total_available_places": ["Places can only be increased."]}
                    )
            else:
                return _error(400, f"A {study['status']} study cannot be updated.")
            study.update(body)
            return 200, study
        return _error(405, f"{method} not allowed.")
    # --- submissions ---------------------------------------------------------------------
    if path == "/api/v1/submissions/bulk-approve/" and method == "POST":
        by_ids = "submission_ids" in body
        by_participants = "participant_ids" in body or "study_id" in body
        if by_ids == by_participants:
            return _error(400, "Send either submission_ids, or study_id with participant_ids.")
        if by_ids:
            ids = body["submission_ids"]
            if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
                return _error(400, {"submission_ids": ["A non-empty list of ids."]})
            found = [state.submissions.get(i) for i in ids]
        else:
            pids = body.get("participant_ids")
            if not isinstance(pids, list) or not pids or body.get("study_id") not in state.studies:
                return _error(400, {"participant_ids": ["study_id and a non-empty list."]})
            found = [
                next(
                    (
                        s
                        for s in state.submissions.values()
                        if s["participant"] == p and s["study_id"] == body["study_id"]
                    ),
                    None,
                )
                for p in pids
            ]
        if any(s is None for s in found):
            return _error(400, "Some ids are not submissions of your studies.")
        for sub in found:
            if sub is not None and sub["status"] == "AWAITING REVIEW":
                sub["status"] = "APPROVED"
        return 200, "The request to bulk approve has been made successfully."
    if path == "/api/v1/submissions/bonus-payments/" and method == "POST":
        if not isinstance(body.get("study_id"), str) or not isinstance(
            body.get("csv_bonuses"), str
        ):
            return _error(400, {"study_id": ["Required."], "csv_bonuses": ["Required."]})
        study = state.studies.get(body["study_id"])
        if study is None:
            return _error(400, {"study_id": ["Unknown study."]})
        rows = []
        wrong = []
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
    m = re.fullmatch(r"/api/v1/submissions/([^/]+)/(transition/)?", path)
    if m:
        sub = state.submissions.get(m.group(1))
        if sub is None:
            return _error(404, "Not found.")
        if m.group(2) and method == "POST":
            action = body.get("action")
            if action not in SUBMISSION_ACTIONS:
                return _error(400, {"action": [f"{action!r} is not a submission action."]})
            if action == "REJECT":
                problems = {}
                if len(body.get("message") or "") < 100:
                    problems["message"] = ["Required for REJECT, at least 100 characters."]
                if body.get("rejection_category") not in REJECTION_CATEGORIES:
                    problems["rejection_category"] = [
                        f"{body.get('rejection_category')!r} is not a rejection category."
                    ]
                if problems:
                    return _error(400, problems)
            target = {"APPROVE": "APPROVED", "REJECT": "REJECTED"}.get(action)
            if target is None:
                return _error(400, f"{action} needs completion codes this study does not have.")
            if sub["status"] == target:
                return 200, _submission(sub)  # idempotent, as documented
            if sub["status"] != "AWAITING REVIEW":
                return _error(400, f"cannot {action} a {sub['status']} submission")
            sub["status"] = target
            return 200, _submission(sub)
        if m.group(2) is None and method == "GET":
            return 200, _submission(sub)
        return _error(405, f"{method} not allowed.")
    m = re.fullmatch(r"/api/v1/bulk-bonus-payments/([^/]+)/pay/", path)
    if m and method == "POST":
        bulk = state.bulk_bonuses.get(m.group(1))
        if bulk is None:
            return _error(404, "Not found.")
        bulk["paid"] += 1  # not idempotent, as documented: every call pays
        for sid, amount in bulk["rows"]:
            state.submissions[sid]["bonus_payments"].append(amount)
        return 202, f"Bulk bonus payment with ID {bulk['id']} is being processed asynchronously."
    # --- messages --------------------------------------------------------------------------
    if path == "/api/v1/messages/bulk/" and method == "POST":
        problems = {}
        ids = body.get("ids")
        if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
            problems["ids"] = ["A non-empty list of participant ids."]
        if not isinstance(body.get("body"), str) or not body["body"].strip():
            problems["body"] = ["Required."]
        if body.get("study_id") not in state.studies:
            problems["study_id"] = ["A study of yours."]
        if problems:
            return _error(400, problems)
        state.messages.append(body)
        return 204, None
    # --- participant groups --------------------------------------------------------------
    if path == "/api/v1/participant-groups/":
        if method == "GET":
            scope = (query.get("workspace_id") or query.get("project_id") or [""])[0]
            if not scope:
                return _error(400, "workspace_id or project_id is required.")
            return 200, {
                "results": [g for g in state.groups.values() if g["workspace_id"] == scope],
                "_links": {"next": None},
            }
        if not isinstance(body.get("name"), str) or not body["name"]:
            return _error(400, {"name": ["Required."]})
        if not body.get("workspace_id") and not body.get("project_id"):
            return _error(400, {"workspace_id": ["workspace_id or project_id is required."]})
        group = {
            "id": _id(),
            "name": body["name"],
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
        ids = body.get("participant_ids")
        if method in ("POST", "DELETE") and (
            not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids)
        ):
            return _error(400, {"participant_ids": ["A non-empty list of participant ids."]})
        if method == "POST":
            group["participant_ids"] += [i for i in ids if i not in group["participant_ids"]]
        elif method == "DELETE":
            group["participant_ids"] = [i for i in group["participant_ids"] if i not in ids]
        return 200, {"results": [{"participant_id": i} for i in group["participant_ids"]]}
    # --- testing ----------------------------------------------------------------------------
    if path == "/api/v1/researchers/participants/" and method == "POST":
        email = body.get("email")
        if not isinstance(email, str) or not re.fullmatch(r"[^@\s]+@[^@\s]+\.[^@\s]+", email):
            return _error(400, {"email": ["Enter a valid email address."]})
        if email in state.test_participants.values():
            return _error(400, {"email": ["A participant with this email exists."]})
        pid = _id()
        state.test_participants[pid] = email
        return 201, {"participant_id": pid}
    # --- hooks ------------------------------------------------------------------------------
    if path == "/api/v1/hooks/event-types/" and method == "GET":
        return 200, {"results": [{"event_type": e} for e in HOOK_EVENT_TYPES]}
    if path == "/api/v1/hooks/secrets/" and method == "POST":
        if not body.get("workspace_id"):
            return _error(400, {"workspace_id": ["Required."]})
        secret = {
            "id": _id(),
            "value": secrets.token_urlsafe(32),
            "workspace_id": body["workspace_id"],
        }
        state.hook_secrets[body["workspace_id"]] = secret  # one active secret per workspace
        return 201, secret
    if path == "/api/v1/hooks/subscriptions/":
        if method == "GET":
            scope = (query.get("workspace_id") or [""])[0]
            if not scope:
                return _error(400, "workspace_id is required.")
            subscribed = [h for h in state.hooks.values() if h["workspace_id"] == scope]
            return 200, {"results": subscribed, "_links": {"next": None}}
        problems = {}
        if not body.get("workspace_id"):
            problems["workspace_id"] = ["Required."]
        if body.get("event_type") not in HOOK_EVENT_TYPES:
            problems["event_type"] = [f"{body.get('event_type')!r} is not an event type."]
        target = body.get("target_url")
        if (
            not isinstance(target, str)
            or not target.startswith("https://")
            or re.match(r"https://(localhost|127\.)", target)
        ):
            problems["target_url"] = ["Must use https:// and be publicly accessible."]
        if problems:
            return _error(400, problems)
        hook = {
            "id": _id(),
            "workspace_id": body["workspace_id"],
            "event_type": body["event_type"],
            "target_url": target,
            "is_enabled": False,
        }
        hook_secret = secrets.token_hex(16)
        state.hooks[hook["id"]] = hook
        state.hook_confirm_secrets[hook["id"]] = hook_secret
        return 201, hook, {"X-Hook-Secret": hook_secret}
    m = re.fullmatch(r"/api/v1/hooks/subscriptions/([^/]+)/", path)
    if m and method == "POST":
        subscription = state.hooks.get(m.group(1))
        if subscription is None:
            return _error(404, "Not found.")
        if body.get("secret") != state.hook_confirm_secrets.get(subscription["id"]):
            return _error(
                400, {"secret": ["Does not match the X-Hook-Secret of the subscription."]}
            )
        subscription["is_enabled"] = True
        return 200, subscription
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
