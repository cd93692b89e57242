"""What a platform demands of a stage before money moves, readable without its API client.

``platform_for(campaign).rules()`` gives the platform's ``PlatformRules``: the minimum
hourly reward it enforces, how a stage's requirements become its own filters (with what
differs, said in words), and the currency its rewards are paid in. Cost estimates, the
stage page and publishing ask these questions without naming a platform; each platform's
own rules live in its folder (``campaigns/platforms/prolific/rules.py``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from decimal import ROUND_CEILING, ROUND_HALF_UP, Decimal
from typing import Any

from qaportal.money import CENT


class RequirementRefused(ValueError):
    """A stage requirement the platform cannot express. ``requirement`` is the one refused.

    Refused rather than dropped: a requirement left out would open the work to everyone.
    """

    def __init__(self, message: str, *, requirement: Mapping[str, Any]) -> None:
        super().__init__(message)
        self.requirement = dict(requirement)


@dataclass(frozen=True)
class RequirementNote:
    """One stage requirement as the platform will apply it."""

    requirement: dict[str, Any]
    platform_filter: str  # the platform's name for it ("" when nothing is sent)
    note: str  # what differs from what the requester may expect, in words
    refused: str = ""  # why the platform cannot express it (publishing is refused)

    def as_dict(self) -> dict[str, Any]:
        return {
            "requirement": self.requirement,
            "filter": self.platform_filter,
            "note": self.note,
            "refused": self.refused,
        }


@dataclass(frozen=True)
class PayCheck:
    """A stage's reward against the platform's minimum hourly rate."""

    currency: str
    reward: Decimal
    estimated_minutes: int
    hourly_rate: Decimal | None  # None when the reward or the time is unknown
    minimum_hourly: Decimal | None  # None: the platform sets no minimum
    problem: str  # "" when the reward is fine

    @property
    def below_minimum(self) -> bool:
        return bool(self.problem)


def estimated_minutes(*, config: Mapping[str, Any] | None, assignment_duration: timedelta) -> int:
    """Minutes one assignment is expected to take: ``config["estimated_minutes"]``, else a
    quarter of the time allowed (at least 1)."""
    raw = (config or {}).get("estimated_minutes")
    try:
        value = int(raw) if raw is not None and not isinstance(raw, bool) else 0
    except (TypeError, ValueError):
        value = 0
    if value > 0:
        return value
    allowed = max(1, int(assignment_duration.total_seconds() // 60))
    return max(1, math.ceil(allowed / 4))


def hourly_rate(*, reward: Decimal, minutes: int) -> Decimal | None:
    """``reward`` for ``minutes`` of work as a rate per hour, to the cent."""
    if minutes <= 0:
        return None
    return (Decimal(reward) * 60 / minutes).quantize(CENT, rounding=ROUND_HALF_UP)


class PlatformRules:
    """A platform without rules of its own (the local workforce): no minimum, no filters."""

    name = "local"
    currency = "USD"
    # A platform that pays through its own account needs a reward on every task.
    requires_reward = False
    # The shortest message a rejected worker may be sent (characters).
    rejection_message_min = 0
    # The platform offers test participants and test publications (a pilot at no cost).
    test_participants = False
    # The requirement kinds the platform enforces on its own workers (what it knows of
    # their history); others are shown to the requester as not enforced.
    checked_kinds: frozenset[str] = frozenset()

    def minimum_hourly(self, currency: str) -> Decimal | None:
        return None

    def pay_check(
        self,
        *,
        reward: Decimal,
        currency: str,
        config: Mapping[str, Any] | None,
        assignment_duration: timedelta,
    ) -> PayCheck:
        """The stage's effective hourly rate against the platform's minimum for ``currency``."""
        minutes = estimated_minutes(config=config, assignment_duration=assignment_duration)
        rate = hourly_rate(reward=reward, minutes=minutes)
        floor = self.minimum_hourly(currency)
        problem = ""
        if self.requires_reward and Decimal(reward) <= 0:
            problem = (
                f"{self.name.capitalize()} pays every task: set a reward "
                f"(at least {floor} {currency} an hour)."
                if floor is not None
                else f"{self.name.capitalize()} pays every task: set a reward."
            )
        elif floor is not None and rate is not None and Decimal(reward) > 0 and rate < floor:
            least = (floor * minutes / 60).quantize(CENT, rounding=ROUND_CEILING)
            problem = (
                f"{reward} {currency} for an estimated {minutes} min is {rate} {currency} an "
                f"hour; {self.name.capitalize()} requires at least {floor} {currency} an hour: "
                f"raise the reward to {least} {currency} or more. The estimate is the time a "
                "participant needs (the paper's, or the pilot's median), not a way round the "
                "minimum: the platform checks it against the time participants take."
            )
        return PayCheck(
            currency=currency,
            reward=Decimal(reward),
            estimated_minutes=minutes,
            hourly_rate=rate,
            minimum_hourly=floor,
            problem=problem,
        )

    def requirement_notes(self, requirements: Iterable[Mapping[str, Any]]) -> list[RequirementNote]:
        """How each requirement is applied on the platform, and why one it cannot express
        is refused (``RequirementNote.refused``)."""
        return [RequirementNote(dict(r), "", "") for r in requirements]

    def requirement_choices(self) -> dict[str, list[dict[str, str]]]:
        """Choices the stage page offers by name for requirements (``{}``: none)."""
        return {}

    def requirements_check(self, requirements: Iterable[Mapping[str, Any]]) -> None:
        """Raise ``RequirementRefused`` for the first requirement the platform cannot express."""
        for note in self.requirement_notes(requirements):
            if note.refused:
                raise RequirementRefused(note.refused, requirement=note.requirement)
