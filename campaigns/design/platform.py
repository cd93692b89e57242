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

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from campaigns.design.platform_rules import PlatformRules
from campaigns.models.choices import provider_choice_register, provider_choice_unregister

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


@dataclass(frozen=True)
class Decision:
    """A review decision on one assignment, as ``Platform.decision_request`` carries it
    out: approve (and pay) or reject; ``source`` says what decided ("requester",
    "rule:auto_approve", …), ``reason`` why, ``feedback`` what the worker hears."""

    approve: bool
    decided_by: AbstractBaseUser | None
    source: str
    reason: str
    feedback: str = ""


@dataclass(frozen=True)
class WorkerMessage:
    """A message to some workers of a campaign (``Platform.workers_message``): sent once
    per ``key`` (None: a fresh one each time)."""

    workers: list[Worker]
    subject: str
    body: str
    key: str | None = None


@dataclass(frozen=True)
class CredentialField:
    """One credential a campaign's owner may store for a platform (``credential_fields``):
    ``name`` is a keyword argument of the platform's ``provider`` ``from_credentials``."""

    name: str
    required: bool
    pattern: str
    help: str


def _flag(value: str) -> bool:
    if value.lower() in {"1", "true", "yes", "on"}:
        return True
    if value.lower() in {"0", "false", "no", "off"}:
        return False
    raise ValueError(f"expected a boolean (1/0, true/false), got {value!r}")


def _names(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


@dataclass(frozen=True)
class SettingKey:
    """A setting a platform reads (``settings_keys``): taken from the environment variable
    of the same name, parsed by ``kind`` ("str", "int", "float", "bool", "list": comma-
    separated), else ``default``; a value Django's settings already have wins (tests)."""

    name: str
    default: Any
    kind: str = "str"

    def read(self, environ: Mapping[str, str]) -> Any:
        raw = environ.get(self.name)
        if raw is None or (raw == "" and self.kind in ("bool", "list")):
            return self.default
        parse: dict[str, Callable[[str], Any]] = {
            "str": str,
            "int": int,
            "float": float,
            "bool": _flag,
            "list": _names,
        }
        try:
            return parse[self.kind](raw)
        except ValueError as exc:
            raise ImproperlyConfigured(f"{self.name}: {exc}") from exc


class Platform(ABC):
    """One crowd platform, as the rest of qaportal sees it."""

    #: The ``Provider`` value campaigns, HITs, workers and operations carry.
    name: str = ""
    #: A human-readable name (the ``Provider`` choice's label), and a shorter one if any.
    label: str = ""
    short_label: str = ""
    #: Rewards, fees and bonuses are real money paid to workers: going live commits it
    #: (the pages confirm the cost first), costs and budgets are shown, workers see
    #: their reward. False: the ledger still plans amounts, but nothing is paid.
    moves_money: bool = True
    #: ``decision_request`` records the decision at once, in qaportal, so the review
    #: pages and the review rules may decide; False: the platform carries decisions out
    #: later (they are recorded when it has), and rules' verdicts stay advice.
    decides_at_once: bool = False
    #: HITs are open to workers as soon as they are made; False: they wait for the
    #: platform (``stage_publish``, ``hits_publish_due``).
    hits_open_when_made: bool = False
    #: Workers reach the work through qaportal's own invites, grants and logins
    #: (rather than arriving from the platform with an id to verify).
    hosts_workforce: bool = False
    #: How a worker reaches the work pages: "invite" (qaportal's invite links and
    #: logins), "study_url" (a study URL with the participant's ids, Prolific),
    #: "external_question" (an MTurk frame). The simulator enters the same way.
    worker_entry: str = "invite"
    #: A sandbox where no real money moves (MTurk's); Prolific's studies always pay.
    has_sandbox: bool = False
    #: What a campaign's owner may store instead of the environment's account
    #: (``campaigns.platforms.credentials``); none: the platform takes no credentials.
    credential_fields: tuple[CredentialField, ...] = ()
    #: The settings the platform reads, with their defaults (``SettingKey``): put into
    #: Django's settings when the platform is registered, from the environment.
    settings_keys: tuple[SettingKey, ...] = ()
    #: The worker entry and webhook URLs (a ``urls`` module's dotted path, with its
    #: ``app_name``), mounted at ``url_prefix`` by ``qaportal.urls``; none: no pages.
    urls_module: str = ""
    url_prefix: str = ""

    # --- carrying out operations, keeping up with the platform -----------------------------
    @abstractmethod
    def provider(self, *, campaign_id: int | None = None) -> Any:
        """The executor of the platform's operations (``campaigns.platforms.base.Provider``),
        acting for campaign ``campaign_id``: with its owner's stored credentials, else the
        environment's."""

    def sync(self, *, scope: str | None = None) -> Any:
        """Bring qaportal up to date with what happened on the platform (submissions,
        returns, the platform's decisions); what was done, JSON-safe. ``scope``: what to
        sync, in the platform's terms (a study, a campaign id), None for everything open.
        Idempotent. Run by beat and after webhooks (``campaigns.platform_sync``); a
        platform with nothing to sync keeps this default."""
        return None

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
    def places_add(self, *, hits: Mapping[int, HIT], wanted: Sequence[Any]) -> None:
        """More places on published HITs: each of ``wanted`` (``work.lifecycle.PlacesWanted``:
        ``hit_id``, ``count``, ``reason``, ``key``) once per ``key``. ``hits``: those HITs,
        locked by the caller (``FOR UPDATE``) with their stages, updated in place when
        their places open now (``hits_open_when_made``)."""

    # --- decisions, money to workers, messages, qualifications ---------------------------
    @abstractmethod
    def decision_request(self, *, assignment: Assignment, decision: Decision) -> Assignment:
        """Carry out ``decision`` on ``assignment`` (approve and pay, or reject), once: at once
        (``decides_at_once``) or asked of the platform; the assignment as it now stands."""

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
        self, *, campaign: Campaign, actor: AbstractBaseUser, message: WorkerMessage
    ) -> Any:
        """Send ``message`` to its workers of ``campaign`` (once per its ``key``)."""

    @abstractmethod
    def qualification_grant(
        self, *, qualification_type: QualificationType, worker: Worker, source: str, value: int = 1
    ) -> Any:
        """Record that ``worker`` holds ``qualification_type`` here and on the platform."""


_PLATFORMS: dict[str, Platform] = {}


def platform_register(platform: Platform) -> None:
    """Make ``platform`` the one answering for ``platform.name`` (at start-up), and a
    ``Provider`` choice of the models."""
    _PLATFORMS[platform.name] = platform
    provider_choice_register(name=platform.name, label=platform.label or platform.name)
    for key in platform.settings_keys:
        if not hasattr(settings, key.name):
            setattr(settings, key.name, key.read(os.environ))


def platform_unregister(name: str) -> None:
    """Forget the platform called ``name`` (a test's own platform, when it is done)."""
    _PLATFORMS.pop(name, None)
    provider_choice_unregister(name=name)


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


def platforms_registered() -> list[Platform]:
    """Every registered platform, in the order they were registered."""
    return list(_PLATFORMS.values())


def platform_names() -> list[str]:
    """The registered platforms' names, in alphabetical order."""
    return sorted(_PLATFORMS)


__all__ = [
    "BonusWanted",
    "CredentialField",
    "Decision",
    "FeeModel",
    "Platform",
    "SettingKey",
    "WorkerMessage",
    "platform_for",
    "platform_names",
    "platform_register",
    "platform_unregister",
    "platforms_registered",
]
