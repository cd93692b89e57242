"""The provider interface: every crowd platform is one implementation of it.

Nothing outside ``campaigns/platforms/`` talks to a platform. A provider also
owns its fee model, so cost estimates and the ledger agree with the platform.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, ClassVar

from campaigns.design.platform import FeeModel


class NoFees(FeeModel):
    def assignment_fee(self, *, reward: Decimal, max_assignments: int) -> Decimal:
        return Decimal("0.00")

    def bonus_fee(self, *, amount: Decimal) -> Decimal:
        return Decimal("0.00")


# --- Operations: the state-changing calls every provider carries out -------------------


class ProviderError(Exception):
    """A platform call failed. ``str(error)`` is safe to show and to store (no secrets)."""


class TransientProviderError(ProviderError):
    """Worth retrying: throttling, a 5xx, a dropped connection, an effect not yet visible.

    ``retry_after`` (seconds), when the platform said how long to wait. ``unprocessed``
    when the platform surely did not act on the call (a 429, a connection never made),
    so even a call that is not idempotent may be repeated. ``waiting``: nothing went
    wrong, the platform is still doing what it accepted (an asynchronous bulk approval
    or payment); such a retry does not count toward the operation's attempts, only
    toward ``PROVIDER_OPERATION_MAX_WAIT_SECONDS``.
    """

    def __init__(
        self,
        message: str,
        *,
        retry_after: float | None = None,
        unprocessed: bool = False,
        waiting: bool = False,
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.unprocessed = unprocessed
        self.waiting = waiting


class PermanentProviderError(ProviderError):
    """Retrying cannot help (invalid request, refused by the platform): the operation fails."""


@dataclass
class OperationCall:
    """What a provider gets to carry out one ``ProviderOperation``.

    ``result`` holds what earlier attempts recorded with ``checkpoint``: a provider
    whose effect takes several platform calls (Prolific: create a study, then publish
    it; set up a bonus, then pay it) checkpoints each step's ids before taking the next
    one, so a retry after a crash resumes instead of repeating a step.
    ``recovering`` is set when the operation was left ``running`` (a crash, a lost
    worker): the effect may already exist on the platform, so look before repeating.
    """

    operation_id: int
    kind: str
    key: str
    payload: dict[str, Any]
    result: dict[str, Any] = field(default_factory=dict)
    attempts: int = 1
    recovering: bool = False
    _save: Callable[[dict[str, Any]], None] | None = None

    def checkpoint(self, **values: Any) -> None:
        """Record ``values`` in the operation's result now, in its own commit."""
        self.result.update(values)
        if self._save is not None:
            self._save(dict(self.result))


@dataclass(frozen=True)
class SubmissionRecord:
    """One platform submission as a sync reads it (Prolific: a submission of a study)."""

    provider_assignment_id: str
    participant_id: str
    status: str
    started_at: str | None = None
    completed_at: str | None = None
    entered_code: str | None = None
    bonus_payments: tuple[int, ...] = ()


