"""Mechanical Turk as a ``Platform``: a HIT type per stage, USD, MTurk's fees.

MTurk closed to new work on 30 September 2026; campaigns on existing accounts,
records and batch CSVs still go through here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from campaigns.design.platform import FeeModel
from campaigns.design.platform_rules import PlatformRules
from campaigns.models import Campaign, CampaignState, Stage
from campaigns.platforms import requires_masters
from campaigns.platforms.base import Provider
from campaigns.platforms.mturk.conf import SETTINGS_KEYS
from campaigns.platforms.mturk.credentials import CREDENTIAL_FIELDS
from campaigns.platforms.mturk.fees import MTurkFees
from campaigns.platforms.mturk.follow import mturk_campaign_follow
from campaigns.platforms.mturk.publish import mturk_stage_publish
from campaigns.platforms.mturk.rules import MTurkRules
from campaigns.platforms.platform import PaidPlatform
from campaigns.work.selectors.access import WORKABLE_STATES
from qaportal.errors import DomainError


class MTurkPlatform(PaidPlatform):
    name = "mturk"
    label = "Amazon Mechanical Turk"
    short_label = "MTurk"
    worker_entry = "external_question"
    has_sandbox = True
    credential_fields = CREDENTIAL_FIELDS
    settings_keys = SETTINGS_KEYS
    # The MTurk provider builds its ExternalQuestion URLs to this path: keep it.
    urls_module = "campaigns.platforms.mturk.urls"
    url_prefix = "w/mturk/"

    def provider_class(self) -> type[Provider]:
        from campaigns.platforms.mturk.provider import MTurkProvider

        return MTurkProvider

    def sync(self, *, scope: str | None = None) -> dict[str, int]:
        """The assignments of campaign ``scope`` (an id; every MTurk campaign's if None).

        Resumable (per-HIT cursors); transient errors are counted and logged, and the
        next run syncs again. The counts."""
        from campaigns.platforms.mturk.sync import mturk_hits_sync

        stats = mturk_hits_sync(campaign_id=int(scope) if scope is not None else None)
        return {
            "hits": stats.hits,
            "assignments": stats.assignments,
            "changed": stats.changed,
            "flagged": stats.flagged,
            "unmatched": stats.unmatched,
            "errors": stats.errors,
        }

    def rules(self) -> PlatformRules:
        return MTurkRules()

    def fee_model(self, *, requirements: Iterable[Mapping[str, Any]] | None = None) -> FeeModel:
        return MTurkFees(masters=requires_masters(requirements))

    def stage_publish(self, *, stage: Stage, allow_partial: bool = True, test: bool = False) -> Any:
        if test:
            raise DomainError("MTurk has no test participants: publish to the sandbox instead.")
        return mturk_stage_publish(stage=stage, allow_partial=allow_partial)

    def campaign_follow(self, *, campaign: Campaign, previous: str, to_state: str) -> None:
        """The campaign's HITs follow its state: expired, re-opened (operations)."""
        if to_state == CampaignState.PAUSED:
            mturk_campaign_follow(campaign=campaign, mode="pause")
        elif to_state == CampaignState.COMPLETED:
            mturk_campaign_follow(campaign=campaign, mode="stop")
        elif previous == CampaignState.PAUSED and to_state in WORKABLE_STATES:
            mturk_campaign_follow(campaign=campaign, mode="resume")
