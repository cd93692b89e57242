"""The LLM flag: asked for after an answer is stored, scored when the model answered,
stored with its evidence; the review rule holds and never rejects on a flag alone."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest

from campaigns.assist.endpoints import model_endpoint_create
from campaigns.assist.flags import llm_flag_record, llm_flags_reconcile
from campaigns.design.services import campaign_create, stage_add
from campaigns.models import (
    Assignment,
    AssignmentStatus,
    CampaignState,
    Item,
    ItemSource,
    ModelCall,
    ModelCallStatus,
)
from campaigns.platforms.publishing import campaign_start
from campaigns.simulate.llm import llm_workers
from campaigns.simulate.run import simulate_crowd
from campaigns.tasktypes import task_type_get
from campaigns.work.allocation import assignment_accept
from campaigns.work.invites import invite_create, invite_redeem, invite_token
from campaigns.work.submission import assignment_submit
from tests.campaigns.assist.fake_models import paraphrase, paraphrase_answer
from tests.campaigns.assist.fake_openai import FakeOpenAI
from tests.factories import UserFactory
from validation.rules.facts import StageFacts, Submission
from validation.rules.settings import review_rules_validate
from validation.rules.verdicts import combine, review, rule_llm_flag

QUESTIONS = [
    "Which river flows through the city of Vienna and then into the Black Sea?",
    "Who painted the ceiling of the Sistine Chapel in the early sixteenth century?",
]
TYPED = {"keystrokes": 80, "pastes": [], "paste_count": 0, "focus_losses": 0}


@pytest.fixture
def fake():
    with FakeOpenAI(api_key="sk-test-0123456789abcdef", answer=paraphrase_answer) as server:
        yield server


def _stage(fake, *, rules=None, threshold=0.6, items=1):
    owner = UserFactory.create()
    endpoint = model_endpoint_create(
        owner=owner,
        values={
            "name": "fake",
            "kind": "openai",
            "base_url": fake.base_url,
            "model": "fake-model-7b",
            "api_key": fake.api_key,
            "timeout_seconds": "2",
        },
    )
    campaign = campaign_create(owner=owner, name="Rephrase", slug=f"rephrase-{owner.pk}")
    stage = stage_add(
        campaign=campaign,
        name="Rephrase",
        task_type="rephrase",
        config={"llm_flag": {"endpoint": endpoint.pk, "threshold": threshold}},
        review_rules=rules or [],
        assignments_per_hit=3,
        reward=Decimal("0.10"),
    )
    for n, question in enumerate(QUESTIONS[:items]):
        Item.objects.create(
            stage=stage,
            external_id=f"q{n}",
            data={"question": question},
            source=ItemSource.UPLOADED,
        )
    campaign_start(campaign=campaign, to_state=CampaignState.PILOT)
    stage.refresh_from_db()
    return stage


def _submit(stage, text, telemetry):
    invite = invite_create(
        campaign=stage.campaign, created_by=stage.campaign.owner, expires_in=timedelta(days=1)
    )
    _, worker = invite_redeem(token=invite_token(invite=invite))
    assignment = assignment_accept(stage=stage, worker=worker)
    result = assignment_submit(
        assignment_id=assignment.pk,
        worker=worker,
        form={"items/0/rephrasing": text},
        telemetry=telemetry,
    )
    assert result.stored, result.errors
    return Assignment.objects.get(pk=assignment.pk)


@pytest.mark.django_db(transaction=True)
def test_the_flag_is_stored_with_its_evidence_after_the_answer(fake):
    stage = _stage(fake)
    # The worker pasted the model's rephrasing, lightly edited.
    model_text = paraphrase(QUESTIONS[0])
    pasted_text = model_text.replace("Could you", "Can you")
    pasted = _submit(
        stage,
        pasted_text,
        {"keystrokes": 2, "pastes": [{"field": "items/0/rephrasing", "length": len(pasted_text)}]},
    )
    own = _submit(stage, "Into which sea does the river running past Vienna empty?", TYPED)
    calls = ModelCall.objects.filter(purpose="llm_flag").order_by("assignment_id")
    assert [c.assignment_id for c in calls] == [pasted.pk, own.pk]
    assert all(c.status == ModelCallStatus.DONE for c in calls)
    flag = pasted.llm_flag
    assert flag["flagged"] is True
    assert flag["status"] == "scored"
    item = flag["items"][0]
    assert item["model_text"] == model_text
    assert (item["model_id"], item["model_version"], item["item"]) == (
        "fake-model-7b",
        "fp_fake_0001",
        "q0",
    )
    assert item["components"]["paste_share"] == 1.0
    assert item["thresholds"]["flag"] == 0.6
    assert own.llm_flag["flagged"] is False
    # Recording again changes nothing but the time.
    again = llm_flag_record(assignment_id=pasted.pk)
    assert again is not None
    assert again["items"] == flag["items"]


@pytest.mark.django_db(transaction=True)
def test_the_review_rule_holds_a_flagged_answer_and_lets_a_clear_one_through(fake):
    stage = _stage(fake, rules=[{"rule": "llm_flag"}, {"rule": "work_time", "min_seconds": 0}])
    text = paraphrase(QUESTIONS[0])
    flagged = _submit(stage, text, {"keystrokes": 0, "pastes": [{"length": len(text)}]})
    clear = _submit(stage, "Into which sea does the river running past Vienna empty?", TYPED)
    assert flagged.status == AssignmentStatus.SUBMITTED  # held, never rejected
    review_head = flagged.review_details["review"]
    assert review_head["decision"] == "hold"
    assert "llm_flag" in review_head["source"]
    assert clear.status == AssignmentStatus.SUBMITTED
    assert clear.review_details["review"]["decision"] == "none"


def _sub(flag):
    return Submission(id=1, hit_id=1, worker_id=1, status="submitted", answers={}, llm_flag=flag)


def _facts():
    return StageFacts(task_type="rephrase", items_by_hit={}, submissions={})


def test_a_flag_alone_never_rejects():
    flag = {"flagged": True, "score": 0.99, "status": "scored"}
    # The rule's settings cannot ask for a reject.
    assert review_rules_validate([{"rule": "llm_flag", "action": "reject"}])
    assert not review_rules_validate([{"rule": "llm_flag", "action": "hold"}])
    # Whatever parameters reach the rule, its verdict on a flag is hold.
    for params in (
        {"action": "hold", "on_missing": "hold"},
        {"action": "reject", "on_missing": "skip"},
    ):
        verdict = rule_llm_flag(_sub(flag), _facts(), params)
        assert verdict.decision == "hold"
    result = review(_sub(flag), _facts(), [{"rule": "llm_flag"}])
    assert result.decision == "hold"
    # With a rule that approves, the flag still holds the answer for a person.
    assert (
        combine(
            [
                rule_llm_flag(_sub(flag), _facts(), {"action": "hold"}),
                review(_sub(flag), _facts(), [{"rule": "auto_approve"}]).verdicts[0],
            ]
        ).decision
        == "hold"
    )


def test_no_flag_yet_follows_on_missing_and_a_clear_flag_passes():
    assert review(_sub(None), _facts(), [{"rule": "llm_flag"}]).decision == "hold"
    assert review(_sub(None), _facts(), [{"rule": "llm_flag", "on_missing": "skip"}]).decision == (
        "none"
    )
    clear = {"flagged": False, "score": 0.1, "status": "scored"}
    assert review(_sub(clear), _facts(), [{"rule": "llm_flag"}]).decision == "none"


def test_the_stage_setting_is_checked():
    rephrase, selection = task_type_get("rephrase"), task_type_get("sentence_selection_answer")
    assert not rephrase.validate_config({"llm_flag": {"endpoint": 3, "threshold": 0.5}})
    paths = {
        e.path for e in rephrase.validate_config({"llm_flag": {"endpoint": "x", "threshold": 2}})
    }
    assert paths == {"llm_flag/endpoint", "llm_flag/threshold"}
    assert selection.validate_config({"llm_flag": {"endpoint": 3}})


@pytest.mark.django_db(transaction=True)
def test_a_stage_without_the_setting_asks_no_model(fake):
    stage = _stage(fake)
    stage.config = {}
    stage.save(update_fields=["config"])
    assignment = _submit(stage, "Into which sea does the river past Vienna empty?", TYPED)
    assert assignment.llm_flag is None
    assert not ModelCall.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_an_endpoint_the_campaign_may_not_use_never_fails_the_submission(fake):
    stage = _stage(fake)
    stranger = model_endpoint_create(
        owner=UserFactory.create(), values={"name": "other", "kind": "baseline_bm25"}
    )
    stage.config = {"llm_flag": {"endpoint": stranger.pk}}
    stage.save(update_fields=["config"])
    assignment = _submit(stage, "Into which sea does the river past Vienna empty?", TYPED)
    assert assignment.llm_flag == {"status": "endpoint_refused", "flagged": False}
    assert assignment.status == AssignmentStatus.SUBMITTED


def test_llm_workers_are_the_share_asked_for_and_seeded():
    chosen = llm_workers(workers=10, share=0.3, seed=4)
    assert len(chosen) == 3
    assert chosen == llm_workers(workers=10, share=0.3, seed=4)
    assert not llm_workers(workers=10, share=0.0, seed=4)


@pytest.mark.django_db(transaction=True)
def test_the_simulator_pastes_the_models_output_and_the_flag_finds_it(fake):
    stage = _stage(fake, items=2)
    result = simulate_crowd(
        campaign=stage.campaign, workers=4, seed=1, shares={"good": 1.0}, llm_share=0.5
    )
    assert result.ok, result.errors
    assert result.llm_pasted
    flags = dict(
        Assignment.objects.filter(hit__stage=stage, submitted_at__isnull=False).values_list(
            "pk", "llm_flag"
        )
    )
    for pk, flag in flags.items():
        assert flag is not None
        assert flag["flagged"] is (pk in result.llm_pasted)


@pytest.mark.django_db(transaction=True)
def test_a_flag_lost_with_its_run_is_recorded_by_the_reconcile(fake):
    stage = _stage(fake)
    own = _submit(stage, "Into which sea does the river running past Vienna empty?", TYPED)
    assert own.llm_flag is not None
    Assignment.objects.filter(pk=own.pk).update(llm_flag=None)  # the recording was lost
    assert llm_flags_reconcile() == [own.pk]
    own.refresh_from_db()
    assert own.llm_flag is not None
    assert own.llm_flag["flagged"] is False
    assert llm_flags_reconcile() == []


@pytest.mark.django_db(transaction=True)
def test_the_api_gives_the_flag_with_the_assignment(fake, client):
    stage = _stage(fake)
    text = paraphrase(QUESTIONS[0])
    flagged = _submit(stage, text, {"keystrokes": 0, "pastes": [{"length": len(text)}]})
    client.force_login(stage.campaign.owner)
    response = client.get(f"/api/v1/campaigns/{stage.campaign.slug}/assignments/")
    assert response.status_code == 200
    body = response.json()
    rows = body["results"] if isinstance(body, dict) else body
    (row,) = [r for r in rows if r["id"] == flagged.pk]
    assert row["llm_flag"]["flagged"] is True
    assert row["llm_flag"]["items"][0]["model_id"] == "fake-model-7b"
