"""Prolific behind the provider interface: studies, submissions, bonuses, groups.

Mapping (docs/providers.md has the whole of it):
- a publication of a stage's HITs is one *study*; its places are the HITs' places
  (HITs x assignments), its external URL is qaportal's Prolific entry page;
- an assignment is a *submission*: Prolific passes the submission id as
  ``SESSION_ID``, which becomes ``Assignment.provider_assignment_id``;
- qualifications and blocks are *participant groups* (allow-list / block-list
  filters on studies published later).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any, ClassVar

from django.conf import settings

from campaigns.platforms.base import (
    OperationCall,
    PermanentProviderError,
    Provider,
    SubmissionRecord,
    TransientProviderError,
)
from campaigns.platforms.prolific.client import DEFAULT_API_URL, ProlificClient
from campaigns.platforms.prolific.fees import ProlificFees
from campaigns.platforms.prolific.filters import filter_catalogue
from campaigns.platforms.prolific.rules import FILTER_GROUP_ALLOW, ProlificRules

logger = logging.getLogger(__name__)

COMPLETION_URL = "https://app.prolific.com/submissions/complete?cc={code}"
# The placeholders Prolific replaces in external_study_url (the study object's docs).
ENTRY_QUERY = "PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
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
REJECTION_MESSAGE_MIN = 100  # Prolific refuses shorter rejection messages.
# Submission statuses meaning the participant has finished (or the researcher decided).
DONE_STATUSES = frozenset({"AWAITING REVIEW", "APPROVED", "REJECTED", "PARTIALLY APPROVED"})
# Statuses a submission of a bulk approval can end in that are not an approval.
SUBMISSION_FINAL_OTHER = frozenset({"REJECTED", "RETURNED", "TIMED-OUT", "SCREENED OUT"})
# Study statuses each study transition leads to, and those past which nothing moves.
STUDY_FINISHED = frozenset({"AWAITING REVIEW", "COMPLETED"})
# A study that can take more places: one that recruits (or will, once resumed), and one
# that has finished, which more places make ACTIVE again (update-study:
# "A completed study will become active again and resume recruiting").
STUDY_GROWABLE = frozenset(
    {"ACTIVE", "PAUSED", "SCHEDULED", "PUBLISHING", "AWAITING REVIEW", "COMPLETED"}
)
STUDY_TARGETS: dict[str, frozenset[str]] = {
    "PAUSE": frozenset({"PAUSED"}),
    "START": frozenset({"ACTIVE"}),
    "STOP": STUDY_FINISHED,
}


def short_id(participant_id: str) -> str:
    """A participant id fit for logs: personal data, so never in full."""
    return f"{participant_id[:4]}…" if participant_id else "?"


def pence(amount: Decimal | str) -> int:
    """Money in the study currency's minor unit (Prolific rewards are in pence / cents)."""
    return int((Decimal(str(amount)) * 100).to_integral_value())


# Completion code actions (create-study: ``RequestReturn`` requires ``return_reason``).
RETURN_REASON = "The task could not be offered to you; please return the study."
BULK_APPROVE_MAX = 1000  # submission ids per bulk-approve call


def maximum_allowed_minutes(*, estimated: int, wanted: int) -> int:
    """``maximum_allowed_time`` Prolific accepts: at least 2 + 2·estimate + 2·√estimate
    minutes (estimate 30 → 73), or more when the stage allows more time."""
    least = math.ceil(2 + 2 * estimated + 2 * math.sqrt(estimated))
    return max(wanted, least)