class OperationsMixin:
    """Every operation kind a provider carries out, each ``(call) -> result dict``.

    Each method either completes the effect and returns what to record (ids, counts),
    or raises ``TransientProviderError`` (retried with backoff) or
    ``PermanentProviderError`` (the operation fails with the message as its reason).
    Implementations are idempotent per ``call.key``: carrying out the same call twice
    has the effect once (by the platform's own idempotency, or by checkpoints and a
    look at the platform when ``call.recovering``).
    """

    # OperationKind value -> method name.
    OPERATION_METHODS: ClassVar[dict[str, str]] = {
        "create_hit": "publish_hits",
        "create_study": "publish_hits",
        # A study is created (and published) by create_study; publish_study re-starts a
        # paused one (Prolific's START), pause_study / stop_study pause or stop it.
        "publish_study": "study_transition",
        "add_assignments": "add_assignments",
        "approve": "approve",
        "reject": "reject",
        "bonus": "bonus",
        "notify": "notify",
        "grant": "grant_qualification",
        "revoke": "revoke_qualification",
        "block": "block",
        "unblock": "unblock",
        "expire": "expire",
        "pause_study": "study_transition",
        "stop_study": "study_transition",
    }

    def execute(self, call: OperationCall) -> dict[str, Any]:
        """Carry out ``call`` with the method for its kind."""
        name = self.OPERATION_METHODS.get(call.kind)
        if name is None:
            raise PermanentProviderError(f"Operation kind {call.kind!r} is not supported.")
        method: Callable[[OperationCall], dict[str, Any]] = getattr(self, name)
        return method(call)

    def publish_hits(self, call: OperationCall) -> dict[str, Any]:
        """Publish a stage's HITs (payload: ``stage_id``, ``hit_ids``); returns platform ids."""
        raise PermanentProviderError(f"{type(self).__name__} cannot publish HITs.")

    def add_assignments(self, call: OperationCall) -> dict[str, Any]:
        """More places on a published HIT (payload: ``hit_id``, ``count``)."""
        raise PermanentProviderError(f"{type(self).__name__} cannot add assignments.")

    def approve(self, call: OperationCall) -> dict[str, Any]:
        """Approve (and so pay) an assignment (payload: ``assignment_id``, platform ids), or
        several at once (payload: ``assignment_ids``, ``submission_ids``)."""
        raise PermanentProviderError(f"{type(self).__name__} cannot approve.")

    def reject(self, call: OperationCall) -> dict[str, Any]:
        """Reject an assignment (payload: ``assignment_id``, ``reason``, ``feedback``, …)."""
        raise PermanentProviderError(f"{type(self).__name__} cannot reject.")

    def bonus(self, call: OperationCall) -> dict[str, Any]:
        """Pay a bonus once (payload: ``assignment_id``, ``amount``, platform ids)."""
        raise PermanentProviderError(f"{type(self).__name__} cannot pay bonuses.")

    def notify(self, call: OperationCall) -> dict[str, Any]:
        """Send a message to workers (payload: ``worker_ids``, ``subject``, ``body``)."""
        raise PermanentProviderError(f"{type(self).__name__} cannot send messages.")

    def grant_qualification(self, call: OperationCall) -> dict[str, Any]:
        """Grant a qualification (payload: ``qualification_type_id``, ``worker_id``)."""
        raise PermanentProviderError(f"{type(self).__name__} cannot grant qualifications.")

    def revoke_qualification(self, call: OperationCall) -> dict[str, Any]:
        """Revoke a qualification (payload: ``qualification_type_id``, ``worker_id``)."""
        raise PermanentProviderError(f"{type(self).__name__} cannot revoke qualifications.")

    def block(self, call: OperationCall) -> dict[str, Any]:
        """Block a worker from the requester's work (payload: ``worker_id``, ``owner_id``)."""
        raise PermanentProviderError(f"{type(self).__name__} cannot block workers.")

    def unblock(self, call: OperationCall) -> dict[str, Any]:
        """Lift a block (payload: ``worker_id``, ``owner_id``)."""
        raise PermanentProviderError(f"{type(self).__name__} cannot unblock workers.")

    def expire(self, call: OperationCall) -> dict[str, Any]:
        """Stop taking work (payload: ``hit_ids`` or ``study_id``; ``mode`` pause/stop)."""
        raise PermanentProviderError(f"{type(self).__name__} cannot expire HITs.")

    def study_transition(self, call: OperationCall) -> dict[str, Any]:
        """Pause, re-start or stop a study (payload: ``study_id``, ``action`` PAUSE/START/STOP)."""
        raise PermanentProviderError(f"{type(self).__name__} has no studies to pause or stop.")

    def sync_submissions(self, *, study_id: str) -> list[SubmissionRecord]:
        """Read the platform's submissions of a study / HIT group (no state changes)."""
        return []


class Provider(OperationsMixin, ABC):
    """One crowd platform: its fee model and the operations of ``OperationsMixin``.

    Only ``campaigns.platforms.operations`` calls ``execute``; everything else asks for
    an effect by writing a ``ProviderOperation`` (``operation_request``).
    """

    name: ClassVar[str]
    currency: ClassVar[str] = "USD"
    fee_model: ClassVar[FeeModel]
    moves_money: ClassVar[bool] = True
