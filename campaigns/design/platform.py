"""The Platform a campaign runs on: the interface every room may ask, and the lookup.

A campaign's work runs on one platform (the local workforce, Prolific, MTurk).
Rooms below the platforms (design, work, workforce, payments, linking, validation)
never import ``campaigns.platforms`` and never compare provider names: they ask
``platform_for(campaign)`` and call the interface. The implementations live in
``campaigns/platforms/<name>/`` and are registered once, in
``CampaignsConfig.ready()`` (``campaigns.platforms.registry``), so adding a platform
is its own folder plus one registry line.

Money-moving methods say so and take an idempotency ``key``; their locking and
idempotency rules are the implementations' (see ``campaigns.platforms``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from campaigns.design.platform_rules import PlatformRules

if TYPE_CHECKING:  # models only for annotations: the models layer is below this module
    from django.contrib.auth.models import AbstractBaseUser

    from campaigns.models import HIT, Assignment, Campaign, QualificationType, Stage, Worker


class FeeModel(ABC):
    """What a platform charges on top of what workers get (``Decimal``, cents-safe)."""

    @abstractmethod
    def assignment_fee(self, *, reward: Decimal, max_assignments: int) -> Decimal: ...

    @abstractmethod
    def bonus_fee(self, *, amount: Decimal) -> Decimal: ...

    def description(self) -> str:
        """The fee rule in words, for estimates."""
        return ""


@dataclass(frozen=True)
class BonusWanted:
    """One bonus a rule decided (``Platform.bonuses_pay``): paid once per ``key`` to the
    worker of assignment ``assignment_id`` (``worker_id``), with its ``reason``."""

    key: str
    assignment_id: int
    worker_id: int
    amount: Decimal
    reason: str


class Platform(ABC):
    """One crowd platform, as the rest of qaportal sees it."""

    #: The ``Provider`` value campaigns, HITs, workers and operations carry.
    name: str = ""
    #: Money moves on this platform: rewards, fees and bonuses go through the ledger,
    #: and HITs, decisions and payments are platform operations carried out later.
    pays_workers: bool = True
    #: Workers reach the work through qaportal's own invites, grants and logins
    #: (rather than arriving from the platform with an id to verify).
    hosts_workforce: bool = False
    #: How a worker reaches the work pages: "invite" (qaportal's invite links and
    #: logins), "study_url" (a study URL with the participant's ids, Prolific),
    #: "external_question" (an MTurk frame). The simulator enters the same way.
    worker_entry: str = "invite"
    #: A sandbox where no real money moves (MTurk's); Prolific's studies always pay.
    has_sandbox: bool = False

    # --- the platform's rules and money --------------------------------------------------
    def rules(self) -> PlatformRules:
        """What the platform demands of a stage: minimum pay, requirements it can express,
        its currency, whether it has test participants (``design.platform_rules``)."""
        return PlatformRules()

    @property
    def currency(self) -> str:
        """The currency rewards and bonuses are paid in."""
        return self.rules().currency

    @abstractmethod
    def fee_model(self, *, requirements: Iterable[Mapping[str, Any]] | None = None) -> FeeModel:
        """The platform's fees for a stage with these qualification requirements."""

    # --- publishing and following the campaign -------------------------------------------
    @abstractmethod
    def stage_publish(self, *, stage: Stage, allow_partial: bool = True, test: bool = False) -> Any:
        """Publish ``stage``'s pending work on the platform; what was asked of it (an
        operation) or None. ``allow_partial`` False keeps a last, smaller HIT back;
        ``test``: to the platform's test participants only (``rules().test_participants``)."""

    @abstractmethod
    def hits_publish_due(self, *, stage: Stage, force: bool) -> None:
        """Publish hand-off HITs of ``stage`` that wait for the platform (batches)."""

    @abstractmethod
    def campaign_follow(self, *, campaign: Campaign, previous: str, to_state: str) -> None:
        """Make the platform follow the campaign's new state (pause, resume, stop)."""

    @abstractmethod
    def places_add(self, *, hit: HIT, count: int, reason: str, key: str) -> None:
        """Ask the platform for ``count`` more places on published ``hit`` (once per ``key``)."""

    # --- decisions, money to workers, messages, qualifications ---------------------------
    @abstractmethod
    def decision_request(
        self,
        *,
        assignment: Assignment,
        approve: bool,
        decided_by: AbstractBaseUser | None,
        source: str,
        reason: str,
        feedback: str,
    ) -> None:
        """Ask the platform to approve (and pay) or reject ``assignment``, once."""

    @abstractmethod
    def bonus_pay(self, *, assignment: Assignment, amount: Decimal, reason: str, key: str) -> Any:
        """Pay a bonus for ``assignment``; moves money, exactly once per ``key``."""

    @abstractmethod
    def bonuses_pay(self, *, stage: Stage, bonuses: Sequence[BonusWanted]) -> int:
        """Pay many bonuses of ``stage`` that rules decided (gold, agreed entities); moves
        money, exactly once per bonus ``key``; the number newly asked for. Each is a
        platform operation requested through the outbox (the local workforce moves no
        money: it plans them in the ledger)."""

    @abstractmethod
    def workers_block(self, *, campaign: Campaign, reasons: Mapping[int, str]) -> int:
        """Block the workers of ``reasons`` (worker id → reason) from the campaign owner's
        work, here and on the platform; the number of blocks new (an active block is kept)."""

    @abstractmethod
    def qualifications_revoke(
        self, *, campaign: Campaign, qualification_type_id: int, worker_ids: Iterable[int]
    ) -> int:
        """Revoke the campaign owner's qualification ``qualification_type_id`` from the
        workers of ``worker_ids`` that hold it, here and on the platform; how many."""

    @abstractmethod
    def workers_message(
        self,
        *,
        campaign: Campaign,
        actor: AbstractBaseUser,
        workers: list[Worker],
        subject: str,
        body: str,
        key: str | None = None,
    ) -> Any:
        """Send a message to ``workers`` of ``campaign`` (once per ``key``)."""

    @abstractmethod
    def qualification_grant(
        self, *, qualification_type: QualificationType, worker: Worker, source: str, value: int = 1
    ) -> Any:
        """Record that ``worker`` holds ``qualification_type`` here and on the platform."""


_PLATFORMS: dict[str, Platform] = {}


def platform_register(platform: Platform) -> None:
    """Make ``platform`` the one answering for ``platform.name`` (at start-up)."""
    _PLATFORMS[platform.name] = platform


def platform_for(what: Campaign | Stage | HIT | Assignment | Worker | str) -> Platform:
    """The platform of a campaign (or of a stage, HIT, assignment or worker), or by name."""
    if isinstance(what, str):
        name = what
    elif hasattr(what, "provider"):
        name = what.provider
    else:  # a stage
        name = what.campaign.provider
    try:
        return _PLATFORMS[name]
    except KeyError:
        raise ValueError(f"Unknown provider {name!r}") from None


def platform_names(*, pays_workers: bool | None = None) -> list[str]:
    """The registered platforms' names, optionally only those that pay (or not)."""
    return [
        p.name
        for p in _PLATFORMS.values()
        if pays_workers is None or p.pays_workers == pays_workers
    ]


__all__ = [
    "BonusWanted",
    "FeeModel",
    "Platform",
    "platform_for",
    "platform_names",
    "platform_register",
]
