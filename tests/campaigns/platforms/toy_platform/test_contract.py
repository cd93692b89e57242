"""Toy Crowd passes the provider contract every platform passes
(``tests/campaigns/platforms/test_contract.py``), with its own ``env``."""

from __future__ import annotations

import pytest

from campaigns.design.services import campaign_transition
from campaigns.models import HIT, Assignment, CampaignState, OperationKind
from campaigns.tasks import platform_sync_task
from tests.campaigns.platforms.conftest import execute
from tests.campaigns.platforms.test_contract import (  # noqa: F401 (the contract's tests)
    Env,
    test_add_assignments_adds_places_once,
    test_approve_decides_once_and_pays_once,
    test_bonus_is_paid_once,
    test_publish_is_done_once,
    test_unknown_kind_fails_with_a_reason,
)
from tests.campaigns.platforms.toy_platform.conftest import toy_campaign, work_through_toy_crowd

pytestmark = pytest.mark.django_db


class ToyEnv(Env):
    name = "toy"
    CALLS = {
        OperationKind.CREATE_HIT: "hit_create",
        OperationKind.APPROVE: "approve",
        OperationKind.BONUS: "bonus",
    }

    def __init__(self, requester, client, *, crowd) -> None:
        self.client = client
        self.crowd = crowd
        campaign, self.stage = toy_campaign(requester)
        self.campaign = campaign_transition(campaign=campaign, to_state=CampaignState.PILOT)

    def submitted(self) -> Assignment:
        execute(self.publish().pk)
        hit = HIT.objects.filter(stage=self.stage).earliest("pk")
        assignment = work_through_toy_crowd(self.crowd, hit, "TW-CONTRACT")
        platform_sync_task("toy")
        return Assignment.objects.get(pk=assignment.pk)

    def calls(self, kind: str) -> int:
        return self.crowd.calls.count(self.CALLS[OperationKind(kind)])

    def publish_calls(self, *, hits: int) -> int:
        return hits  # one Toy Crowd HIT each


@pytest.fixture
def env(toy, requester, client) -> Env:
    return ToyEnv(requester, client, crowd=toy)
