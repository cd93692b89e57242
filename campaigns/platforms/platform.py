"""What every platform does alike: the shared half of the ``Platform`` interface.

Bonuses, messages and qualification grants are provider operations whatever the
platform (the local workforce records them and moves no money), so one
implementation serves all; the paid platforms share decisions, extra places and
hand-off batches, which are operations carried out later.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ImproperlyConfigured

from campaigns.design.platform import BonusWanted, Decision, FeeModel, Platform, WorkerMessage
from campaigns.models import (
    HIT,
    Assignment,
    Campaign,
    OperationKind,
    QualificationType,
    Stage,
    Worker,
)
from campaigns.platforms.base import PermanentProviderError, Provider
from campaigns.platforms.bulk import (
    qualifications_revoke_here,
    qualifications_revoke_paid,
    stage_bonuses_pay,
    stage_bonuses_plan,
    workers_block_here,
    workers_block_paid,
)
from campaigns.platforms.operations import operation_request
from campaigns.platforms.publishing import paid_handoff_publish
from campaigns.platforms.review import paid_assignment_approve, paid_assignment_reject
from campaigns.platforms.worker_actions import assignment_bonus_pay, workers_message
from campaigns.platforms.workers import paid_qualification_grant


class CrowdPlatform(Platform):
    """Bonuses, messages and grants, the same on every platform."""

    def bonus_pay(self, *, assignment: Assignment, amount: Decimal, reason: str, key: str) -> Any:
        return assignment_bonus_pay(assignment=assignment, amount=amount, reason=reason, key=key)

    def bonuses_pay(self, *, stage: Stage, bonuses: Sequence[BonusWanted]) -> int:
        """Planned in the ledger: nothing moves here (a paid platform pays them)."""
        return stage_bonuses_plan(stage=stage, bonuses=bonuses)

    def workers_block(self, *, campaign: Campaign, reasons: Mapping[int, str]) -> int:
        """qaportal's blocks only (a paid platform asks for its own too)."""
        return len(workers_block_here(campaign=campaign, reasons=reasons))

    def qualifications_revoke(
        self, *, campaign: Campaign, qualification_type_id: int, worker_ids: Iterable[int]
    ) -> int:
        """qaportal's grants only (a paid platform asks for its own too)."""
        return len(
            qualifications_revoke_here(
                campaign=campaign,
                qualification_type_id=qualification_type_id,
                worker_ids=worker_ids,
            )
        )

    def workers_message(
        self, *, campaign: Campaign, actor: AbstractBaseUser, message: WorkerMessage
    ) -> Any:
        return workers_message(
            campaign=campaign,
            actor=actor,
            workers=message.workers,
            subject=message.subject,
            body=message.body,
            key=message.key,
        )

    def qualification_grant(
        self, *, qualification_type: QualificationType, worker: Worker, source: str, value: int = 1
    ) -> Any:
        return paid_qualification_grant(
            qualification_type=qualification_type, worker=worker, source=source, value=value
        )


class PaidPlatform(CrowdPlatform):
    """A platform where HITs, decisions and payments are operations carried out later."""

    moves_money = True
    decides_at_once = False
    hits_open_when_made = False
    hosts_workforce = False

    def fee_model(self, *, requirements: Iterable[Mapping[str, Any]] | None = None) -> FeeModel:
        raise NotImplementedError

    def provider_class(self) -> type[Provider]:
        """The platform's ``Provider``, imported on first use (in the platform's module), so
        that importing the campaigns app never loads an API client (and a deployment
        without ``requests`` or ``boto3`` still runs the local workforce)."""
        raise NotImplementedError

    def provider(self, *, campaign_id: int | None = None) -> Provider:
        """A provider with the campaign's own stored credentials
        (``campaigns.platforms.credentials``), else configured from settings."""
        from campaigns.platforms.credentials import campaign_credentials_for

        try:
            own = campaign_credentials_for(campaign_id=campaign_id, provider=self.name)
        except ImproperlyConfigured as exc:  # unreadable stored credentials: say so, act with none
            raise PermanentProviderError(str(exc)) from exc
        provider_class = self.provider_class()
        if own is not None:
            return provider_class.from_credentials(**own)  # type: ignore[attr-defined]
        return provider_class.from_settings()  # type: ignore[attr-defined]

    def hits_publish_due(self, *, stage: Stage, force: bool) -> None:
        paid_handoff_publish(stage=stage, force=force)

    def campaign_follow(self, *, campaign: Campaign, previous: str, to_state: str) -> None:
        raise NotImplementedError

    def bonuses_pay(self, *, stage: Stage, bonuses: Sequence[BonusWanted]) -> int:
        return stage_bonuses_pay(stage=stage, bonuses=bonuses)

    def workers_block(self, *, campaign: Campaign, reasons: Mapping[int, str]) -> int:
        return workers_block_paid(campaign=campaign, reasons=reasons)

    def qualifications_revoke(
        self, *, campaign: Campaign, qualification_type_id: int, worker_ids: Iterable[int]
    ) -> int:
        return qualifications_revoke_paid(
            campaign=campaign, qualification_type_id=qualification_type_id, worker_ids=worker_ids
        )

    def places_add(self, *, hits: Mapping[int, HIT], wanted: Sequence[Any]) -> None:
        """Each request an ``add_assignments`` operation: the places open when it is done."""
        for request in wanted:
            hit = hits[request.hit_id]
            operation_request(
                provider=self.name,
                kind=OperationKind.ADD_ASSIGNMENTS,
                key=request.key,
                payload={
                    "hit_id": hit.pk,
                    "count": request.count,
                    "reason": request.reason,
                    "study_id": hit.provider_group_id,
                },
                campaign=hit.stage.campaign,
            )

    def decision_request(self, *, assignment: Assignment, decision: Decision) -> Assignment:
        if decision.approve:
            paid_assignment_approve(
                assignment=assignment,
                decided_by=decision.decided_by,
                source=decision.source,
                reason=decision.reason,
            )
        else:
            paid_assignment_reject(
                assignment=assignment,
                decided_by=decision.decided_by,
                source=decision.source,
                reason=decision.reason,
                feedback=decision.feedback,
            )
        assignment.refresh_from_db()
        return assignment
