"""Toy Crowd as a ``Platform``: a HIT per group of items, EUR, 10 % fees, identity
confirmed by its sync. Everything qaportal needs to know of it is here."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast

from django.db import transaction

from campaigns.design.platform import CredentialField, FeeModel
from campaigns.design.platform_rules import PlatformRules
from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    Campaign,
    HITStatus,
    OperationKind,
    ProviderOperation,
    Stage,
)
from campaigns.platforms.base import Provider
from campaigns.platforms.operations import operation_request
from campaigns.platforms.platform import PaidPlatform
from campaigns.platforms.publishing import hits_being_published, publish_key
from campaigns.platforms.review import campaign_budget_check, submission_identity
from campaigns.work.publishing import stage_publish
from qaportal.errors import DomainError
from tests.campaigns.platforms.toy_platform import service
from tests.campaigns.platforms.toy_platform.fees import ToyFees
from tests.campaigns.platforms.toy_platform.provider import ToyProvider


class ToyRules(PlatformRules):
    name = "toy"
    currency = "EUR"
    requires_reward = True


class ToyPlatform(PaidPlatform):
    name = "toy"
    label = "Toy Crowd"
    worker_entry = "toy_url"
    credential_fields = (
        CredentialField("api_key", True, r"^[a-z0-9-]{8,64}$", "Toy Crowd API key"),
    )
    urls_module = "tests.campaigns.platforms.toy_platform.urls"
    url_prefix = "work/toy/"

    def rules(self) -> PlatformRules:
        return ToyRules()

    def fee_model(self, *, requirements: Iterable[Mapping[str, Any]] | None = None) -> FeeModel:
        return ToyFees()

    def provider_class(self) -> type[Provider]:
        return ToyProvider

    def stage_publish(
        self, *, stage: Stage, allow_partial: bool = True, test: bool = False
    ) -> ProviderOperation | None:
        """The stage's pending items as HITs, then one ``create_hit`` operation for them
        (budget checked for every place). Locking: the stage row."""
        if test:
            raise DomainError("Toy Crowd has no test participants.")
        stage_publish(stage=stage, allow_partial=allow_partial)
        with transaction.atomic():
            stage = Stage.objects.select_for_update().select_related("campaign").get(pk=stage.pk)
            busy = hits_being_published(stage=stage)
            hits = [
                h
                for h in HIT.objects.filter(
                    stage=stage, status=HITStatus.PENDING, provider_hit_id__isnull=True
                ).order_by("pk")
                if h.pk not in busy
            ]
            if not hits:
                return None
            hit_ids = [h.pk for h in hits]
            live, key = publish_key(provider=self.name, stage=stage, hit_ids=hit_ids)
            if live is not None:
                return live
            fee = ToyFees().assignment_fee(
                reward=stage.reward, max_assignments=stage.assignments_per_hit
            )
            campaign_budget_check(
                campaign=stage.campaign,
                extra=(stage.reward + fee) * sum(h.max_assignments for h in hits),
                what="Publishing this stage",
            )
            op, _ = operation_request(
                provider=self.name,
                kind=OperationKind.CREATE_HIT,
                key=key,
                payload={
                    "stage_id": stage.pk,
                    "hit_ids": hit_ids,
                    "max_assignments": stage.assignments_per_hit,
                },
                campaign=stage.campaign,
            )
        return op

    def campaign_follow(self, *, campaign: Campaign, previous: str, to_state: str) -> None:
        """Toy Crowd's HITs stay listed: the worker entry reads the campaign's state."""

    def sync(self, *, scope: str | None = None) -> dict[str, int]:
        """Ask Toy Crowd who made each submitted assignment not yet confirmed (``scope``:
        a campaign id, or every campaign); the counts by identity status."""
        waiting = Assignment.objects.filter(
            provider=self.name, status=AssignmentStatus.SUBMITTED
        ).exclude(review_details__identity__status="confirmed")
        if scope is not None:
            waiting = waiting.filter(hit__stage__campaign_id=int(scope))
        counts: dict[str, int] = {}
        provider = cast(ToyProvider, self.provider())
        for assignment in waiting.select_related("worker"):
            theirs = service.CROWD.assignment_get(
                api_key=provider.api_key, assignment_id=str(assignment.provider_assignment_id)
            )
            identity = submission_identity(
                assignment=assignment,
                platform_worker_id=theirs.worker_id if theirs else None,
                missing="Toy Crowd has no such assignment.",
                other="Toy Crowd gave this assignment to another worker.",
            )
            details = {**(assignment.review_details or {}), "identity": identity}
            Assignment.objects.filter(pk=assignment.pk).update(review_details=details)
            counts[identity["status"]] = counts.get(identity["status"], 0) + 1
        return counts
