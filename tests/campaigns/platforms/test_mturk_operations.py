"""MTurk operations one by one: validation before any call, error mapping, messages in
chunks with per-worker failures, qualifications, blocks, expiry, the account balance."""

from __future__ import annotations

from decimal import Decimal

import pytest

from campaigns.models import HIT, OperationKind, OperationState, QualificationType, Worker
from campaigns.platforms import provider_for
from campaigns.platforms.base import (
    OperationCall,
    PermanentProviderError,
    TransientProviderError,
)
from campaigns.platforms.credentials import campaign_credentials_set
from campaigns.platforms.mturk.checks import check_money, check_text, request_token
from campaigns.platforms.mturk.provider import MTurkProvider
from campaigns.platforms.mturk.sync import mturk_hits_sync
from campaigns.platforms.mturk.xml import MASTERS, qualification_requirements
from campaigns.platforms.operations import operation_request
from campaigns.platforms.publishing import stage_provider_publish
from campaigns.platforms.worker_actions import assignment_bonus_pay
from campaigns.platforms.workers import (
    paid_qualification_grant,
    paid_qualification_revoke,
    paid_worker_block,
    paid_worker_unblock,
)
from tests.campaigns.platforms.conftest import execute, make_campaign
from tests.campaigns.platforms.mturk_helpers import page_submit

pytestmark = pytest.mark.django_db


def call(kind: str, payload: dict, key: str = "k") -> OperationCall:
    return OperationCall(operation_id=1, kind=kind, key=key, payload=payload)


@pytest.fixture
def provider(mturk) -> MTurkProvider:
    p = provider_for("mturk")
    assert isinstance(p, MTurkProvider)
    return p


@pytest.fixture
def submitted(requester, mturk):
    campaign, stage = make_campaign(requester, provider="mturk", slug="mturk-ops", items=2)
    op = stage_provider_publish(stage=stage)
    assert op is not None
    execute(op.pk)
    hit = HIT.objects.filter(stage=stage).earliest("pk")
    assignment = page_submit(mturk, hit, "AGOODWORKER1")
    mturk_hits_sync()
    assignment.refresh_from_db()
    return campaign, assignment


@pytest.mark.parametrize(
    ("kind", "payload", "message"),
    [
        ("approve", {"submission_id": "3abc"}, "not an MTurk id"),
        ("reject", {"submission_id": "3ABC", "message": "bad\x07bell"}, "control characters"),
        ("reject", {"submission_id": "3ABC", "message": "x" * 1025}, "at most 1024"),
        ("reject", {"submission_id": "3ABC", "message": ""}, "required"),
        (
            "bonus",
            {"submission_id": "3ABC", "participant_id": "A1", "amount": "0.001", "reason": "r"},
            "whole cents",
        ),
        (
            "bonus",
            {"submission_id": "3ABC", "participant_id": "A1", "amount": "0.50", "reason": ""},
            "Bonus reason is required",
        ),
        (
            "bonus",
            {"submission_id": "3ABC", "participant_id": "w1", "amount": "0.50", "reason": "r"},
            "not an MTurk WorkerId",
        ),
        ("notify", {"participant_ids": ["A1"], "subject": "s" * 201, "body": "b"}, "at most 200"),
        ("notify", {"participant_ids": ["A1"], "subject": "s", "body": "b" * 4097}, "at most 4096"),
        ("notify", {"participant_ids": ["A1", "B2"], "subject": "s", "body": "b"}, "WorkerId"),
        ("expire", {"provider_hit_ids": ["3H", "bad id"]}, "not an MTurk id"),
        ("teleport", {}, "not supported"),
    ],
)
def test_bad_requests_fail_before_any_call(provider, mturk, kind, payload, message):
    with pytest.raises(PermanentProviderError, match=message):
        provider.execute(call(kind, payload))
    assert sum(mturk.state.calls.values()) == 0


