"""Mechanical Turk behind the provider interface: HIT types, HITs, sync reads.

Mapping (docs/providers.md has the whole of it):
- a publication of a stage's HITs is one ``create_hit`` operation: one HIT type
  (``CreateHITType``, its id checkpointed), then one MTurk HIT per qaportal HIT
  (``CreateHITWithHITType`` with an ExternalQuestion pointing at qaportal's worker
  page); each HIT's ``UniqueRequestToken`` and ``RequesterAnnotation`` derive from
  the operation key and the qaportal HIT id, so a retry never makes a second HIT;
- an assignment is an MTurk assignment (``AssignmentId`` is
  ``Assignment.provider_assignment_id``); review, bonuses, messages, qualifications
  and blocks are in ``review`` and ``workers``.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, ClassVar

from django.conf import settings

from campaigns.platforms.base import (
    OperationCall,
    OperationsMixin,
    PermanentProviderError,
    Provider,
    ProviderError,
    SubmissionRecord,
    TransientProviderError,
)
from campaigns.platforms.mturk.checks import (
    ANNOTATION_PREFIX,
    annotation,
    check_id,
    check_money,
    check_text,
    request_token,
)
from campaigns.platforms.mturk.client import AlreadyProcessedError, MTurkClient
from campaigns.platforms.mturk.fees import MTurkFees
from campaigns.platforms.mturk.review import ReviewMixin
from campaigns.platforms.mturk.workers import WorkersMixin
from campaigns.platforms.mturk.xml import MASTERS, answers_parse

logger = logging.getLogger(__name__)

# MTurk forgets a UniqueRequestToken after 24 hours; past this, look before creating.
TOKEN_MEMORY = timedelta(hours=23)
CHECKPOINT_EVERY = 25  # HITs created between two checkpoints of a publication
HIT_STATUSES_SUBMITTED = ("Submitted", "Approved", "Rejected")


def _now() -> datetime:
    return datetime.now(UTC)


def _iso(value: Any) -> str | None:
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    return str(value) if value else None


class MTurkProvider(ReviewMixin, WorkersMixin, Provider):
    """Amazon Mechanical Turk's requester API through ``MTurkClient`` (boto3)."""

    name = "mturk"
    fee_model = MTurkFees()
    OPERATION_METHODS: ClassVar[dict[str, str]] = {
        **OperationsMixin.OPERATION_METHODS,
        "create_hit_type": "create_hit_type",
        "create_qualification_type": "create_qualification_type",
    }

    def __init__(self, client: MTurkClient) -> None:
        self.client = client

    @classmethod
    def from_settings(cls) -> MTurkProvider:
        key_id = getattr(settings, "MTURK_ACCESS_KEY_ID", "")
        secret = getattr(settings, "MTURK_SECRET_ACCESS_KEY", "")
        if not key_id or not secret:
            raise PermanentProviderError(
                "MTURK_ACCESS_KEY_ID and MTURK_SECRET_ACCESS_KEY are not set."
            )
        return cls.from_credentials(access_key_id=key_id, secret_access_key=secret)

    @classmethod
    def from_credentials(cls, *, access_key_id: str, secret_access_key: str) -> MTurkProvider:
        """A provider acting with these AWS keys (a campaign's own, or the environment's);
        endpoint, sandbox and retries come from the environment."""
        client = MTurkClient(
            access_key_id=access_key_id,
            secret_access_key=secret_access_key,
            sandbox=bool(getattr(settings, "MTURK_SANDBOX", True)),
            endpoint_url=getattr(settings, "MTURK_ENDPOINT_URL", ""),
            max_attempts=int(getattr(settings, "MTURK_MAX_ATTEMPTS", 3)),
            retry_mode=str(getattr(settings, "MTURK_RETRY_MODE", "adaptive")),
            connect_timeout=float(getattr(settings, "MTURK_CONNECT_TIMEOUT", 5)),
            read_timeout=float(getattr(settings, "MTURK_TIMEOUT", 20)),
            retries=int(getattr(settings, "MTURK_RETRIES", 4)),
            backoff_base=float(getattr(settings, "MTURK_BACKOFF_BASE", 1)),
        )
        return cls(client)

    # --- money ---------------------------------------------------------------------------

    def balance_check(self, *, needed: Decimal, what: str) -> Decimal:
        """Refuse (``PermanentProviderError``) when the account holds less than ``needed``."""
        answer = self.client.call("get_account_balance")
        available = Decimal(str(answer.get("AvailableBalance", "0")))
        if available < needed:
            raise PermanentProviderError(
                f"{what} needs {needed:.2f} USD; the MTurk account has {available:.2f} USD "
                "available. Add funds (prepaid balance) and retry."
            )
        return available

    # --- HIT types and HITs --------------------------------------------------------------

    @staticmethod
    def _hit_type_params(hit_type: dict[str, Any]) -> dict[str, Any]:
        duration = int(hit_type["AssignmentDurationInSeconds"])
        if not 30 <= duration <= 31536000:
            raise PermanentProviderError("Assignment duration must be 30 s to 365 days on MTurk.")
        params: dict[str, Any] = {
            "Title": check_text(hit_type.get("Title"), "Title", maximum=128, newlines=False),
            "Description": check_text(hit_type.get("Description"), "Description", maximum=2000),
            "Reward": check_money(hit_type.get("Reward"), "Reward"),
            "AssignmentDurationInSeconds": duration,
            "AutoApprovalDelayInSeconds": int(hit_type.get("AutoApprovalDelayInSeconds", 259200)),
        }
        keywords = check_text(
            hit_type.get("Keywords"), "Keywords", maximum=1000, required=False, newlines=False
        )
        if keywords:
            params["Keywords"] = keywords
        quals = list(hit_type.get("QualificationRequirements") or [])
        for q in quals:
            check_id(q.get("QualificationTypeId"), "Qualification type")
        if quals:
            params["QualificationRequirements"] = quals
        return params

    def create_hit_type(self, call: OperationCall) -> dict[str, Any]:
        """``CreateHITType`` (MTurk answers the same id for the same properties)."""
        if call.result.get("hit_type_id"):
            return dict(call.result)
        params = self._hit_type_params(call.payload["hit_type"])
        answer = self.client.call("create_hit_type", **params)
        hit_type_id = check_id(answer["HITTypeId"], "HIT type")
        call.checkpoint(hit_type_id=hit_type_id)
        return dict(call.result)

    def _hits_by_annotation(self) -> dict[str, dict[str, Any]]:
        """Every HIT of the account that qaportal made, by its RequesterAnnotation."""
        found: dict[str, dict[str, Any]] = {}
        for page in self.client.pages("list_hits", "HITs"):
            for hit in page:
                note = str(hit.get("RequesterAnnotation") or "")
                if note.startswith(ANNOTATION_PREFIX):
                    found[note] = hit
        return found

    def publish_hits(self, call: OperationCall) -> dict[str, Any]:
        """Create the stage's HIT type, then one MTurk HIT per qaportal HIT, each once.

        Payload (``publish_payload``): ``hit_type``, ``hit_ids``, ``max_assignments``,
        ``lifetime_seconds``, ``question``. Each HIT carries a UniqueRequestToken and a
        RequesterAnnotation from the key and its qaportal id: MTurk refuses a token it
        has seen (then the HIT is found by its annotation), and an operation recovering
        after MTurk forgot its tokens (24 h) lists the account's HITs before creating.
        The HITs made are checkpointed every ``CHECKPOINT_EVERY``. Balance checked first.
        If MTurk refuses a HIT after others were made, the operation is done with those
        (``refused``: the qaportal HITs left pending, ``error``: MTurk's message), so the
        live ones are recorded and a later publication takes only the rest.
        """
        payload = call.payload
        hit_ids = [int(h) for h in payload.get("hit_ids", [])]
        if not call.result.get("started_at"):
            call.checkpoint(started_at=_now().isoformat())
        hit_type_id = call.result.get("hit_type_id") or self.create_hit_type(call)["hit_type_id"]
        made: dict[str, dict[str, Any]] = dict(call.result.get("hits") or {})
        remaining = [h for h in hit_ids if str(h) not in made]
        max_assignments = int(payload.get("max_assignments", 1))
        lifetime = int(payload.get("lifetime_seconds", 7 * 86400))
        question = str(payload["question"])
        if remaining:
            self._publish_balance_check(payload, count=len(remaining))
        started = datetime.fromisoformat(call.result["started_at"])
        known: dict[str, dict[str, Any]] | None = None
        if remaining and (call.recovering or call.attempts > 1) and _now() - started > TOKEN_MEMORY:
            known = self._hits_by_annotation()
        since_checkpoint = 0
        try:
            for pk in remaining:
                note = annotation(call.key, pk)
                hit = known.get(note) if known is not None else None
                if hit is None:
                    try:
                        hit = self.client.call(
                            "create_hit_with_hit_type",
                            HITTypeId=hit_type_id,
                            MaxAssignments=max_assignments,
                            LifetimeInSeconds=lifetime,
                            Question=question,
                            RequesterAnnotation=note,
                            UniqueRequestToken=request_token(call.key, pk),
                        )["HIT"]
                    except AlreadyProcessedError:
                        if known is None:
                            known = self._hits_by_annotation()
                        hit = known.get(note)
                        if hit is None:
                            raise TransientProviderError(
                                f"MTurk has a HIT for qaportal HIT {pk} but does not list it yet."
                            ) from None
                    except PermanentProviderError as exc:
                        if not made:
                            raise
                        # Some HITs are live: keep them (done), leave the rest pending.
                        refused = [h for h in remaining if str(h) not in made]
                        logger.error("mturk: publication %s stopped: %s", call.key, exc)
                        call.checkpoint(hits=dict(made), refused=refused, error=str(exc))
                        return {
                            "hit_type_id": hit_type_id,
                            "published": True,
                            "hits": made,
                            "refused": refused,
                            "error": str(exc),
                            "started_at": call.result["started_at"],
                        }
                made[str(pk)] = {
                    "provider_hit_id": check_id(hit["HITId"], "HIT"),
                    "group_id": str(hit.get("HITTypeId") or hit_type_id),
                }
                since_checkpoint += 1
                if since_checkpoint >= CHECKPOINT_EVERY:
                    call.checkpoint(hits=dict(made))
                    since_checkpoint = 0
        except ProviderError:
            if since_checkpoint:  # keep what was made before this attempt gives up
                call.checkpoint(hits=dict(made))
            raise
        if since_checkpoint:
            call.checkpoint(hits=dict(made))
        return {
            "hit_type_id": hit_type_id,
            "published": True,
            "hits": made,
            "started_at": call.result["started_at"],
        }

    def _publish_balance_check(self, payload: dict[str, Any], *, count: int) -> None:
        reward = Decimal(check_money(payload["hit_type"].get("Reward"), "Reward"))
        places = int(payload.get("max_assignments", 1))
        quals = payload["hit_type"].get("QualificationRequirements") or []
        masters = any(q.get("QualificationTypeId") in MASTERS.values() for q in quals)
        fee = MTurkFees(masters=masters).assignment_fee(reward=reward, max_assignments=places)
        self.balance_check(needed=(reward + fee) * places * count, what=f"Publishing {count} HITs")

    def add_assignments(self, call: OperationCall) -> dict[str, Any]:
        """``CreateAdditionalAssignmentsForHIT`` once (UniqueRequestToken from the key)."""
        hit_id = check_id(call.payload.get("provider_hit_id"), "HIT")
        count = int(call.payload.get("count", 1))
        if not 1 <= count <= 1000000000:
            raise PermanentProviderError("Add between 1 and 1,000,000,000 assignments.")
        hit = self.client.call("get_hit", HITId=hit_id)["HIT"]
        reward = Decimal(str(hit.get("Reward", "0")))
        total = int(hit.get("MaxAssignments", 1)) + count
        fee = MTurkFees().assignment_fee(reward=reward, max_assignments=total)
        if not call.result.get("requested"):
            self.balance_check(needed=(reward + fee) * count, what="These assignments")
            call.checkpoint(requested=True)
        with contextlib.suppress(AlreadyProcessedError):  # an earlier attempt added them
            self.client.call(
                "create_additional_assignments_for_hit",
                HITId=hit_id,
                NumberOfAdditionalAssignments=count,
                UniqueRequestToken=request_token(call.key),
            )
        return {"added": count, "provider_hit_id": hit_id}

    def expire(self, call: OperationCall) -> dict[str, Any]:
        """Move HITs' expiry (``UpdateExpirationForHIT``): to the past (``mode`` pause or
        stop; workers holding an assignment may still submit), or with ``mode`` resume
        to ``expire_at[hit]``. Safe to repeat; progress is checkpointed per HIT."""
        ids = call.payload.get("provider_hit_ids") or [call.payload.get("provider_hit_id")]
        hit_ids = [check_id(h, "HIT") for h in ids]
        resume = call.payload.get("mode") == "resume"
        until = call.payload.get("expire_at") or {}
        done = set(call.result.get("updated") or [])
        for hit_id in hit_ids:
            if hit_id in done:
                continue
            when = datetime(2015, 1, 1, tzinfo=UTC)
            if resume:
                if hit_id not in until:
                    continue
                when = datetime.fromisoformat(until[hit_id])
            self.client.call("update_expiration_for_hit", HITId=hit_id, ExpireAt=when)
            done.add(hit_id)
            call.checkpoint(updated=sorted(done))
        return {"updated": sorted(done), "mode": call.payload.get("mode", "stop")}

    # --- reads ---------------------------------------------------------------------------

    def reviewable_hits(self, *, hit_type_id: str | None = None) -> Iterator[list[str]]:
        """Pages of the ids of HITs MTurk holds as Reviewable (optionally of one HIT type)."""
        params: dict[str, Any] = {"Status": "Reviewable"}
        if hit_type_id:
            params["HITTypeId"] = check_id(hit_type_id, "HIT type")
        for page in self.client.pages("list_reviewable_hits", "HITs", **params):
            yield [str(h["HITId"]) for h in page]

    def assignments_page(
        self, *, hit_id: str, token: str | None = None
    ) -> tuple[list[dict[str, Any]], str | None]:
        """One page (≤100) of a HIT's submitted / approved / rejected assignments, as
        ``assignment_record`` dicts, and the next page's token."""
        items, next_token = self.client.page(
            "list_assignments_for_hit",
            "Assignments",
            token=token,
            HITId=check_id(hit_id, "HIT"),
            AssignmentStatuses=list(HIT_STATUSES_SUBMITTED),
        )
        return [assignment_record(a) for a in items], next_token

    def sync_submissions(self, *, study_id: str) -> list[SubmissionRecord]:
        """Every assignment of HIT ``study_id`` (an MTurk HITId) as SubmissionRecords."""
        records: list[SubmissionRecord] = []
        token: str | None = None
        while True:
            page, token = self.assignments_page(hit_id=study_id, token=token)
            records.extend(
                SubmissionRecord(
                    provider_assignment_id=r["assignment_id"],
                    participant_id=r["worker_id"],
                    status=r["status"],
                    started_at=r["accept_time"],
                    completed_at=r["submit_time"],
                )
                for r in page
            )
            if not token:
                return records


def assignment_record(raw: dict[str, Any]) -> dict[str, Any]:
    """An MTurk Assignment as plain data: ids, status, times, work seconds, parsed answers."""
    accept, submit = raw.get("AcceptTime"), raw.get("SubmitTime")
    work = None
    if isinstance(accept, datetime) and isinstance(submit, datetime):
        work = max(0, int((submit - accept).total_seconds()))
    try:
        answers: dict[str, Any] | None = answers_parse(raw.get("Answer"))
        answer_error = ""
    except ValueError as exc:
        answers, answer_error = None, str(exc)
    return {
        "assignment_id": str(raw["AssignmentId"]),
        "worker_id": str(raw.get("WorkerId", "")),
        "hit_id": str(raw.get("HITId", "")),
        "status": str(raw.get("AssignmentStatus", "")),
        "accept_time": _iso(accept),
        "submit_time": _iso(submit),
        "approval_time": _iso(raw.get("ApprovalTime")),
        "rejection_time": _iso(raw.get("RejectionTime")),
        "work_seconds": work,
        "answers": answers,
        "answer_error": answer_error,
    }
