"""The local workforce as a ``Platform``: qaportal's own invites and logins, no money."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from campaigns.design.platform import Decision, FeeModel
from campaigns.models import HIT, Assignment, Campaign, Stage
from campaigns.platforms.base import NoFees
from campaigns.platforms.local.provider import LocalProvider
from campaigns.platforms.platform import CrowdPlatform
from campaigns.work.decisions import assignment_decision_take
from campaigns.work.lifecycle import places_open
from campaigns.work.publishing import stage_publish


class LocalPlatform(CrowdPlatform):
    """The local workforce: qaportal's own invites and logins; nothing is paid.

    HITs open as soon as they are made, extra places open at once, and decisions
    take effect at once (``campaigns.work`` records them).
    """

    name = "local"
    label = "Local workforce"
    moves_money = False
    decides_at_once = True
    hits_open_when_made = True
    hosts_workforce = True

    def provider(self, *, campaign_id: int | None = None) -> LocalProvider:
        return LocalProvider()

    def fee_model(self, *, requirements: Iterable[Mapping[str, Any]] | None = None) -> FeeModel:
        return NoFees()

    def stage_publish(self, *, stage: Stage, allow_partial: bool = True, test: bool = False) -> Any:
        return stage_publish(stage=stage, allow_partial=allow_partial)  # no test mode: free

    def hits_publish_due(self, *, stage: Stage, force: bool) -> None:
        """Local HITs are published when they are made: nothing waits."""

    def campaign_follow(self, *, campaign: Campaign, previous: str, to_state: str) -> None:
        """No platform to tell: the worker pages read the campaign's state."""

    def places_add(self, *, hits: Mapping[int, HIT], wanted: Sequence[Any]) -> None:
        """The places open at once, each key's operation written done (``places_open``)."""
        places_open(locked=hits, wanted=wanted)

    def decision_request(self, *, assignment: Assignment, decision: Decision) -> Assignment:
        """Recorded at once (``assignment_decision_take``)."""
        return assignment_decision_take(assignment=assignment, decision=decision)