def test_worker_ids_are_not_shown_in_full_in_errors(provider):
    with pytest.raises(PermanentProviderError) as caught:
        provider.execute(call("block", {"participant_id": "a-secret-worker-id"}))
    assert "a-secret-worker-id" not in str(caught.value)


def test_money_and_text_checks():
    assert check_money("1.5") == "1.50"
    with pytest.raises(PermanentProviderError, match=r"more than 0\.00"):
        check_money("0")
    with pytest.raises(PermanentProviderError, match="not a number"):
        check_money("lots")
    assert check_text("a\r\nb", "Feedback", maximum=10) == "a\nb"
    assert check_text("a\nb", "Subject", maximum=10, newlines=False) == "a b"
    token = request_token("publish:stage:1:hits:1-1000:1000", 999)
    assert len(token) <= 64
    assert token == request_token("publish:stage:1:hits:1-1000:1000", 999)
    assert token != request_token("publish:stage:1:hits:1-1000:1000", 998)


def test_errors_are_mapped(provider, mturk):
    mturk.fail_next("GetAccountBalance", "throttle", times=9)  # past every retry
    with pytest.raises(TransientProviderError) as caught:
        provider.client.call("get_account_balance")
    assert caught.value.unprocessed
    mturk.fail_next("GetAccountBalance", "503", times=9)
    with pytest.raises(TransientProviderError, match="ServiceFault"):
        provider.client.call("get_account_balance")
    with pytest.raises(PermanentProviderError, match="does not exist"):
        provider.client.call("get_hit", HITId="3NOSUCHHIT")
    with pytest.raises(PermanentProviderError, match="invalid request"):
        provider.client.call("get_hit")  # botocore's own validation: HITId is required


def test_a_lost_notify_answer_is_not_sent_again(provider, mturk):
    mturk.fail_next("NotifyWorkers", "drop_after")
    with pytest.raises(TransientProviderError):
        provider.client.call("notify_workers", Subject="s", MessageText="t", WorkerIds=["A1"])
    assert mturk.state.calls["NotifyWorkers"] == 1  # not repeatable: no retry


def test_notify_goes_in_chunks_and_records_each_workers_failure(submitted, mturk):
    campaign, assignment = submitted
    workers = [assignment.worker] + [
        Worker.objects.create(provider="mturk", external_id=f"ASTRANGER{n:03d}") for n in range(249)
    ]
    from campaigns.platforms.workers import paid_workers_notify

    mturk.fail_next("NotifyWorkers", "drop_after")  # the first chunk goes, its answer is lost
    op = paid_workers_notify(
        campaign=campaign, study_id="", workers=workers, subject="Round 2", body="Hi", key="r2"
    )
    first = execute(op.pk)
    assert first.state == OperationState.PENDING  # transient: retried later
    done = execute(op.pk)
    assert done.state == OperationState.DONE, done.last_error
    assert len(mturk.state.messages) == 3  # 100 + 100 + 50, none sent twice
    assert [len(m["WorkerIds"]) for m in mturk.state.messages] == [100, 100, 50]
    result = done.result or {}
    assert result["unknown"] == 100  # the first chunk: its fate was lost, not resent
    assert len(result["failures"]) == 150  # strangers: MTurk refuses, per worker
    assert {f["code"] for f in result["failures"]} == {"HardFailure"}
    assert result["sent"] == 0


def test_qualification_grant_creates_the_type_once_then_revoke(requester, submitted, mturk):
    _, assignment = submitted
    qt = QualificationType.objects.create(owner=requester, name="Quiz passed", kind="quiz")
    _, op = paid_qualification_grant(qualification_type=qt, worker=assignment.worker, source="t")
    assert execute(op.pk).state == OperationState.DONE
    qt.refresh_from_db()
    assert qt.provider_qualification_id in mturk.state.qualification_types
    assert mturk.state.members[(qt.provider_qualification_id, "AGOODWORKER1")] == 1
    _, revoke = paid_qualification_revoke(qualification_type=qt, worker=assignment.worker) or (
        None,
        None,
    )
    assert revoke is not None
    assert execute(revoke.pk).state == OperationState.DONE
    assert (qt.provider_qualification_id, "AGOODWORKER1") not in mturk.state.members
    assert len(mturk.state.qualification_types) == 1


