"""A local fake of MTurk's requester API: a real HTTP server on 127.0.0.1 in a thread.

It speaks the AWS JSON 1.1 protocol as MTurk does (``POST /`` with
``X-Amz-Target: MTurkRequesterServiceV20170117.<Operation>``, content type
``application/x-amz-json-1.1``; errors as HTTP 400 with ``__type`` and ``Message``),
so the real boto3 client — with dummy keys and ``endpoint_url`` pointing here —
signs, validates against MTurk's service model, and parses the answers.

It keeps its own record of effects (HITs, assignments, approvals, bonuses, messages,
qualification members, blocks), honours ``UniqueRequestToken`` as MTurk does (a
token seen before is refused with "already been processed"), and can inject faults
at a rate or for the next calls of an operation: ``throttle`` (HTTP 400
ThrottlingException), ``500``/``503``, ``drop_before`` (connection closed, nothing
done), ``drop_after`` (the effect happens, the answer is lost), ``refuse`` (a
RequestError) and ``pass`` (no fault: lets queued faults start later). ``latency``
delays every answer after its effect is done (a client killed meanwhile never learns
of it).
"""

from __future__ import annotations

import base64
import json
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from xml.sax.saxutils import escape

from botocore import xform_name

TARGET_PREFIX = "MTurkRequesterServiceV20170117."
ANSWER_NS = (
    "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2005-10-01/"
    "QuestionFormAnswers.xsd"
)
ALREADY = "The request you are trying to submit has already been processed."


class FakeError(Exception):
    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.code, self.message, self.status = code, message, status


def answer_xml(answers: dict[str, Any]) -> str:
    """QuestionFormAnswers for ``{question id: text or [selections]}`` (as MTurk stores
    an ExternalQuestion's posted form)."""
    parts = []
    for qid, value in answers.items():
        if isinstance(value, list):
            inner = "".join(
                f"<SelectionIdentifier>{escape(v)}</SelectionIdentifier>" for v in value
            )
        else:
            inner = f"<FreeText>{escape(str(value))}</FreeText>"
        parts.append(
            f"<Answer><QuestionIdentifier>{escape(qid)}</QuestionIdentifier>{inner}</Answer>"
        )
    body = "".join(parts)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<QuestionFormAnswers xmlns="{ANSWER_NS}">{body}</QuestionFormAnswers>'
    )


@dataclass
class State:
    hit_types: dict[str, dict[str, Any]] = field(default_factory=dict)
    hits: dict[str, dict[str, Any]] = field(default_factory=dict)
    assignments: dict[str, dict[str, Any]] = field(default_factory=dict)
    by_hit: dict[str, list[str]] = field(default_factory=dict)
    tokens: dict[str, Any] = field(default_factory=dict)
    bonuses: list[dict[str, Any]] = field(default_factory=list)
    approvals: Counter[str] = field(default_factory=Counter)
    rejections: Counter[str] = field(default_factory=Counter)
    messages: list[dict[str, Any]] = field(default_factory=list)
    qualification_types: dict[str, dict[str, Any]] = field(default_factory=dict)
    members: dict[tuple[str, str], int] = field(default_factory=dict)
    blocks: set[str] = field(default_factory=set)
    added: Counter[str] = field(default_factory=Counter)
    calls: Counter[str] = field(default_factory=Counter)
    faulted: Counter[str] = field(default_factory=Counter)
    balance: Decimal = Decimal("10000.00")