def study_filters(
    requirements: Iterable[Mapping[str, Any]],
    *,
    allow_groups: Iterable[str] = (),
    block_groups: Iterable[str] = (),
    catalogue: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Prolific ``filters`` from a stage's ``qualification_requirements``
    (``ProlificRules.study_filters``: ``RequirementRefused`` for one Prolific cannot
    express, never dropped; country codes resolved through ``catalogue``)."""
    return ProlificRules(catalogue=catalogue).study_filters(
        requirements, allow_groups=allow_groups, block_groups=block_groups
    )


def study_body(
    *,
    key: str,
    name: str,
    description: str,
    stage_id: int,
    places: int,
    reward: Decimal,
    duration_minutes: int,
    estimated_minutes: int | None,
    codes: Mapping[str, str],
    filters: list[dict[str, Any]],
    site_url: str,
    max_per_participant: int = 1,
) -> dict[str, Any]:
    """The JSON of ``POST /api/v1/studies/`` for one publication of a stage.

    ``internal_name`` carries the operation's key: after a crash the study is found
    again by it rather than created twice. ``codes``: ``completed``, ``failed_check``
    and ``screened_out`` completion codes (participants are paid only after review).
    ``max_per_participant`` > 1: a participant may take that many of the study's tasks
    (``submissions_config.max_submissions_per_participant``; left out, Prolific's
    default of one).
    """
    estimated = estimated_minutes or max(1, math.ceil(duration_minutes / 4))
    body: dict[str, Any] = {
        "name": name[:120],
        "internal_name": f"qaportal:{key}"[:255],
        "description": description or name,
        "external_study_url": (
            f"{site_url.rstrip('/')}/work/prolific/?{ENTRY_QUERY}&qa_stage={stage_id}"
        ),
        "prolific_id_option": "url_parameters",
        "completion_codes": [
            {
                "code": codes["completed"],
                "code_type": "COMPLETED",
                "actions": [{"action": "MANUALLY_REVIEW"}],
            },
            {
                "code": codes["failed_check"],
                "code_type": "FAILED_ATTENTION_CHECK",
                "actions": [{"action": "MANUALLY_REVIEW"}],
            },
            {
                "code": codes["screened_out"],
                "code_type": "OTHER",
                "actions": [{"action": "REQUEST_RETURN", "return_reason": RETURN_REASON}],
            },
        ],
        "total_available_places": places,
        "estimated_completion_time": estimated,
        "maximum_allowed_time": maximum_allowed_minutes(
            estimated=estimated, wanted=duration_minutes
        ),
        "reward": pence(reward),
        "device_compatibility": ["desktop"],
        "peripheral_requirements": [],
        "filters": filters,
    }
    if max_per_participant > 1:
        body["submissions_config"] = {"max_submissions_per_participant": max_per_participant}
    return body


class ProlificProvider(Provider):
    """Prolific's API through ``ProlificClient``; see the module docstring for the mapping."""

    name = "prolific"
    currency: ClassVar[str] = "GBP"
    fee_model = ProlificFees(Decimal("0.333"))

    def __init__(self, client: ProlificClient, *, workspace_id: str = "") -> None:
        self.client = client
        self.workspace_id = workspace_id
        self.fee_model = ProlificFees(  # type: ignore[misc]
            Decimal(str(getattr(settings, "PROLIFIC_FEE_RATE", "0.333")))
        )

    @classmethod
    def from_settings(cls) -> ProlificProvider:
        token = getattr(settings, "PROLIFIC_API_TOKEN", "")
        if not token:
            raise PermanentProviderError("PROLIFIC_API_TOKEN is not set.")
        return cls.from_credentials(
            api_token=token, workspace_id=getattr(settings, "PROLIFIC_WORKSPACE_ID", "")
        )

    @classmethod
    def from_credentials(cls, *, api_token: str, workspace_id: str = "") -> ProlificProvider:
        """A provider acting with these credentials (a campaign's own, or the environment's);
        the other client settings come from the environment."""
        client = ProlificClient(
            token=api_token,
            base_url=getattr(settings, "PROLIFIC_API_URL", DEFAULT_API_URL),
            timeout=float(getattr(settings, "PROLIFIC_TIMEOUT", 20)),
            max_retries=int(getattr(settings, "PROLIFIC_MAX_RETRIES", 4)),
            backoff_base=float(getattr(settings, "PROLIFIC_BACKOFF_BASE", 1)),
            backoff_max=float(getattr(settings, "PROLIFIC_BACKOFF_MAX", 30)),
        )
        return cls(client, workspace_id=workspace_id)

    # --- studies ---------------------------------------------------------------------

    def _study_find(self, internal_name: str) -> str | None:
        for study in self.client.studies_list():
            if study.get("internal_name") == internal_name:
                return str(study["id"])
        return None

    def publish_hits(self, call: OperationCall) -> dict[str, Any]:
        """Publish the HITs of ``call.payload["hit_ids"]`` on Prolific.

        - ``grow_study_id`` in the payload (the stage's study already runs): raise that
          study's places by the new HITs' (``PATCH total_available_places`` to a target
          fixed at the first attempt, so a retry sets the same number). A study that has
          finished (AWAITING REVIEW, COMPLETED, stopped) is grown too: more places make
          it ACTIVE again, so a stage keeps one study (Prolific rate-limits many small
          ones). Only a study in another state (a draft, say) gets a new one.
        - otherwise create the study (once: found again by ``internal_name``), then
          publish it; with ``test`` in the payload, publish it to the workspace's test
          participants only (``POST /api/v1/studies/{id}/test-study``), which costs no
          credits, and the HITs belong to the test study Prolific makes.
        """
        hit_ids = call.payload.get("hit_ids", [])
        grow = call.payload.get("grow_study_id")
        if grow and not call.result.get("created"):
            grown = self._study_grow(
                call, str(grow), int(call.payload["study"]["total_available_places"])
            )
            if grown is not None:
                return grown
        body = self._with_new_groups(call, call.payload["study"])
        study_id = call.result.get("study_id") if call.result.get("created") else None
        if not study_id and (call.recovering or call.attempts > 1):
            study_id = self._study_find(body["internal_name"])
        if not study_id:
            study_id = str(self.client.study_create(body)["id"])
        if not call.result.get("created"):
            call.checkpoint(study_id=study_id, created=True)
        if call.payload.get("test"):
            return self._study_test(call, study_id, hit_ids)
        if call.payload.get("publish", True) and not call.result.get("published"):
            status = self.client.study_get(study_id).get("status")
            if status == "UNPUBLISHED":
                self.client.study_transition(study_id, "PUBLISH")
            call.checkpoint(published=True)
        return {
            **call.result,
            "study_id": study_id,
            "published": bool(call.result.get("published")),
            "hits": self._hit_map(study_id, hit_ids),
        }

    def _with_new_groups(self, call: OperationCall, body: dict[str, Any]) -> dict[str, Any]:
        """The study body with the allow-list groups the payload asks to make
        (``allow_groups_to_make``: qualification type id -> group name), found or made
        once each (``groups_made`` checkpointed) before the study is created."""
        wanted = call.payload.get("allow_groups_to_make") or {}
        if not wanted or call.result.get("created"):
            return dict(body)
        made = dict(call.result.get("groups_made") or {})
        for qt_id, name in sorted(wanted.items()):
            if qt_id not in made:
                made[qt_id] = self._group_named(str(name))
                call.checkpoint(groups_made=made)
        filters = [dict(f) for f in body.get("filters") or []]
        allow = next((f for f in filters if f.get("filter_id") == FILTER_GROUP_ALLOW), None)
        if allow is None:
            allow = {"filter_id": FILTER_GROUP_ALLOW, "selected_values": []}
            filters.append(allow)
        allow["selected_values"] = sorted({*allow["selected_values"], *made.values()})
        return {**body, "filters": filters}

    def _group_named(self, name: str) -> str:
        """The id of the workspace's participant group ``name`` (made when missing)."""
        if not self.workspace_id:
            raise PermanentProviderError("PROLIFIC_WORKSPACE_ID is needed for participant groups.")
        for group in self.client.participant_groups(workspace_id=self.workspace_id):
            if group.get("name") == name and not group.get("is_deleted"):
                return str(group["id"])
        made = self.client.participant_group_create(workspace_id=self.workspace_id, name=name)
        return str(made["id"])

    @staticmethod
    def _hit_map(study_id: str, hit_ids: Iterable[Any]) -> dict[str, dict[str, str]]:
        return {
            str(h): {"provider_hit_id": f"{study_id}:{h}", "group_id": study_id} for h in hit_ids
        }

    def _study_grow(self, call: OperationCall, study_id: str, places: int) -> dict[str, Any] | None:
        """More places on a running study for the new HITs; None when it cannot take them."""
        if call.result.get("grow_refused"):
            return None
        target = call.result.get("grow_target")
        if target is None:
            study = self.client.study_get(study_id)
            if study.get("status") not in STUDY_GROWABLE:
                call.checkpoint(grow_refused=str(study.get("status")))
                return None
            target = int(study.get("total_available_places") or 0) + places
            call.checkpoint(grow_target=target)
        answer = self.client.study_update(study_id, {"total_available_places": int(target)})
        call.checkpoint(study_id=study_id, published=True, status=answer.get("status"))
        return {
            **call.result,
            "study_id": study_id,
            "published": True,
            "grown": True,
            "target_places": int(target),
            "hits": self._hit_map(study_id, call.payload.get("hit_ids", [])),
        }

    def _study_test(self, call: OperationCall, draft_id: str, hit_ids: list[Any]) -> dict[str, Any]:
        """Publish the draft to the workspace's test participants (once, checkpointed)."""
        test_id = call.result.get("test_study_id")
        if not test_id:
            answer = self.client.study_test(draft_id)
            test_id = str(answer.get("study_id") or "")
            if not test_id:
                raise PermanentProviderError("Prolific made no test study (no study_id).")
            call.checkpoint(test_study_id=test_id, test_study_url=answer.get("study_url"))
        return {
            **call.result,
            "study_id": test_id,
            "draft_study_id": draft_id,
            "test": True,
            "study_url": call.result.get("test_study_url"),
            "published": True,
            "hits": self._hit_map(test_id, hit_ids),
        }

    def filters(self, *, refresh: bool = False) -> dict[str, Any]:
        """Prolific's filters catalogue for this workspace (cached; ``refresh`` re-reads)."""
        return filter_catalogue(client=self.client, workspace_id=self.workspace_id, refresh=refresh)

    def test_participant_create(self, *, email: str) -> str:
        """``POST /api/v1/researchers/participants/``: a test participant (no cash-out, no
        fraud checks) in the workspace; its participant id. Enabled per workspace."""
        answer = self.client.test_participant_create(email=email)
        participant = answer.get("participant_id") or answer.get("id")
        if not participant:
            raise PermanentProviderError("Prolific returned no participant id.")
        return str(participant)

    def add_assignments(self, call: OperationCall) -> dict[str, Any]:
        """Raise the study's places to an absolute target, fixed at the first attempt."""
        study_id = call.payload["study_id"]
        target = call.result.get("target_places")
        if target is None:
            current = int(self.client.study_get(study_id).get("total_available_places", 0))
            target = current + int(call.payload.get("count", 1))
            call.checkpoint(target_places=target)
        self.client.study_update(study_id, {"total_available_places": target})
        return {"added": int(call.payload.get("count", 1)), "target_places": target}

    def study_transition(self, call: OperationCall) -> dict[str, Any]:
        """``PAUSE``, ``START`` (resume) or ``STOP`` the study; being there already is done.

        Prolific's study transition is safe to repeat once the study is in the target
        state, so the status is read first (and again after a refusal: a retry whose
        first answer was lost). A study that has already finished (all places taken, or
        stopped) is left as it is: pausing or resuming it is done with ``skipped``.
        """
        study_id = call.payload["study_id"]
        action = call.payload["action"]
        if action not in STUDY_TARGETS:
            raise PermanentProviderError(f"Unknown study transition {action!r}.")
        wanted = STUDY_TARGETS[action]
        status = self.client.study_get(study_id).get("status")
        if status in wanted:
            return {"study_id": study_id, "action": action, "status": status}
        if status in STUDY_FINISHED:
            return {"study_id": study_id, "action": action, "status": status, "skipped": True}
        try:
            answer = self.client.study_transition(study_id, action)
        except PermanentProviderError:
            status = self.client.study_get(study_id).get("status")
            if status in wanted:
                return {"study_id": study_id, "action": action, "status": status}
            raise
        return {"study_id": study_id, "action": action, "status": answer.get("status", "")}

    def expire(self, call: OperationCall) -> dict[str, Any]:
        """Pause (``mode`` "pause") or stop the study (``study_transition``)."""
        action = "PAUSE" if call.payload.get("mode") == "pause" else "STOP"
        return self.study_transition(
            OperationCall(
                operation_id=call.operation_id,
                kind=call.kind,
                key=call.key,
                payload={**call.payload, "action": action},
                result=call.result,
                attempts=call.attempts,
                recovering=call.recovering,
            )
        )

    # --- submissions -----------------------------------------------------------------

    def _transition(self, submission_id: str, body: dict[str, Any], status: str) -> dict[str, Any]:
        try:
            answer = self.client.submission_transition(submission_id, body)
        except PermanentProviderError:
            # Already there (a retry after a lost answer): done; anything else is the error.
            if self.client.submission_get(submission_id).get("status") == status:
                return {"submission_id": submission_id, "status": status}
            raise
        return {"submission_id": submission_id, "status": answer.get("status", status)}

    def approve(self, call: OperationCall) -> dict[str, Any]:
        """One submission (``submission_id``) or many at once (``submission_ids``)."""
        if "submission_ids" in call.payload:
            return self._bulk_approve(call)
        return self._transition(call.payload["submission_id"], {"action": "APPROVE"}, "APPROVED")

    def _bulk_approve(self, call: OperationCall) -> dict[str, Any]:
        """``POST /api/v1/submissions/bulk-approve/`` in chunks of at most 1,000 ids, then
        wait for Prolific to have approved them.

        Prolific answers "the request to bulk approve has been made" and approves
        afterwards, so the operation is done (and its effects, the decisions and the
        paid ledger, happen) only once every submission reads ``APPROVED``; until then
        it is retried as waiting (transient). The chunks sent are checkpointed, so a
        retry never asks twice. A refusal of a chunk is done when its submissions all
        read approved already; a submission that ends otherwise (rejected or returned
        on Prolific) fails the operation for a person to look at.
        """
        ids = sorted(str(i) for i in call.payload["submission_ids"])
        if not ids:
            return {"approved": 0}
        chunks = [ids[n : n + BULK_APPROVE_MAX] for n in range(0, len(ids), BULK_APPROVE_MAX)]
        if not call.result.get("pay_requested"):
            # From the first chunk on, money may move: a failure keeps the ledger committed.
            call.checkpoint(pay_requested=True)
        for n in range(int(call.result.get("chunks_sent", 0)), len(chunks)):
            try:
                self.client.submissions_bulk_approve(chunks[n])
            except PermanentProviderError:
                statuses = self._statuses(call, chunks[n])
                if any(statuses.get(i) != "APPROVED" for i in chunks[n]):
                    raise
            call.checkpoint(chunks_sent=n + 1, chunks=len(chunks))
        statuses = self._statuses(call, ids)
        lost = sorted(i for i in ids if statuses.get(i) in SUBMISSION_FINAL_OTHER)
        if lost:
            raise PermanentProviderError(
                f"{len(lost)} submission(s) of the bulk approval ended otherwise on Prolific "
                f"({', '.join(sorted({str(statuses[i]) for i in lost}))}); check them there."
            )
        waiting = [i for i in ids if statuses.get(i) != "APPROVED"]
        if waiting:
            call.checkpoint(waiting=len(waiting))
            raise TransientProviderError(
                f"Prolific is still approving {len(waiting)} of {len(ids)} submissions.",
                retry_after=float(getattr(settings, "PROLIFIC_CONFIRM_AFTER", 30)),
                waiting=True,
            )
        call.checkpoint(waiting=0)
        return {**call.result, "approved": len(ids), "submission_ids": ids}

    def _statuses(self, call: OperationCall, ids: list[str]) -> dict[str, str]:
        """Prolific's status of each submission: read through the studies' submission
        lists when the payload names the studies, else one by one."""
        statuses: dict[str, str] = {}
        wanted = set(ids)
        for study_id in call.payload.get("study_ids") or []:
            for s in self.client.study_submissions(str(study_id)):
                if str(s.get("id")) in wanted:
                    statuses[str(s["id"])] = str(s.get("status", ""))
        for sid in sorted(wanted - set(statuses)):
            statuses[sid] = str(self.client.submission_get(sid).get("status", ""))
        return statuses

    def reject(self, call: OperationCall) -> dict[str, Any]:
        category = call.payload.get("rejection_category", "OTHER")
        message = call.payload.get("message", "")
        if category not in REJECTION_CATEGORIES:
            raise PermanentProviderError(f"Unknown Prolific rejection category {category!r}.")
        if len(message) < REJECTION_MESSAGE_MIN:
            raise PermanentProviderError(
                f"Prolific needs a rejection message of {REJECTION_MESSAGE_MIN}+ characters."
            )
        body = {"action": "REJECT", "message": message, "rejection_category": category}
        return self._transition(call.payload["submission_id"], body, "REJECTED")

    def _bonus_entries(self, submission_id: str) -> list[int]:
        payments = self.client.submission_get(submission_id).get("bonus_payments") or []
        return [round(float(p)) for p in payments]

    def bonus(self, call: OperationCall) -> dict[str, Any]:
        """Set up a bulk bonus for one submission, pay it exactly once, then wait for it.

        Prolific's pay call is not idempotent and pays asynchronously, so: the bulk bonus
        id is checkpointed after set-up; before paying, the number of bonus entries the
        submission already lists and ``pay_requested`` are checkpointed. Prolific's 202
        names the bulk bonus it accepted: ``accepted`` records that it is this
        operation's own id. The operation is done (and the ledger paid) once the
        submission lists the amount among the entries added after that checkpoint, never
        by counting equal amounts, which an earlier bonus of the same amount would match.
        A pay call throttled to the end of the client's retries (429: surely not
        processed) clears ``pay_requested``, so a later attempt pays; any other lost
        answer leaves it set, and a later attempt never pays again: it waits (transient)
        for the entry, and the executor gives up after its bounded attempts, leaving the
        operation failed for a person to check.
        """
        submission_id = call.payload["submission_id"]
        amount = Decimal(call.payload["amount"])
        amount_pence = pence(amount)
        if call.result.get("paid"):
            return dict(call.result)
        if not call.result.get("pay_requested"):
            bulk_id = call.result.get("bulk_bonus_id")
            if not bulk_id:
                setup = self.client.bonus_setup(
                    study_id=call.payload["study_id"], csv_bonuses=f"{submission_id},{amount:.2f}"
                )
                bulk_id = str(setup["id"])
                call.checkpoint(
                    bulk_bonus_id=bulk_id,
                    setup_amount=setup.get("amount"),
                    setup_fees=setup.get("fees"),
                )
            call.checkpoint(
                pay_requested=True, entries_before=len(self._bonus_entries(submission_id))
            )
            try:
                answer = self.client.bonus_pay(bulk_id)
            except TransientProviderError as exc:
                if exc.unprocessed:  # throttled to the end of the client's retries: not paid
                    call.checkpoint(pay_requested=False)
                raise
            if bulk_id not in str(answer or ""):
                raise PermanentProviderError(
                    f"Prolific's answer to paying bulk bonus {bulk_id} names another: check it."
                )
            call.checkpoint(accepted=bulk_id)
        added = self._bonus_entries(submission_id)[int(call.result.get("entries_before", 0)) :]
        if amount_pence in added:
            call.checkpoint(paid=True, confirmed_by="submission.bonus_payments")
            return dict(call.result)
        raise TransientProviderError(
            "Bonus payment requested; waiting for Prolific to show it on the submission.",
            retry_after=float(getattr(settings, "PROLIFIC_CONFIRM_AFTER", 30)),
            # Accepted (the 202 named this bonus): Prolific is paying, a wait. A lost
            # answer is not: its bounded attempts end with a person checking.
            waiting=bool(call.result.get("accepted")),
        )

    def notify(self, call: OperationCall) -> dict[str, Any]:
        """Send one message to the participants, at most once.

        ``POST /api/v1/messages/bulk/`` is not idempotent and Prolific offers no look-up
        of what a bulk message reached, so ``send_requested`` is checkpointed first: a
        later attempt that finds it (the answer was lost, or the worker crashed) never
        sends again and fails the operation for a person to check (a second copy of a
        message is worse than asking). A 429 was surely not processed: the client
        retries it itself.
        """
        if call.result.get("sent") is not None:
            return dict(call.result)
        if call.result.get("send_requested"):
            raise PermanentProviderError(
                "The message may have been sent (Prolific's answer was lost); not sending "
                "it twice. Check the participants' messages on Prolific."
            )
        ids = list(call.payload.get("participant_ids", []))
        subject = call.payload.get("subject", "")
        body = f"{subject}\n\n{call.payload.get('body', '')}" if subject else call.payload["body"]
        call.checkpoint(send_requested=True)
        try:
            self.client.message_bulk(
                participant_ids=ids, body=body, study_id=call.payload["study_id"]
            )
        except TransientProviderError as exc:
            if exc.unprocessed:  # throttled to the end of the client's retries: not sent
                call.checkpoint(send_requested=False)
            raise
        call.checkpoint(sent=len(ids))
        return dict(call.result)

    # --- participant groups ----------------------------------------------------------

    def _group(self, call: OperationCall) -> str:
        group_id = call.payload.get("group_id") or call.result.get("group_id")
        if group_id:
            return str(group_id)
        group_id = self._group_named(str(call.payload["group_name"]))
        call.checkpoint(group_id=group_id)
        return group_id

    def _group_change(self, call: OperationCall, *, add: bool) -> dict[str, Any]:
        group_id = self._group(call)
        ids = [call.payload["participant_id"]]
        if add:
            self.client.participant_group_add(group_id, ids)
        else:
            self.client.participant_group_remove(group_id, ids)
        return {"group_id": group_id, "member": add}

    def grant_qualification(self, call: OperationCall) -> dict[str, Any]:
        return self._group_change(call, add=True)

    def revoke_qualification(self, call: OperationCall) -> dict[str, Any]:
        return self._group_change(call, add=False)

    def block(self, call: OperationCall) -> dict[str, Any]:
        return self._group_change(call, add=True)

    def unblock(self, call: OperationCall) -> dict[str, Any]:
        return self._group_change(call, add=False)

    # --- reads -----------------------------------------------------------------------

    def sync_submissions(self, *, study_id: str) -> list[SubmissionRecord]:
        return [
            SubmissionRecord(
                provider_assignment_id=str(s["id"]),
                participant_id=str(s.get("participant_id") or s.get("participant") or ""),
                status=str(s.get("status", "")),
                started_at=s.get("started_at"),
                completed_at=s.get("completed_at"),
                entered_code=s.get("study_code") or s.get("entered_code"),
                bonus_payments=tuple(round(float(p)) for p in s.get("bonus_payments") or []),
            )
            for s in self.client.study_submissions(study_id)
        ]

    # --- webhooks (api-reference/webhooks: subscribing) ---------------------------------

    HOOK_EVENTS: ClassVar[tuple[str, ...]] = ("study.status.change", "submission.status.change")

    def hooks_setup(self, *, target_url: str, new_secret: bool = False) -> dict[str, Any]:
        """Subscribe ``target_url`` to the study and submission status events of the
        workspace, signed with the workspace's secret and confirmed with each
        subscription's ``X-Hook-Secret``.

        The workspace's signing secret comes first (``get-secrets``; created when there is
        none, or when ``new_secret`` asks for a new one — one active per workspace, the
        old one stops working), returned once as ``secret`` for
        ``PROLIFIC_WEBHOOK_SECRET`` when created. Subscriptions are listed enabled and
        not (the list shows enabled ones only unless ``is_enabled=false`` is asked): an
        enabled one for the same event and URL is kept; an unconfirmed one, whose
        confirmation secret is gone, is deleted and made again, so set-up never leaves
        two subscriptions for one event.
        """
        if not self.workspace_id:
            raise PermanentProviderError("PROLIFIC_WORKSPACE_ID is needed for webhooks.")
        if not target_url.startswith("https://"):
            raise PermanentProviderError("Prolific calls https:// addresses only (SITE_URL).")
        offered = set(self.client.hook_event_types())
        missing = [e for e in self.HOOK_EVENTS if e not in offered]
        if missing:
            raise PermanentProviderError(f"Prolific offers no {', '.join(missing)} events.")
        out: dict[str, Any] = {"subscriptions": []}
        if new_secret or not self.client.hook_secrets(workspace_id=self.workspace_id):
            secret = self.client.hook_secret_create(workspace_id=self.workspace_id)
            out["secret"] = secret.get("value") or secret.get("secret") or ""
        enabled = {
            (h.get("event_type"), h.get("target_url")): h
            for h in self.client.hook_subscriptions(workspace_id=self.workspace_id, is_enabled=True)
        }
        unconfirmed = [
            h
            for h in self.client.hook_subscriptions(
                workspace_id=self.workspace_id, is_enabled=False
            )
            if h.get("target_url") == target_url and h.get("event_type") in self.HOOK_EVENTS
        ]
        for event in self.HOOK_EVENTS:
            found = enabled.get((event, target_url))
            if found is not None:
                out["subscriptions"].append(
                    {"event_type": event, "id": found.get("id"), "new": False}
                )
                continue
            for stale in [h for h in unconfirmed if h.get("event_type") == event]:
                self.client.hook_delete(str(stale["id"]))
            hook, confirm = self.client.hook_subscribe(
                workspace_id=self.workspace_id, event_type=event, target_url=target_url
            )
            if not confirm:
                raise PermanentProviderError("Prolific sent no X-Hook-Secret to confirm with.")
            self.client.hook_confirm(str(hook["id"]), secret=confirm)
            out["subscriptions"].append({"event_type": event, "id": hook.get("id"), "new": True})
        return out