def test_create_qualification_type_with_a_test_and_answer_key(provider, mturk):
    payload = {
        "name": "Why-question quiz",
        "description": "Five questions",
        "test": "<QuestionForm>...</QuestionForm>",
        "answer_key": "<AnswerKey>...</AnswerKey>",
        "test_duration_seconds": 900,
    }
    result = provider.execute(call("create_qualification_type", payload))
    again = provider.execute(
        OperationCall(
            operation_id=1, kind="create_qualification_type", key="k", payload=payload, attempts=2
        )
    )
    assert result["qualification_type_id"] == again["qualification_type_id"]
    (qt,) = mturk.state.qualification_types.values()
    assert qt["AnswerKey"] == "<AnswerKey>...</AnswerKey>"
    assert qt["TestDurationInSeconds"] == 900


def test_block_and_unblock(requester, submitted, mturk):
    _, assignment = submitted
    _, op = paid_worker_block(requester=requester, worker=assignment.worker, reason="spam")
    assert execute(op.pk).state == OperationState.DONE
    assert mturk.state.blocks == {"AGOODWORKER1"}
    lifted = paid_worker_unblock(requester=requester, worker=assignment.worker)
    assert lifted is not None
    assert execute(lifted[1].pk).state == OperationState.DONE
    assert mturk.state.blocks == set()


def test_expire_moves_the_expiry_to_the_past(submitted, mturk):
    campaign, assignment = submitted
    hit_id = assignment.hit.provider_hit_id
    op, _ = operation_request(
        provider="mturk",
        kind=OperationKind.EXPIRE,
        key=f"expire:{hit_id}",
        payload={"provider_hit_ids": [hit_id]},
        campaign=campaign,
    )
    assert execute(op.pk).state == OperationState.DONE
    assert mturk.state.hits[hit_id]["HITStatus"] == "Reviewable"


def test_a_bonus_the_balance_cannot_cover_is_refused(submitted, mturk):
    _, assignment = submitted
    mturk.state.balance = Decimal("0.50")
    op = assignment_bonus_pay(
        assignment=assignment, amount=Decimal("0.75"), reason="Too much", key="broke"
    )
    done = execute(op.pk)
    assert done.state == OperationState.FAILED
    assert "needs 0.90 USD" in done.last_error
    assert mturk.state.calls["SendBonus"] == 0


def test_publishing_is_refused_when_the_balance_is_short(requester, mturk):
    mturk.state.balance = Decimal("1.00")
    _, stage = make_campaign(requester, provider="mturk", slug="mturk-poor", items=2)
    op = stage_provider_publish(stage=stage)
    assert op is not None
    done = execute(op.pk)
    assert done.state == OperationState.FAILED
    assert "Add funds" in done.last_error
    assert not mturk.state.hits


def test_qualification_requirements_map_system_and_custom_types():
    reqs = qualification_requirements(
        [
            {"kind": "approved_count", "min": 500},
            {"kind": "adult"},
            {"kind": "masters"},
            {"kind": "locale", "countries": ["US-NY", "GB"], "exclude": True},
            {"kind": "quiz", "qualification_type_id": 7, "min": 3},
        ],
        sandbox=False,
        custom={7: "3QUIZTYPE"},
    )
    assert [r["QualificationTypeId"] for r in reqs] == [
        "00000000000000000040",
        "00000000000000000060",
        MASTERS[False],
        "00000000000000000071",
        "3QUIZTYPE",
    ]
    assert reqs[3]["Comparator"] == "NotIn"
    assert reqs[3]["LocaleValues"] == [{"Country": "US", "Subdivision": "NY"}, {"Country": "GB"}]
    assert reqs[4]["IntegerValues"] == [3]
    with pytest.raises(PermanentProviderError, match="ISO country"):
        qualification_requirements([{"kind": "locale", "countries": ["45"]}], sandbox=True)
    with pytest.raises(PermanentProviderError, match="no MTurk"):
        qualification_requirements([{"kind": "telepathy"}], sandbox=True)


