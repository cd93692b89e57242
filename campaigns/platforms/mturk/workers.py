"""MTurk worker operations: messages, qualifications, blocks (a mixin of ``MTurkProvider``).

None moves money. Granting, revoking, blocking and unblocking are safe to repeat on
MTurk. ``NotifyWorkers`` is not: it is sent in chunks of 100 workers, each chunk
checkpointed as requested before the call and as sent after it, so a retry never
sends a chunk twice (a chunk whose answer was lost is reported ``unknown``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from campaigns.platforms.base import (
    OperationCall,
    PermanentProviderError,
    TransientProviderError,
)
from campaigns.platforms.mturk.checks import (
    MESSAGE_MAX,
    NOTIFY_CHUNK,
    REASON_MAX,
    SUBJECT_MAX,
    check_id,
    check_text,
    check_worker_id,
    short_worker,
)

if TYPE_CHECKING:
    from campaigns.platforms.mturk.client import MTurkClient

logger = logging.getLogger(__name__)


class WorkersMixin:
    client: MTurkClient

    # --- messages ------------------------------------------------------------------------

    def notify(self, call: OperationCall) -> dict[str, Any]:
        """``NotifyWorkers`` in chunks of ≤100; per-worker failures are recorded.

        Payload: ``participant_ids`` (WorkerIds), ``subject`` (≤200), ``body`` (≤4096).
        Result: ``sent`` (workers MTurk accepted), ``failures`` (``worker_id``, ``code``
        SoftFailure / HardFailure, ``message``), ``unknown`` (chunks whose fate was lost).
        """
        ids = [check_worker_id(w) for w in call.payload.get("participant_ids", [])]
        subject = check_text(
            call.payload.get("subject") or "Message from the requester",
            "Subject",
            maximum=SUBJECT_MAX,
            newlines=False,
        )
        text = check_text(call.payload.get("body"), "Message", maximum=MESSAGE_MAX)
        chunks = [ids[i : i + NOTIFY_CHUNK] for i in range(0, len(ids), NOTIFY_CHUNK)]
        done: dict[str, Any] = dict(call.result.get("chunks") or {})
        requested = set(call.result.get("requested") or [])
        for n, chunk in enumerate(chunks):
            index = str(n)
            if index in done:
                continue
            if index in requested:  # sent, or not: the answer was lost; never send twice
                done[index] = {"unknown": True, "workers": len(chunk)}
                call.checkpoint(chunks=dict(done))
                continue
            requested.add(index)
            call.checkpoint(requested=sorted(requested))
            try:
                answer = self.client.call(
                    "notify_workers", Subject=subject, MessageText=text, WorkerIds=chunk
                )
            except TransientProviderError as exc:
                if exc.unprocessed:  # throttled: MTurk did not send it
                    requested.discard(index)
                    call.checkpoint(requested=sorted(requested))
                raise
            failures = [
                {
                    "worker_id": str(f.get("WorkerId", "")),
                    "code": str(f.get("NotifyWorkersFailureCode", "")),
                    "message": str(f.get("NotifyWorkersFailureMessage", ""))[:300],
                }
                for f in answer.get("NotifyWorkersFailureStatuses") or []
            ]
            for f in failures:
                who = short_worker(f["worker_id"])
                logger.info("mturk: message to %s failed: %s", who, f["code"])
            done[index] = {"workers": len(chunk), "failures": failures}
            call.checkpoint(chunks=dict(done))
        failures = [f for c in done.values() for f in c.get("failures", [])]
        unknown = sum(c["workers"] for c in done.values() if c.get("unknown"))
        return {
            "chunks": done,
            "requested": sorted(requested),
            "sent": len(ids) - len(failures) - unknown,
            "failures": failures,
            "unknown": unknown,
        }

    # --- qualification types ---------------------------------------------------------------

    def _qualification_find(self, name: str) -> str | None:
        for page in self.client.pages(
            "list_qualification_types",
            "QualificationTypes",
            Query=name,
            MustBeRequestable=False,
            MustBeOwnedByCaller=True,
        ):
            for qt in page:
                if qt.get("Name") == name:
                    return str(qt["QualificationTypeId"])
        return None

    def create_qualification_type(self, call: OperationCall) -> dict[str, Any]:
        """``CreateQualificationType`` once (names are unique per requester: a name MTurk
        already has is found by ``ListQualificationTypes``). With ``test`` (QuestionForm
        XML) and ``answer_key`` (AnswerKey XML) MTurk scores the quiz itself."""
        found = call.result.get("qualification_type_id") or call.payload.get("group_id")
        if found:
            return {"qualification_type_id": found, "group_id": found}
        p = call.payload
        name = check_text(p.get("name") or p.get("group_name"), "Name", maximum=1000)
        params: dict[str, Any] = {
            "Name": name,
            "Description": check_text(p.get("description") or name, "Description", maximum=2000),
            "QualificationTypeStatus": "Active",
        }
        if p.get("keywords"):
            params["Keywords"] = check_text(p["keywords"], "Keywords", maximum=1000)
        if p.get("retry_delay_seconds") is not None:
            params["RetryDelayInSeconds"] = int(p["retry_delay_seconds"])
        if p.get("test"):
            params["Test"] = str(p["test"])
            params["TestDurationInSeconds"] = int(p.get("test_duration_seconds", 600))
            if p.get("answer_key"):
                params["AnswerKey"] = str(p["answer_key"])
        elif p.get("answer_key"):
            raise PermanentProviderError("An answer key needs a test (QuestionForm XML).")
        if p.get("auto_granted"):
            params["AutoGranted"] = True
            params["AutoGrantedValue"] = int(p.get("auto_granted_value", 1))
        qid = self._qualification_find(name) if call.attempts > 1 or call.recovering else None
        if qid is None:
            try:
                answer = self.client.call("create_qualification_type", **params)
                qid = str(answer["QualificationType"]["QualificationTypeId"])
            except PermanentProviderError:
                qid = self._qualification_find(name)
                if qid is None:
                    raise
        call.checkpoint(qualification_type_id=qid)
        return {"qualification_type_id": qid, "group_id": qid}

    def _qualification(self, call: OperationCall) -> str:
        qid = call.payload.get("group_id") or call.result.get("group_id")
        if qid:
            return check_id(qid, "Qualification type")
        qid = self.create_qualification_type(call)["qualification_type_id"]
        call.checkpoint(group_id=qid)
        return str(qid)

    def grant_qualification(self, call: OperationCall) -> dict[str, Any]:
        """``AssociateQualificationWithWorker`` (the type made first when it has no MTurk id)."""
        worker = check_worker_id(call.payload.get("participant_id"))
        qid = self._qualification(call)
        self.client.call(
            "associate_qualification_with_worker",
            QualificationTypeId=qid,
            WorkerId=worker,
            IntegerValue=int(call.payload.get("value", 1)),
            SendNotification=bool(call.payload.get("send_notification", False)),
        )
        return {"group_id": qid, "member": True}

    def revoke_qualification(self, call: OperationCall) -> dict[str, Any]:
        """``DisassociateQualificationFromWorker``; a worker without it is done too."""
        worker = check_worker_id(call.payload.get("participant_id"))
        qid = self._qualification(call)
        reason = check_text(
            call.payload.get("reason") or "", "Reason", maximum=REASON_MAX, required=False
        )
        try:
            self.client.call(
                "disassociate_qualification_from_worker",
                QualificationTypeId=qid,
                WorkerId=worker,
                **({"Reason": reason} if reason else {}),
            )
        except PermanentProviderError as exc:
            if "does not" not in str(exc).lower() and "not found" not in str(exc).lower():
                raise
        return {"group_id": qid, "member": False}

    # --- blocks ----------------------------------------------------------------------------

    def block(self, call: OperationCall) -> dict[str, Any]:
        """``CreateWorkerBlock`` (MTurk needs a reason; the worker does not see it)."""
        return self._block_set(call, blocked=True, default_reason="Blocked by the requester.")

    def unblock(self, call: OperationCall) -> dict[str, Any]:
        """``DeleteWorkerBlock`` (deleting a block that is not there succeeds on MTurk)."""
        return self._block_set(call, blocked=False, default_reason="Block lifted.")

    def _block_set(
        self, call: OperationCall, *, blocked: bool, default_reason: str
    ) -> dict[str, Any]:
        """Create (``blocked``) or delete the block of the payload's ``participant_id``,
        with the payload's ``reason`` (else ``default_reason``)."""
        worker = check_worker_id(call.payload.get("participant_id"))
        reason = check_text(
            call.payload.get("reason") or default_reason, "Reason", maximum=REASON_MAX
        )
        operation = "create_worker_block" if blocked else "delete_worker_block"
        self.client.call(operation, WorkerId=worker, Reason=reason)
        return {"blocked": blocked}
