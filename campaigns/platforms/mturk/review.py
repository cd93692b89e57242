"""MTurk review and money: approve, reject, bonus (a mixin of ``MTurkProvider``).

Approving or rejecting twice is refused by MTurk ("This operation can be called with
a status of: Submitted"); a refusal is done when ``GetAssignment`` shows the wanted
status already (an earlier attempt whose answer was lost). A bonus carries a
UniqueRequestToken from the operation key, so MTurk pays it once; past MTurk's 24-hour
memory of tokens, the assignment's bonus payments are counted before paying again.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from campaigns.platforms.base import OperationCall, PermanentProviderError
from campaigns.platforms.mturk.checks import (
    FEEDBACK_MAX,
    REASON_MAX,
    check_id,
    check_money,
    check_text,
    check_worker_id,
    request_token,
)
from campaigns.platforms.mturk.client import AlreadyProcessedError
from campaigns.platforms.mturk.fees import MTurkFees

if TYPE_CHECKING:
    from campaigns.platforms.mturk.client import MTurkClient

TOKEN_MEMORY = timedelta(hours=23)
CHECKPOINT_EVERY = 25


class ReviewMixin:
    client: MTurkClient

    def balance_check(self, *, needed: Decimal, what: str) -> Decimal:
        raise NotImplementedError

    def _status(self, assignment_id: str) -> str:
        answer = self.client.call("get_assignment", AssignmentId=assignment_id)
        return str((answer.get("Assignment") or {}).get("AssignmentStatus", ""))

    def _decide(self, assignment_id: str, *, approve: bool, feedback: str) -> None:
        wanted = "Approved" if approve else "Rejected"
        params: dict[str, Any] = {"AssignmentId": assignment_id}
        if feedback:
            params["RequesterFeedback"] = feedback
        try:
            self.client.call("approve_assignment" if approve else "reject_assignment", **params)
        except PermanentProviderError:
            if self._status(assignment_id) != wanted:
                raise

    @staticmethod
    def _feedback(call: OperationCall, *, required: bool) -> str:
        text = call.payload.get("feedback") or call.payload.get("message") or ""
        return check_text(text, "Feedback to the worker", maximum=FEEDBACK_MAX, required=required)

    def approve(self, call: OperationCall) -> dict[str, Any]:
        """``ApproveAssignment`` of ``submission_id``, or of each of ``submission_ids``.

        A bulk approval checkpoints the approved ids as it goes (``pay_requested`` first:
        if it fails half-way, the ledger stays committed for a person to check).
        """
        feedback = self._feedback(call, required=False)
        if "submission_ids" not in call.payload:
            assignment_id = check_id(call.payload.get("submission_id"), "Assignment")
            call.checkpoint(pay_requested=True)
            try:
                self._decide(assignment_id, approve=True, feedback=feedback)
            except PermanentProviderError:
                call.checkpoint(pay_requested=False)  # MTurk shows it not approved: no money
                raise
            return {"approved": 1, "submission_id": assignment_id, "pay_requested": True}
        ids = [check_id(i, "Assignment") for i in call.payload["submission_ids"]]
        done = set(call.result.get("approved_ids") or [])
        call.checkpoint(pay_requested=True)
        failures: dict[str, str] = {}
        pending = 0
        for assignment_id in ids:
            if assignment_id in done:
                continue
            try:
                self._decide(assignment_id, approve=True, feedback=feedback)
            except PermanentProviderError as exc:
                failures[assignment_id] = str(exc)
                continue
            done.add(assignment_id)
            pending += 1
            if pending >= CHECKPOINT_EVERY:
                call.checkpoint(approved_ids=sorted(done))
                pending = 0
        call.checkpoint(approved_ids=sorted(done), failures=failures, pay_requested=bool(done))
        if failures:
            raise PermanentProviderError(
                f"MTurk refused {len(failures)} of {len(ids)} approvals: "
                + "; ".join(f"{k}: {v}" for k, v in sorted(failures.items())[:5])
            )
        return {"approved": len(ids), "submission_ids": ids, "pay_requested": True}

    def reject(self, call: OperationCall) -> dict[str, Any]:
        """``RejectAssignment`` with the feedback the worker reads (required, ≤1024)."""
        assignment_id = check_id(call.payload.get("submission_id"), "Assignment")
        feedback = self._feedback(call, required=True)
        self._decide(assignment_id, approve=False, feedback=feedback)
        return {"rejected": 1, "submission_id": assignment_id}

    def _bonus_count(self, assignment_id: str, amount: str) -> int:
        count = 0
        for page in self.client.pages(
            "list_bonus_payments", "BonusPayments", AssignmentId=assignment_id
        ):
            count += sum(1 for b in page if f"{Decimal(str(b.get('BonusAmount'))):.2f}" == amount)
        return count

    def _bonus_worker(self, call: OperationCall, assignment_id: str) -> str:
        worker = call.payload.get("participant_id") or call.result.get("worker_id")
        if not worker:
            answer = self.client.call("get_assignment", AssignmentId=assignment_id)
            worker = (answer.get("Assignment") or {}).get("WorkerId")
        return check_worker_id(worker)

    def bonus(self, call: OperationCall) -> dict[str, Any]:
        """``SendBonus`` once: UniqueRequestToken from the key; balance checked first.

        ``pay_requested``, the time and the number of equal bonuses already on the
        assignment are checkpointed before paying. A retry within MTurk's token memory
        sends the same token (MTurk pays once and answers "already processed"); later,
        it pays again only if the assignment shows no new bonus of that amount.
        """
        if call.result.get("paid"):
            return dict(call.result)
        assignment_id = check_id(call.payload.get("submission_id"), "Assignment")
        amount = check_money(call.payload.get("amount"), "Bonus")
        reason = check_text(call.payload.get("reason"), "Bonus reason", maximum=REASON_MAX)
        worker_id = self._bonus_worker(call, assignment_id)
        token = request_token(call.key)
        if call.result.get("pay_requested"):
            asked = datetime.fromisoformat(call.result["requested_at"])
            if datetime.now(UTC) - asked > TOKEN_MEMORY:
                if self._bonus_count(assignment_id, amount) > int(call.result.get("before", 0)):
                    call.checkpoint(paid=True, confirmed_by="list_bonus_payments")
                    return dict(call.result)
                call.checkpoint(requested_at=datetime.now(UTC).isoformat())
        else:
            fee = MTurkFees().bonus_fee(amount=Decimal(amount))
            self.balance_check(needed=Decimal(amount) + fee, what="This bonus")
            call.checkpoint(
                pay_requested=True,
                requested_at=datetime.now(UTC).isoformat(),
                before=self._bonus_count(assignment_id, amount),
                worker_id=worker_id,
            )
        try:
            self.client.call(
                "send_bonus",
                WorkerId=worker_id,
                BonusAmount=amount,
                AssignmentId=assignment_id,
                Reason=reason,
                UniqueRequestToken=token,
            )
        except AlreadyProcessedError:
            call.checkpoint(paid=True, confirmed_by="unique_request_token")
            return dict(call.result)
        call.checkpoint(paid=True)
        return dict(call.result)