def test_campaign_credentials_are_used_and_never_shown(requester, mturk):
    campaign, _ = make_campaign(requester, provider="mturk", slug="mturk-own", items=1)
    campaign_credentials_set(
        campaign=campaign,
        values={
            "access_key_id": "AKIAOWNKEY0000000000",
            "secret_access_key": "own-secret-key-1234",
        },
        actor=requester,
    )
    own = provider_for("mturk", campaign_id=campaign.pk)
    assert isinstance(own, MTurkProvider)
    assert "own-secret" not in repr(own.client)
    with pytest.raises(PermanentProviderError, match="security token"):
        own.client.call("get_account_balance")  # the fake knows other keys


def test_hits_follow_the_campaign_pause_resume_and_stop(requester, mturk):
    from campaigns.models import CampaignState, ProviderOperation
    from campaigns.platforms.publishing import campaign_start

    campaign, stage = make_campaign(requester, provider="mturk", slug="mturk-follow", items=2)
    op = stage_provider_publish(stage=stage)
    assert op is not None
    execute(op.pk)

    def run_expiries() -> None:
        for pending in ProviderOperation.objects.filter(
            kind=OperationKind.EXPIRE, state=OperationState.PENDING
        ):
            assert execute(pending.pk).state == OperationState.DONE

    def statuses() -> set[str]:
        return {h["HITStatus"] for h in mturk.state.hits.values()}

    campaign = campaign_start(campaign=campaign, to_state=CampaignState.PAUSED)
    run_expiries()
    assert statuses() == {"Reviewable"}  # expired: nobody can accept
    campaign = campaign_start(campaign=campaign, to_state=CampaignState.LIVE)
    run_expiries()
    assert statuses() == {"Assignable"}
    campaign = campaign_start(campaign=campaign, to_state=CampaignState.COMPLETED)
    run_expiries()
    assert statuses() == {"Reviewable"}
    assert mturk.state.calls["UpdateExpirationForHIT"] == 6
    keys = ProviderOperation.objects.filter(kind=OperationKind.EXPIRE).values_list(
        "idempotency_key", flat=True
    )
    assert sorted(k.split(":")[0] for k in keys) == ["pause", "resume", "stop"]


def test_two_sites_sharing_an_account_do_not_take_each_others_hits(provider, mturk, settings):
    from campaigns.platforms.mturk.payloads import publish_payload

    payload = publish_payload(
        stage_id=1,
        hit_ids=[1],
        title="T",
        description="D",
        keywords="",
        reward=Decimal("0.10"),
        duration_seconds=600,
        auto_approval_seconds=3600,
        lifetime_seconds=3600,
        max_assignments=1,
        qualification_requirements=[],
        site_url="https://qaportal.example.org",
    )
    first = provider.execute(call("create_hit", payload, key="publish:stage:1:hits:1-1:1"))
    settings.SECRET_KEY = "another-site-another-secret-key-0123456789"
    second = provider.execute(call("create_hit", payload, key="publish:stage:1:hits:1-1:1"))
    assert first["hits"]["1"]["provider_hit_id"] != second["hits"]["1"]["provider_hit_id"]
    assert len(mturk.state.hits) == 2


