"""Prolific as a ``Platform``: studies per stage, GBP, Prolific's service fee."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from django.conf import settings

from campaigns.design.platform import FeeModel
from campaigns.design.platform_rules import PlatformRules
from campaigns.models import (
    Campaign,
    CampaignState,
    OperationKind,
    ProviderOperation,
    QualificationType,
    Stage,
)
from campaigns.platforms.base import Provider
from campaigns.platforms.operations import operation_effect
from campaigns.platforms.platform import PaidPlatform
from campaigns.platforms.prolific.conf import SETTINGS_KEYS
from campaigns.platforms.prolific.credentials import CREDENTIAL_FIELDS
from campaigns.platforms.prolific.fees import ProlificFees
from campaigns.platforms.prolific.filters import filter_catalogue_cached
from campaigns.platforms.prolific.rules import ProlificRules
from campaigns.platforms.prolific.studies import (
    campaign_provider_pause,
    campaign_provider_resume,
    campaign_provider_stop,
    campaign_studies_follow,
    prolific_stage_publish,
    prolific_studies_sync,
    prolific_submission_study_sync,
)
from campaigns.work.selectors.access import WORKABLE_STATES

# A sync scope naming a submission (a hook for a session not stored yet), not a study.
SUBMISSION_SCOPE = "submission:"


class ProlificPlatform(PaidPlatform):
    name = "prolific"
    label = "Prolific"
    worker_entry = "study_url"
    credential_fields = CREDENTIAL_FIELDS
    settings_keys = SETTINGS_KEYS
    urls_module = "campaigns.platforms.prolific.urls"
    url_prefix = "work/prolific/"

    def provider_class(self) -> type[Provider]:
        from campaigns.platforms.prolific.provider import ProlificProvider

        return ProlificProvider

    def sync(self, *, scope: str | None = None) -> int:
        """Study ``scope``'s submissions (every published study's if None), or with
        ``submission:<id>`` (a hook for a session not stored yet) that submission's
        study; rows changed."""
        if scope and scope.startswith(SUBMISSION_SCOPE):
            return prolific_submission_study_sync(submission_id=scope[len(SUBMISSION_SCOPE) :])
        return prolific_studies_sync(study_id=scope)

    def fee_model(self, *, requirements: Iterable[Mapping[str, Any]] | None = None) -> FeeModel:
        return ProlificFees(Decimal(getattr(settings, "PROLIFIC_FEE_RATE", "0.333")))

    def rules(self) -> PlatformRules:
        """Prolific's rules, with the filters catalogue when it is cached (no call here)."""
        return ProlificRules(catalogue=filter_catalogue_cached())

    def stage_publish(self, *, stage: Stage, allow_partial: bool = True, test: bool = False) -> Any:
        return prolific_stage_publish(stage=stage, allow_partial=allow_partial, test=test)

    def campaign_follow(self, *, campaign: Campaign, previous: str, to_state: str) -> None:
        """The campaign's studies follow its state: paused, resumed, stopped (operations)."""
        if to_state == CampaignState.PAUSED:
            campaign_provider_pause(campaign=campaign)
        elif to_state == CampaignState.COMPLETED:
            campaign_provider_stop(campaign=campaign)
        elif previous == CampaignState.PAUSED and to_state in WORKABLE_STATES:
            campaign_provider_resume(campaign=campaign)


@operation_effect(OperationKind.CREATE_STUDY, OperationKind.CREATE_HIT, provider="prolific")
def _study_catches_up(op: ProviderOperation) -> None:
    """A study created while its campaign was being paused or completed catches up."""
    if op.campaign_id is not None and (op.result or {}).get("published", True):
        campaign_studies_follow(campaign_id=op.campaign_id)


@operation_effect(OperationKind.CREATE_STUDY, provider="prolific")
def _study_groups_identified(op: ProviderOperation) -> None:
    """Participant groups the study's creation made for qualifications nobody held yet
    become those qualifications' platform ids (grants then add to them)."""
    for qt_id, group_id in ((op.result or {}).get("groups_made") or {}).items():
        QualificationType.objects.filter(
            pk=int(qt_id), provider_qualification_id__isnull=True
        ).update(provider=op.provider, provider_qualification_id=str(group_id))
