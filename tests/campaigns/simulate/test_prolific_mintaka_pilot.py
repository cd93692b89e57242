"""A Mintaka pilot on Prolific, end to end through the simulator and the validating fake.

The requester makes the campaign from the Mintaka recipe (priced in US dollars on MTurk)
for Prolific: the prices are converted at the rate they give, rewards under Prolific's
hourly minimum are raised to it (and say so), the paper's platform-neutral requirements
become Prolific filters (the countries through the filters catalogue), then the pilot
runs: participants enter each stage's study through its URL, the
requester's side syncs, approves (auto-approve rule) and publishes the hand-offs, which
grow the next stage's study by places. Writing → answer linking → question linking →
export, with every pound of the ledger matched on Prolific's side.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from decimal import Decimal

import pytest

from campaigns.design.items import items_upload
from campaigns.design.services import stage_update
from campaigns.exports import export_write
from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    Campaign,
    CampaignState,
    HITStatus,
    Item,
    LedgerEntry,
    LedgerKind,
    LedgerStatus,
    OperationKind,
    OperationState,
    ProviderOperation,
)
from campaigns.payments.costs import campaign_cost_estimate
from campaigns.platforms.platform_rules import stage_platform_rules
from campaigns.platforms.prolific.studies import prolific_studies_sync
from campaigns.platforms.publishing import campaign_start
from campaigns.recipes.services import campaign_create_with_recipe
from campaigns.simulate import simulate_crowd
from campaigns.work.handoff import handoff_flush
from qaportal.money import to_cents
from tests.campaigns.platforms.conftest import run_operations
from tests.campaigns.platforms.fake_prolific import FakeProlific
from tests.campaigns.simulate.test_prolific_simulated import FakeProlificHooks

pytestmark = pytest.mark.django_db(transaction=True)

FEE_RATE = Decimal("0.333")


@pytest.fixture
def fake(settings) -> Iterator[FakeProlific]:
    with FakeProlific(token="pilot-token") as server:
        settings.PROLIFIC_API_TOKEN = "pilot-token"
        settings.PROLIFIC_API_URL = server.url
        settings.PROLIFIC_WORKSPACE_ID = "workspace-1"
        settings.PROLIFIC_BACKOFF_BASE = 0.01
        settings.PROLIFIC_FEE_RATE = str(FEE_RATE)
        settings.SITE_URL = "https://qaportal.example.org"
        # Two places make a batch: the later batches grow the stage's study.
        settings.PAID_HANDOFF_BATCH_PLACES = 2
        yield server


def _requester_side(campaign: Campaign) -> bool:
    """What the requester's server does between the crowd's rounds: sync the studies
    (auto-approving what Prolific confirms), run the operations, publish hand-offs.
    True when anything moved, so the participants look for work again."""

    def state() -> tuple[int, int]:
        return (
            HIT.objects.filter(stage__campaign=campaign, status=HITStatus.PUBLISHED).count(),
            Assignment.objects.filter(
                hit__stage__campaign=campaign, status=AssignmentStatus.APPROVED
            ).count(),
        )

    before = state()
    for _ in range(3):
        prolific_studies_sync()
        run_operations()
        handoff_flush()
        run_operations()
    return state() != before


def test_mintaka_pilot_on_prolific_writing_to_export_with_the_ledger_exact(requester, fake):
    campaign = campaign_create_with_recipe(
        owner=requester,
        name="Mintaka on Prolific",
        slug="mintaka-prolific",
        provider="prolific",
        recipe="mintaka",
        sample=False,
        usd_rate=Decimal("0.80"),
    )
    write, link_answers, link_questions, *translate = campaign.stages.order_by("position")
    assert campaign.currency == "GBP"

    # $1.25 became £1.00 at the requester's rate, said so on the stage; bonuses too.
    assert write.reward == Decimal("1.00")
    assert write.config["priced_in"] == {
        "from": "USD",
        "to": "GBP",
        "rate": "0.80",
        "source": "requester",
        "reward": "1.25",
    }
    # $0.10 became £0.08: for linking's estimated minute that is under Prolific's £6 an
    # hour, so the recipe raised it to the minimum and said so; the bonus is the paper's.
    assert link_answers.reward == Decimal("0.10")
    assert link_answers.config["reward_raised"] == {
        "paper": "0.08",
        "to": "0.10",
        "currency": "GBP",
        "minimum_hourly": "6.00",
        "estimated_minutes": 1,
        "platform": "prolific",
    }
    assert link_answers.bonus_rules[0]["amount"] == "0.04"
    estimate = campaign_cost_estimate(campaign=campaign)
    assert estimate.conversions["Write questions"]["rate"] == "0.80"
    assert estimate.fee_rate == FEE_RATE
    assert "33.3 %" in estimate.fee_note
    assert all(not s.pay_warning for s in estimate.stages)

    # The recipe's requirements are the paper's, platform-neutral: explained on Prolific.
    notes = stage_platform_rules(stage=write)
    assert notes["problems"] == []
    by_kind = {n["requirement"].get("kind"): n for n in notes["requirements"]}
    assert by_kind["approved_count"]["filter"] == "approval_numbers"
    assert "not 5,000 approved studies" in by_kind["approved_count"]["note"]
    assert by_kind["locale"]["filter"] == "current-country-of-residence"
    assert "United States" in by_kind["locale"]["note"]

    stage_update(stage=write, assignments_per_hit=1)
    cells = [
        {"external_id": f"movies-{t}", "topic": "movies", "complexity_type": t}
        for t in ("comparative", "superlative", "yesno", "count")
    ]
    items_upload(
        stage=write,
        content="\n".join(json.dumps(c) for c in cells).encode(),
        filename="cells.jsonl",
    )
    # The pilot approves what Prolific confirms, and a participant may take many linkings.
    for stage in (write, link_answers, link_questions, *translate):
        stage.refresh_from_db()
        stage_update(
            stage=stage,
            review_rules=[{"rule": "auto_approve"}],
            config={**stage.config, "max_tasks_per_participant": 20},
        )

    campaign = campaign_start(campaign=campaign, to_state=CampaignState.PILOT)
    run_operations()
    hooks = FakeProlificHooks(fake)
    result = simulate_crowd(
        campaign=campaign,
        workers=6,
        seed=4,
        shares={"good": 1.0},
        prolific_hooks=hooks,
        requester=_requester_side,
    )
    _requester_side(campaign)

    assert result.ok, "\n".join(result.lines())
    assert result.server_errors() == 0
    answers = list(Item.objects.filter(stage=link_answers))
    questions = list(Item.objects.filter(stage=link_questions))
    assert answers, "no QA pair reached answer linking"
    assert all(i.data["answer_type"] not in ("boolean", "numeric") for i in answers)
    assert questions, "no QA pair reached question linking"
    assert Assignment.objects.filter(
        hit__stage=link_questions, status=AssignmentStatus.APPROVED
    ).exists()

    # One study per stage, grown by places as the hand-offs came.
    studies = {
        stage.name: set(
            HIT.objects.filter(stage=stage)
            .exclude(provider_group_id="")
            .values_list("provider_group_id", flat=True)
        )
        for stage in (write, link_answers, link_questions)
    }
    assert all(len(ids) == 1 for ids in studies.values()), studies
    assert len(fake.state.studies) == 3
    grown = ProviderOperation.objects.filter(
        kind=OperationKind.CREATE_STUDY, result__grown=True, state=OperationState.DONE
    )
    assert grown.exists()
    for ids in studies.values():
        (study_id,) = ids
        assert fake.state.studies[study_id]["total_available_places"] == sum(
            HIT.objects.filter(provider_group_id=study_id).values_list("max_assignments", flat=True)
        )
        filters = {f["filter_id"] for f in fake.state.studies[study_id]["filters"]}
        assert filters == {"approval_rate", "approval_numbers", "current-country-of-residence"}

    # The export: approved questions with their linked answers.
    out = io.StringIO()
    export_write(campaign=campaign, name="mintaka", out=out)
    examples = json.loads(out.getvalue())
    assert examples
    assert all(e["question"] and "answer" in e for e in examples)

    # The ledger, exact: every approved submission on Prolific is one reward and one fee,
    # paid; every bonus Prolific paid is one bonus entry; nothing else, nothing pending.
    assert not ProviderOperation.objects.exclude(state=OperationState.DONE).exists()
    approved = list(
        Assignment.objects.filter(
            hit__stage__campaign=campaign, status=AssignmentStatus.APPROVED
        ).select_related("hit")
    )
    on_prolific = [s for s in fake.state.submissions.values() if s["status"] == "APPROVED"]
    assert len(on_prolific) == len(approved)
    assert {a.provider_assignment_id for a in approved} == {s["id"] for s in on_prolific}
    entries = list(LedgerEntry.objects.filter(campaign=campaign))
    assert {e.currency for e in entries} == {"GBP"}
    # Agreement bonuses are planned (owed, shown on the costs page), not paid yet.
    planned = [e for e in entries if e.status == LedgerStatus.PLANNED]
    assert all(
        e.kind == LedgerKind.BONUS and e.operation_id is None and "agreed entities" in e.memo
        for e in planned
    )
    entries = [e for e in entries if e.status != LedgerStatus.PLANNED]
    assert {e.status for e in entries} == {LedgerStatus.PAID}
    rewards = {e.assignment_id: e.amount for e in entries if e.kind == LedgerKind.REWARD}
    fees = {e.assignment_id: e.amount for e in entries if e.kind == LedgerKind.PLATFORM_FEE}
    assert rewards == {a.pk: a.hit.reward for a in approved}
    assert fees == {a.pk: to_cents(a.hit.reward * FEE_RATE) for a in approved}
    bonus_pence = sum(p for s in fake.state.submissions.values() for p in s["bonus_payments"])
    bonuses = [e.amount for e in entries if e.kind == LedgerKind.BONUS]
    assert sum(bonuses, Decimal("0")) * 100 == bonus_pence
    bonus_fees = [e.amount for e in entries if e.kind == LedgerKind.BONUS_FEE]
    assert bonus_fees == [to_cents(b * FEE_RATE) for b in bonuses]
    kinds = {e.kind for e in entries}
    assert kinds <= {
        LedgerKind.REWARD,
        LedgerKind.PLATFORM_FEE,
        LedgerKind.BONUS,
        LedgerKind.BONUS_FEE,
    }
    total = sum((e.amount for e in entries), Decimal("0"))
    expected = (
        sum((a.hit.reward + to_cents(a.hit.reward * FEE_RATE) for a in approved), Decimal("0"))
        + sum(bonuses, Decimal("0"))
        + sum(bonus_fees, Decimal("0"))
    )
    assert total == expected
