"""The provider contract: every registered platform passes the same checks (local,
Prolific, MTurk here; a platform's own tests may import these with their ``env``).

Each check requests an operation, executes it (twice, as a redelivered task
would), and looks at the effect in the database and on the platform: done once,
whatever the retries.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest

from campaigns.design.platform import platform_names
from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    HITStatus,
    LedgerEntry,
    LedgerKind,
    LedgerStatus,
    OperationKind,
    OperationState,
    ProviderOperation,
)
from campaigns.platforms import provider_for
from campaigns.platforms.base import OperationCall, PermanentProviderError
from campaigns.platforms.mturk.sync import mturk_hits_sync
from campaigns.platforms.operations import operation_request
from campaigns.platforms.prolific.studies import prolific_studies_sync
from campaigns.platforms.publishing import stage_provider_publish
from campaigns.work.allocation import assignment_accept
from campaigns.work.invites import invite_create, invite_redeem, invite_token
from campaigns.work.submission import assignment_submit
from tests.campaigns.platforms.conftest import FORM, execute, make_campaign
from tests.campaigns.platforms.mturk_helpers import page_submit

pytestmark = pytest.mark.django_db


class Env:
    """One platform under contract: a published stage and a way to get a submission.

    A platform's tests bring their own ``Env`` (and ``env`` fixture) and import these
    tests (``toy_platform/test_contract.py``); the built-in ones are in ``ENVS``."""

    name = ""

    def __init__(self, requester, client, *, fake=None, mturk=None) -> None:
        self.client = client
        self.campaign, self.stage = make_campaign(
            requester, provider=self.name, slug=f"contract-{self.name}"
        )

    def publish(self) -> ProviderOperation:
        op = stage_provider_publish(stage=self.stage)
        assert op is not None
        return op

    def submitted(self) -> Assignment:
        raise NotImplementedError

    def calls(self, kind: str) -> int:
        """Calls the platform got to carry out operations of ``kind`` (an OperationKind)."""
        raise NotImplementedError

    def publish_calls(self, *, hits: int) -> int:
        """The calls publishing ``hits`` HITs takes on the platform."""
        raise NotImplementedError


class LocalEnv(Env):
    name = "local"

    def publish(self) -> ProviderOperation:
        from campaigns.work.publishing import stage_publish

        stage_publish(stage=self.stage)  # local HITs publish at once; the operation is a no-op
        hit_ids = list(HIT.objects.filter(stage=self.stage).values_list("pk", flat=True))
        op, _ = operation_request(
            provider="local",
            kind=OperationKind.CREATE_HIT,
            key=f"publish:stage:{self.stage.pk}",
            payload={"stage_id": self.stage.pk, "hit_ids": hit_ids},
            campaign=self.campaign,
        )
        return op

    def submitted(self) -> Assignment:
        execute(self.publish().pk)
        invite = invite_create(
            campaign=self.campaign, created_by=self.campaign.owner, expires_in=timedelta(days=1)
        )
        _, worker = invite_redeem(token=invite_token(invite=invite))
        assignment = assignment_accept(stage=self.stage, worker=worker)
        assignment_submit(assignment_id=assignment.pk, worker=worker, form=FORM, telemetry={})
        return Assignment.objects.get(pk=assignment.pk)

    def calls(self, kind: str) -> int:
        return 0  # no platform to call

    def publish_calls(self, *, hits: int) -> int:
        return 0


class ProlificEnv(Env):
    name = "prolific"
    PATHS = {
        OperationKind.CREATE_HIT: ("POST", r"/api/v1/studies/$"),
        OperationKind.APPROVE: ("POST", r"/api/v1/submissions/.*/transition/"),
        OperationKind.BONUS: ("POST", r"/api/v1/bulk-bonus-payments/"),
    }

    def __init__(self, requester, client, *, fake=None, mturk=None) -> None:
        super().__init__(requester, client)
        self.fake = fake

    def submitted(self) -> Assignment:
        execute(self.publish().pk)
        study_id = HIT.objects.filter(stage=self.stage).earliest("pk").provider_group_id
        session = self.fake.start_submission(study_id)
        response = self.client.get(
            "/work/prolific/",
            {
                "PROLIFIC_PID": session["participant"],
                "STUDY_ID": study_id,
                "SESSION_ID": session["id"],
            },
        )
        self.client.post(response["Location"], FORM)
        self.fake.complete_submission(session["id"], "X")
        prolific_studies_sync()
        return Assignment.objects.get(provider_assignment_id=session["id"])

    def calls(self, kind: str) -> int:
        return len(self.fake.calls(*self.PATHS[OperationKind(kind)]))

    def publish_calls(self, *, hits: int) -> int:
        return 1  # one study for the stage's HITs


class MTurkEnv(Env):
    name = "mturk"
    OPERATIONS = {
        OperationKind.CREATE_HIT: "CreateHITWithHITType",
        OperationKind.APPROVE: "ApproveAssignment",
        OperationKind.BONUS: "SendBonus",
    }

    def __init__(self, requester, client, *, fake=None, mturk=None) -> None:
        super().__init__(requester, client)
        self.fake = mturk

    def submitted(self) -> Assignment:
        execute(self.publish().pk)
        hit = HIT.objects.filter(stage=self.stage).earliest("pk")
        assignment = page_submit(self.fake, hit, "AWORKERCONTRACT1")
        mturk_hits_sync()
        return Assignment.objects.get(pk=assignment.pk)

    def calls(self, kind: str) -> int:
        return self.fake.state.calls[self.OPERATIONS[OperationKind(kind)]]

    def publish_calls(self, *, hits: int) -> int:
        return hits  # one MTurk HIT each


ENVS: dict[str, type[Env]] = {env.name: env for env in (LocalEnv, ProlificEnv, MTurkEnv)}


@pytest.fixture(params=platform_names())
def env(request, requester, fake, mturk, client) -> Env:
    return ENVS[request.param](requester, client, fake=fake, mturk=mturk)


def test_every_registered_platform_is_under_contract():
    assert set(platform_names()) <= set(ENVS)


def test_publish_is_done_once(env):
    op = env.publish()
    first = execute(op.pk)
    assert first.state == OperationState.DONE, first.last_error
    again = execute(op.pk)
    assert again.state == OperationState.DONE
    hits = HIT.objects.filter(stage=env.stage)
    assert {h.status for h in hits} == {HITStatus.PUBLISHED}
    assert all(h.provider_hit_id for h in hits)
    assert env.calls(OperationKind.CREATE_HIT) == env.publish_calls(hits=hits.count())
    if env.name == "mturk":
        assert len(env.fake.state.hits) == hits.count()


def test_approve_decides_once_and_pays_once(env):
    assignment = env.submitted()
    payload = {
        "assignment_id": assignment.pk,
        "submission_id": assignment.provider_assignment_id,
        "source": "contract",
    }
    op, created = operation_request(
        provider=env.name,
        kind=OperationKind.APPROVE,
        key=f"approve:assignment:{assignment.pk}",
        payload=payload,
        campaign=env.campaign,
    )
    _, again = operation_request(
        provider=env.name,
        kind=OperationKind.APPROVE,
        key=f"approve:assignment:{assignment.pk}",
        payload=payload,
        campaign=env.campaign,
    )
    assert created
    assert not again
    LedgerEntry.objects.create(
        key=f"reward:assignment:{assignment.pk}",
        campaign=env.campaign,
        kind=LedgerKind.REWARD,
        status=LedgerStatus.COMMITTED,
        amount=Decimal("1.00"),
        assignment=assignment,
        operation=op,
    )
    for _ in range(2):
        assert execute(op.pk).state == OperationState.DONE
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.APPROVED
    assert assignment.worker.approved_count == 1
    assert LedgerEntry.objects.get(operation=op).status == LedgerStatus.PAID
    assert env.calls(OperationKind.APPROVE) == (0 if isinstance(env, LocalEnv) else 1)
    if env.name == "mturk":
        assert env.fake.state.approvals[assignment.provider_assignment_id] == 1


def test_bonus_is_paid_once(env):
    assignment = env.submitted()
    op, _ = operation_request(
        provider=env.name,
        kind=OperationKind.BONUS,
        key="bonus:contract",
        payload={
            "assignment_id": assignment.pk,
            "study_id": assignment.hit.provider_group_id,
            "submission_id": assignment.provider_assignment_id,
            "amount": "0.75",
            "reason": "Agreement bonus",
        },
        campaign=env.campaign,
    )
    LedgerEntry.objects.create(
        key="bonus:contract",
        campaign=env.campaign,
        kind=LedgerKind.BONUS,
        status=LedgerStatus.COMMITTED,
        amount=Decimal("0.75"),
        assignment=assignment,
        operation=op,
    )
    for _ in range(2):
        assert execute(op.pk).state == OperationState.DONE
    assert LedgerEntry.objects.get(key="bonus:contract").status == LedgerStatus.PAID
    assert env.calls(OperationKind.BONUS) == (0 if isinstance(env, LocalEnv) else 1)
    if env.name == "prolific":
        assert env.fake.submission(assignment.provider_assignment_id)["bonus_payments"] == [75]
    if env.name == "mturk":
        assert [b["BonusAmount"] for b in env.fake.state.bonuses] == ["0.75"]


def test_add_assignments_adds_places_once(env):
    publish = env.publish()
    execute(publish.pk)
    hit = HIT.objects.filter(stage=env.stage).earliest("pk")
    op, _ = operation_request(
        provider=env.name,
        kind=OperationKind.ADD_ASSIGNMENTS,
        key=f"escalate:hit:{hit.pk}",
        payload={"hit_id": hit.pk, "count": 2, "study_id": hit.provider_group_id},
        campaign=env.campaign,
    )
    for _ in range(2):
        assert execute(op.pk).state == OperationState.DONE
    before = hit.max_assignments
    hit.refresh_from_db()
    assert hit.max_assignments == before + 2
    if env.name == "prolific":
        assert env.fake.state.studies[hit.provider_group_id]["total_available_places"] == 4
    if env.name == "mturk":
        assert env.fake.state.added[hit.provider_hit_id] == 2
        assert env.fake.state.hits[hit.provider_hit_id]["MaxAssignments"] == before + 2


def test_unknown_kind_fails_with_a_reason(env):
    with pytest.raises(PermanentProviderError):
        provider_for(env.name).execute(
            OperationCall(operation_id=0, kind="teleport", key="k", payload={})
        )
    op, _ = operation_request(
        provider=env.name, kind="teleport", key="k", payload={}, campaign=env.campaign
    )
    op = execute(op.pk)
    assert op.state == OperationState.FAILED
    assert "teleport" in op.last_error