class FakeMTurk:
    """``with FakeMTurk() as fake: fake.url`` — the endpoint URL for boto3."""

    ACCESS_KEY = "AKIAFAKEFAKEFAKE0000"
    SECRET_KEY = "fake-secret-access-key-for-tests"

    def __init__(self, *, seed: int = 7) -> None:
        self.state = State()
        self.lock = threading.RLock()
        self.random = random.Random(seed)
        self.rates: dict[str, float] = {}  # fault kind -> rate, over every call
        self.rate_ops: set[str] | None = None  # None: every operation
        self.queued: list[tuple[str, str]] = []  # (operation, fault kind), used once each
        self.latency = 0.0  # seconds between doing a call's effect and answering it
        self._ids = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- server -------------------------------------------------------------------------

    def __enter__(self) -> FakeMTurk:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out at once

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                fake._handle(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _fault(self, op: str) -> str | None:
        with self.lock:
            for n, (name, kind) in enumerate(self.queued):
                if name == op:
                    del self.queued[n]
                    return kind
            if self.rate_ops is None or op in self.rate_ops:
                for kind, rate in self.rates.items():
                    if self.random.random() < rate:
                        return kind
        return None

    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("Content-Length", 0))
        raw = request.rfile.read(length)
        target = request.headers.get("X-Amz-Target", "")
        auth = request.headers.get("Authorization", "")
        op = target.removeprefix(TARGET_PREFIX)
        with self.lock:
            self.state.calls[op] += 1
        try:
            if not target.startswith(TARGET_PREFIX):
                raise FakeError("UnknownOperationException", f"Unknown target {target!r}")
            if request.headers.get("Content-Type") != "application/x-amz-json-1.1":
                raise FakeError("SerializationException", "Wrong content type")
            if f"Credential={self.ACCESS_KEY}/" not in auth or "AWS4-HMAC-SHA256" not in auth:
                raise FakeError("UnrecognizedClientException", "The security token is invalid.")
            fault = self._fault(op)
            if fault is not None:
                with self.lock:
                    self.state.faulted[fault] += 1
            if fault == "drop_before":
                request.close_connection = True
                return
            if fault == "throttle":
                raise FakeError("ThrottlingException", "Rate exceeded")
            if fault in ("500", "503"):
                raise FakeError("ServiceFault", "Service unavailable", int(fault))
            if fault == "refuse":
                raise FakeError("RequestError", "This requester no longer accepts new HITs.")
            body = json.loads(raw or b"{}")
            handler = getattr(self, f"op_{xform_name(op)}", None)
            if handler is None:
                raise FakeError("UnknownOperationException", f"Fake has no {op}")
            with self.lock:
                result = handler(body)
            if self.latency:  # the effect is done, its answer still on the way
                time.sleep(self.latency)
            if fault == "drop_after":
                request.close_connection = True
                return
            self._send(request, 200, result)
        except FakeError as exc:
            self._send(request, exc.status, {"__type": exc.code, "Message": exc.message})

    @staticmethod
    def _send(request: BaseHTTPRequestHandler, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        request.send_response(status)
        request.send_header("Content-Type", "application/x-amz-json-1.1")
        request.send_header("Content-Length", str(len(data)))
        request.send_header("x-amzn-RequestId", "fake-request")
        request.end_headers()
        try:
            request.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            request.close_connection = True  # the client died waiting (a killed worker)

    # --- helpers for tests --------------------------------------------------------------

    def _id(self, prefix: str = "3") -> str:
        self._ids += 1
        return f"{prefix}{self._ids:0{30 - len(prefix)}d}".upper()

    def fail_next(self, op: str, kind: str, times: int = 1) -> None:
        with self.lock:
            self.queued.extend([(op, kind)] * times)

    def submit_assignment(
        self, hit_id: str, worker_id: str, answers: dict[str, Any], *, seconds: int = 60
    ) -> str:
        """A worker accepts and submits on MTurk (the page posted to externalSubmit)."""
        with self.lock:
            hit = self.state.hits[hit_id]
            if len(self.state.by_hit.get(hit_id, [])) >= hit["MaxAssignments"]:
                raise ValueError("HIT is full")
            assignment_id = self._id("3A")
            now = time.time()
            self.state.assignments[assignment_id] = {
                "AssignmentId": assignment_id,
                "WorkerId": worker_id,
                "HITId": hit_id,
                "AssignmentStatus": "Submitted",
                "AcceptTime": now - seconds,
                "SubmitTime": now,
                "AutoApprovalTime": now + 3 * 86400,
                "Deadline": now + 3600,
                "Answer": answer_xml(answers),
            }
            self.state.by_hit.setdefault(hit_id, []).append(assignment_id)
            self._refresh(hit_id)
            return assignment_id

    def _refresh(self, hit_id: str) -> None:
        hit = self.state.hits[hit_id]
        taken = self.state.by_hit.get(hit_id, [])
        hit["NumberOfAssignmentsAvailable"] = hit["MaxAssignments"] - len(taken)
        hit["NumberOfAssignmentsCompleted"] = sum(
            1
            for a in taken
            if self.state.assignments[a]["AssignmentStatus"] in ("Approved", "Rejected")
        )
        expired = hit["Expiration"] <= time.time()
        if (taken and (len(taken) >= hit["MaxAssignments"] or expired)) or (not taken and expired):
            hit["HITStatus"] = "Reviewable"
        else:
            hit["HITStatus"] = "Assignable"

    def hits_with_annotation(self, prefix: str) -> list[dict[str, Any]]:
        return [
            h
            for h in self.state.hits.values()
            if h.get("RequesterAnnotation", "").startswith(prefix)
        ]

    # --- operations ---------------------------------------------------------------------

    def _token(self, body: dict[str, Any]) -> None:
        token = body.get("UniqueRequestToken")
        if token is None:
            return
        if token in self.state.tokens:
            raise FakeError("RequestError", ALREADY)

    def _remember(self, body: dict[str, Any], value: Any) -> None:
        if body.get("UniqueRequestToken"):
            self.state.tokens[body["UniqueRequestToken"]] = value

    def _hit(self, hit_id: str) -> dict[str, Any]:
        if hit_id not in self.state.hits:
            raise FakeError("RequestError", f"Hit {hit_id} does not exist.")
        return self.state.hits[hit_id]

    def _assignment(self, assignment_id: str) -> dict[str, Any]:
        if assignment_id not in self.state.assignments:
            raise FakeError("RequestError", f"Assignment {assignment_id} does not exist.")
        return self.state.assignments[assignment_id]

    @staticmethod
    def _page(items: list[Any], body: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        start = int(base64.b64decode(body["NextToken"]).decode()) if body.get("NextToken") else 0
        size = int(body.get("MaxResults", 10))
        if not 1 <= size <= 100:
            raise FakeError("ValidationException", "MaxResults must be 1 to 100")
        chunk = items[start : start + size]
        extra: dict[str, Any] = {"NumResults": len(chunk)}
        if start + size < len(items):
            extra["NextToken"] = base64.b64encode(str(start + size).encode()).decode()
        return chunk, extra

    def op_get_account_balance(self, body: dict[str, Any]) -> dict[str, Any]:
        return {"AvailableBalance": f"{self.state.balance:.2f}"}

    def op_create_hit_type(self, body: dict[str, Any]) -> dict[str, Any]:
        key = json.dumps(body, sort_keys=True)
        for type_id, props in self.state.hit_types.items():
            if props["key"] == key:
                return {"HITTypeId": type_id}
        type_id = self._id("3T")
        self.state.hit_types[type_id] = {"key": key, **body}
        return {"HITTypeId": type_id}

    def op_create_hit_with_hit_type(self, body: dict[str, Any]) -> dict[str, Any]:
        self._token(body)
        props = self.state.hit_types.get(body["HITTypeId"])
        if props is None:
            raise FakeError("RequestError", "HITType does not exist.")
        if "<ExternalQuestion" not in body["Question"] or "https://" not in body["Question"]:
            raise FakeError(
                "ParameterValidationError", "Question must be an https ExternalQuestion"
            )
        hit_id = self._id("3H")
        now = time.time()
        hit = {
            "HITId": hit_id,
            "HITTypeId": body["HITTypeId"],
            "HITGroupId": body["HITTypeId"],
            "CreationTime": now,
            "Title": props["Title"],
            "Description": props["Description"],
            "Question": body["Question"],
            "HITStatus": "Assignable",
            "MaxAssignments": body["MaxAssignments"],
            "Reward": props["Reward"],
            "Expiration": now + body["LifetimeInSeconds"],
            "RequesterAnnotation": body.get("RequesterAnnotation", ""),
            "HITReviewStatus": "NotReviewed",
        }
        self.state.hits[hit_id] = hit
        self._refresh(hit_id)
        self._remember(body, hit_id)
        return {"HIT": dict(hit)}

    def op_get_hit(self, body: dict[str, Any]) -> dict[str, Any]:
        return {"HIT": dict(self._hit(body["HITId"]))}

    def op_list_hits(self, body: dict[str, Any]) -> dict[str, Any]:
        chunk, extra = self._page(list(self.state.hits.values()), body)
        return {"HITs": [dict(h) for h in chunk], **extra}

    def op_list_reviewable_hits(self, body: dict[str, Any]) -> dict[str, Any]:
        for hit_id in self.state.hits:
            self._refresh(hit_id)
        hits = [
            h
            for h in self.state.hits.values()
            if h["HITStatus"] == body.get("Status", "Reviewable")
            and (not body.get("HITTypeId") or h["HITTypeId"] == body["HITTypeId"])
        ]
        chunk, extra = self._page(hits, body)
        return {"HITs": [dict(h) for h in chunk], **extra}

    def op_list_assignments_for_hit(self, body: dict[str, Any]) -> dict[str, Any]:
        self._hit(body["HITId"])
        statuses = set(body.get("AssignmentStatuses") or ["Submitted", "Approved", "Rejected"])
        items = [
            self.state.assignments[a]
            for a in self.state.by_hit.get(body["HITId"], [])
            if self.state.assignments[a]["AssignmentStatus"] in statuses
        ]
        chunk, extra = self._page(items, body)
        return {"Assignments": [dict(a) for a in chunk], **extra}

    def op_get_assignment(self, body: dict[str, Any]) -> dict[str, Any]:
        a = self._assignment(body["AssignmentId"])
        return {"Assignment": dict(a), "HIT": dict(self.state.hits[a["HITId"]])}

    def _decide(self, body: dict[str, Any], status: str) -> dict[str, Any]:
        a = self._assignment(body["AssignmentId"])
        if a["AssignmentStatus"] != "Submitted":
            raise FakeError(
                "RequestError",
                "This operation can be called with a status of: Submitted "
                f"(assignment is {a['AssignmentStatus']})",
            )
        a["AssignmentStatus"] = status
        a["RequesterFeedback"] = body.get("RequesterFeedback", "")
        a["ApprovalTime" if status == "Approved" else "RejectionTime"] = time.time()
        (self.state.approvals if status == "Approved" else self.state.rejections)[
            a["AssignmentId"]
        ] += 1
        self._refresh(a["HITId"])
        return {}

    def op_approve_assignment(self, body: dict[str, Any]) -> dict[str, Any]:
        return self._decide(body, "Approved")

    def op_reject_assignment(self, body: dict[str, Any]) -> dict[str, Any]:
        if not body.get("RequesterFeedback"):
            raise FakeError("ValidationException", "RequesterFeedback is required")
        return self._decide(body, "Rejected")

    def op_send_bonus(self, body: dict[str, Any]) -> dict[str, Any]:
        self._token(body)
        a = self._assignment(body["AssignmentId"])
        if a["WorkerId"] != body["WorkerId"]:
            raise FakeError("RequestError", "The worker did not work on this assignment.")
        amount = Decimal(body["BonusAmount"])
        if amount > self.state.balance:
            raise FakeError("RequestError", "Insufficient funds.")
        self.state.balance -= amount
        self.state.bonuses.append({**body, "GrantTime": time.time()})
        self._remember(body, True)
        return {}

    def op_list_bonus_payments(self, body: dict[str, Any]) -> dict[str, Any]:
        items = [
            {k: b[k] for k in ("WorkerId", "BonusAmount", "AssignmentId", "Reason", "GrantTime")}
            for b in self.state.bonuses
            if b["AssignmentId"] == body.get("AssignmentId")
        ]
        chunk, extra = self._page(items, body)
        return {"BonusPayments": chunk, **extra}

    def op_create_additional_assignments_for_hit(self, body: dict[str, Any]) -> dict[str, Any]:
        self._token(body)
        hit = self._hit(body["HITId"])
        hit["MaxAssignments"] += body["NumberOfAdditionalAssignments"]
        self.state.added[body["HITId"]] += body["NumberOfAdditionalAssignments"]
        self._refresh(body["HITId"])
        self._remember(body, True)
        return {}

    def op_update_expiration_for_hit(self, body: dict[str, Any]) -> dict[str, Any]:
        hit = self._hit(body["HITId"])
        hit["Expiration"] = float(body["ExpireAt"])
        self._refresh(body["HITId"])
        return {}

    def op_notify_workers(self, body: dict[str, Any]) -> dict[str, Any]:
        ids = body["WorkerIds"]
        if len(ids) > 100:
            raise FakeError("ValidationException", "At most 100 WorkerIds")
        known = {a["WorkerId"] for a in self.state.assignments.values()}
        failures = [
            {
                "NotifyWorkersFailureCode": "HardFailure",
                "NotifyWorkersFailureMessage": "Cannot send a message to a worker who has not "
                "worked for you.",
                "WorkerId": w,
            }
            for w in ids
            if w not in known
        ]
        self.state.messages.append({**body, "failed": [f["WorkerId"] for f in failures]})
        return {"NotifyWorkersFailureStatuses": failures}

    def op_create_qualification_type(self, body: dict[str, Any]) -> dict[str, Any]:
        if any(q["Name"] == body["Name"] for q in self.state.qualification_types.values()):
            raise FakeError(
                "RequestError", "You have already created a QualificationType with this name."
            )
        if body.get("AnswerKey") and not body.get("Test"):
            raise FakeError("RequestError", "An AnswerKey needs a Test.")
        qid = self._id("3Q")
        self.state.qualification_types[qid] = {
            "QualificationTypeId": qid,
            "CreationTime": time.time(),
            **body,
            "IsRequestable": True,
            "AutoGranted": bool(body.get("AutoGranted")),
        }
        return {"QualificationType": dict(self.state.qualification_types[qid])}

    def op_list_qualification_types(self, body: dict[str, Any]) -> dict[str, Any]:
        query = body.get("Query", "")
        items = [q for q in self.state.qualification_types.values() if query in q["Name"]]
        chunk, extra = self._page(items, body)
        return {"QualificationTypes": [dict(q) for q in chunk], **extra}

    def op_associate_qualification_with_worker(self, body: dict[str, Any]) -> dict[str, Any]:
        if body["QualificationTypeId"] not in self.state.qualification_types:
            raise FakeError("RequestError", "QualificationType does not exist.")
        self.state.members[(body["QualificationTypeId"], body["WorkerId"])] = body.get(
            "IntegerValue", 1
        )
        return {}

    def op_disassociate_qualification_from_worker(self, body: dict[str, Any]) -> dict[str, Any]:
        self.state.members.pop((body["QualificationTypeId"], body["WorkerId"]), None)
        return {}

    def op_create_worker_block(self, body: dict[str, Any]) -> dict[str, Any]:
        self.state.blocks.add(body["WorkerId"])
        return {}

    def op_delete_worker_block(self, body: dict[str, Any]) -> dict[str, Any]:
        self.state.blocks.discard(body["WorkerId"])
        return {}
