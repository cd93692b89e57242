"""The local workforce as a ``Platform``: qaportal's own invites and logins, no money."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from campaigns.design.platform import FeeModel
from campaigns.models import HIT, Assignment, Campaign, Stage
from campaigns.platforms.base import NoFees
from campaigns.platforms.platform import CrowdPlatform
from campaigns.work.publishing import stage_publish


class LocalPlatform(CrowdPlatform):
    """The local workforce: qaportal's own invites and logins; nothing is paid.

    HITs open as soon as they are made and decisions take effect at once, in
    ``campaigns.work`` (which asks ``pays_workers`` first), so the calls below
    that only paid platforms need are never made for a local campaign.
    """

    name = "local"
    pays_workers = False
    hosts_workforce = True

    def fee_model(self, *, requirements: Iterable[Mapping[str, Any]] | None = None) -> FeeModel:
        return NoFees()

    def stage_publish(self, *, stage: Stage, allow_partial: bool = True, test: bool = False) -> Any:
        return stage_publish(stage=stage, allow_partial=allow_partial)  # no test mode: free

    def hits_publish_due(self, *, stage: Stage, force: bool) -> None:
        """Local HITs are published when they are made: nothing waits."""

    def campaign_follow(self, *, campaign: Campaign, previous: str, to_state: str) -> None:
        """No platform to tell: the worker pages read the campaign's state."""

    def places_add(self, *, hit: HIT, count: int, reason: str, key: str) -> None:
        raise NotImplementedError("local places open in campaigns.work.lifecycle")

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
        raise NotImplementedError("local decisions are taken in campaigns.work.decisions")