def test_operations_holding_only_qaportal_ids_get_mturk_ids(submitted, mturk):
    """Rules (``validation``) write payloads with qaportal ids only; the executor adds
    MTurk's before the call."""
    campaign, assignment = submitted
    bonus, _ = operation_request(
        provider="mturk",
        kind=OperationKind.BONUS,
        key="rule:gold:1",
        payload={
            "worker": assignment.worker_id,
            "assignment": assignment.pk,
            "amount": "0.20",
            "reason": "Gold accuracy",
        },
        campaign=campaign,
    )
    block, _ = operation_request(
        provider="mturk",
        kind=OperationKind.BLOCK,
        key="rule:block:1",
        payload={"worker": assignment.worker_id},
        campaign=campaign,
    )
    more, _ = operation_request(
        provider="mturk",
        kind=OperationKind.ADD_ASSIGNMENTS,
        key="rule:extend:1",
        payload={"hit_id": assignment.hit_id, "count": 1},
        campaign=campaign,
    )
    for op in (bonus, block, more):
        done = execute(op.pk)
        assert done.state == OperationState.DONE, done.last_error
    assert [(b["WorkerId"], b["AssignmentId"]) for b in mturk.state.bonuses] == [
        ("AGOODWORKER1", assignment.provider_assignment_id)
    ]
    assert mturk.state.blocks == {"AGOODWORKER1"}
    assert mturk.state.added[assignment.hit.provider_hit_id] == 1
    bonus.refresh_from_db()
    assert "participant_id" not in bonus.payload  # the stored payload is left as it was


def test_masters_stages_cost_five_percent_more(requester, mturk):
    from campaigns.payments.costs import stage_cost_estimate
    from campaigns.platforms import fee_model_for, requires_masters

    assert fee_model_for("mturk").assignment_fee(
        reward=Decimal("1.00"), max_assignments=3
    ) == Decimal("0.20")
    assert fee_model_for("mturk", masters=True).assignment_fee(
        reward=Decimal("1.00"), max_assignments=10
    ) == Decimal("0.45")
    _, stage = make_campaign(requester, provider="mturk", slug="mturk-masters", items=2)
    plain = stage_cost_estimate(stage=stage).fees
    stage.qualification_requirements = [{"kind": "masters"}]
    stage.save(update_fields=["qualification_requirements"])
    assert requires_masters(stage.qualification_requirements)
    assert stage_cost_estimate(stage=stage).fees > plain


def test_a_quiz_qualification_type_is_created_once_and_grants_use_it(requester, submitted, mturk):
    from campaigns.platforms.workers import paid_qualification_type_create

    _, assignment = submitted
    qt = QualificationType.objects.create(owner=requester, name="WhyQA quiz", kind="quiz")
    op = paid_qualification_type_create(
        qualification_type=qt, test_xml="<QuestionForm/>", answer_key_xml="<AnswerKey/>"
    )
    again = paid_qualification_type_create(
        qualification_type=qt, test_xml="<QuestionForm/>", answer_key_xml="<AnswerKey/>"
    )
    assert again.pk == op.pk
    assert execute(op.pk).state == OperationState.DONE
    qt.refresh_from_db()
    (mturk_type,) = mturk.state.qualification_types.values()
    assert qt.provider_qualification_id == mturk_type["QualificationTypeId"]
    assert mturk_type["Name"] == f"WhyQA quiz (qaportal {qt.pk})"
    assert mturk_type["Test"] == "<QuestionForm/>"
    _, grant = paid_qualification_grant(qualification_type=qt, worker=assignment.worker, source="t")
    assert execute(grant.pk).state == OperationState.DONE
    assert len(mturk.state.qualification_types) == 1
    assert (qt.provider_qualification_id, "AGOODWORKER1") in mturk.state.members


def test_publishing_refuses_what_mturk_would_refuse_before_asking(requester, mturk, settings):
    from qaportal.errors import DomainError

    _, stage = make_campaign(requester, provider="mturk", slug="mturk-bad", items=1)
    stage.instructions = "Write\x07 questions"
    stage.save(update_fields=["instructions"])
    with pytest.raises(DomainError, match="control characters"):
        stage_provider_publish(stage=stage)
    stage.instructions = "Write questions"
    stage.save(update_fields=["instructions"])
    settings.SITE_URL = "http://qaportal.example.org"
    with pytest.raises(DomainError, match="https"):
        stage_provider_publish(stage=stage)
    assert sum(mturk.state.calls.values()) == 0
