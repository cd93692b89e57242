"""Rules' bulk actions on a paid platform (``campaigns.platforms.bulk`` through the
``Platform`` interface): validation's gold bonus, block and revocation are operations
the dispatch after their commit carries out on (the fake) Prolific and MTurk, not rows
left pending for the reconcile; a bonus waits for a confirmed identity and for budget."""

from __future__ import annotations

from decimal import Decimal
from types import SimpleNamespace
from typing import Any

from django.db import transaction

from campaigns.design.platform import BonusWanted, platform_for
from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    LedgerEntry,
    OperationKind,
    OperationState,
    ProviderOperation,
    QualificationGrant,
    QualificationType,
    WorkerBlock,
)
from campaigns.platforms.mturk.sync import mturk_hits_sync
from campaigns.platforms.operations import operations_reconcile
from campaigns.platforms.prolific.studies import prolific_studies_sync
from campaigns.platforms.publishing import stage_provider_publish
from campaigns.platforms.workers import paid_qualification_grant
from tests.campaigns.platforms.conftest import execute, make_campaign, run_operations
from tests.campaigns.platforms.mturk_helpers import page_submit
from tests.campaigns.platforms.test_prolific_flow import publish, work
from validation.rules.facts import GoldTally, StageFacts
from validation.rules.settings import BONUS_RULES, params_of
from validation.services import gold_actions_apply

GOLD_BONUS = {"rule": "gold_bonus", "amount": "0.25", "block": 4, "correct": 3}


def _facts(stage: Any, assignment: Assignment, outcomes: list[bool]) -> StageFacts:
    """The stage's facts as the review would find them: ``assignment``'s worker answered
    gold items with ``outcomes``, all in that assignment."""
    threshold = float(params_of(GOLD_BONUS, BONUS_RULES)["sentence_threshold"])
    tally = GoldTally(
        outcomes=list(outcomes), keys=[(assignment.pk, n) for n in range(len(outcomes))]
    )
    return StageFacts(
        task_type=stage.task_type,
        items_by_hit={},
        submissions={assignment.pk: SimpleNamespace(status=assignment.status)},  # type: ignore[dict-item]
        gold={(threshold, assignment.worker_id): tally},
    )


def _committed(fn: Any, django_capture_on_commit_callbacks: Any) -> Any:
    """Run ``fn`` in a transaction and then what its commit dispatches (the outbox)."""
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        return fn()


def _worked(stage: Any, fake: Any, client: Any, *, sync: bool = True) -> Assignment:
    study_id, _ = publish(stage, fake)
    session, _ = work(client, fake, study_id, stage)
    if sync:
        assert prolific_studies_sync() == 1
    return Assignment.objects.get(provider_assignment_id=session["id"])


def test_a_gold_bonus_on_prolific_is_paid_by_the_dispatch_after_its_commit(
    prolific_stage, fake, client, django_capture_on_commit_callbacks
):
    _, stage = prolific_stage
    stage.bonus_rules = [GOLD_BONUS]
    stage.save(update_fields=["bonus_rules"])
    assignment = _worked(stage, fake, client)
    facts = _facts(stage, assignment, [True, True, True, False])

    done = _committed(
        lambda: gold_actions_apply(stage=stage, facts=facts), django_capture_on_commit_callbacks
    )

    assert done["bonuses"] == 1
    key = f"gold_bonus:stage:{stage.pk}:worker:{assignment.worker_id}:block:0"
    op = ProviderOperation.objects.get(idempotency_key=key)
    assert (op.kind, op.state) == (OperationKind.BONUS, OperationState.DONE), op.last_error
    assert fake.submission(assignment.provider_assignment_id)["bonus_payments"] == [25]
    entries = LedgerEntry.objects.all()
    ledger = {e.key: (e.kind, e.amount, e.status, e.operation_id) for e in entries}
    assert ledger == {
        key: ("bonus", Decimal("0.25"), "paid", op.pk),
        f"bonus_fee:{key}": ("bonus_fee", Decimal("0.08"), "paid", op.pk),
    }
    # Nothing was left for the reconcile, and the review run again pays nothing more.
    assert operations_reconcile() == {"retry": 0, "recover": 0}
    again = _committed(
        lambda: gold_actions_apply(stage=stage, facts=facts), django_capture_on_commit_callbacks
    )
    assert again["bonuses"] == 0
    assert len(fake.calls("POST", r"/api/v1/bulk-bonus-payments/")) == 1
    assert fake.submission(assignment.provider_assignment_id)["bonus_payments"] == [25]


def test_a_bonus_waits_for_the_platform_to_confirm_the_worker_and_for_budget(
    prolific_stage, fake, client, django_capture_on_commit_callbacks
):
    campaign, stage = prolific_stage
    assignment = _worked(stage, fake, client, sync=False)
    platform = platform_for(stage)
    bonus = BonusWanted(
        key="rule:test:1",
        assignment_id=assignment.pk,
        worker_id=assignment.worker_id,
        amount=Decimal("0.40"),
        reason="agreed",
    )

    # Not confirmed yet: nothing is asked, nothing is written.
    assert platform.bonuses_pay(stage=stage, bonuses=[bonus]) == 0
    assert not ProviderOperation.objects.filter(kind=OperationKind.BONUS).exists()
    assert not LedgerEntry.objects.exists()

    prolific_studies_sync()
    # Confirmed, but past the budget cap: still waits.
    campaign.budget_cap = Decimal("0.01")
    campaign.save(update_fields=["budget_cap"])
    assert platform.bonuses_pay(stage=stage, bonuses=[bonus]) == 0
    assert not LedgerEntry.objects.exists()

    campaign.budget_cap = None
    campaign.save(update_fields=["budget_cap"])
    paid = _committed(
        lambda: platform.bonuses_pay(stage=stage, bonuses=[bonus, bonus]),
        django_capture_on_commit_callbacks,
    )
    assert paid == 1
    assert fake.submission(assignment.provider_assignment_id)["bonus_payments"] == [40]
    assert set(LedgerEntry.objects.values_list("status", flat=True)) == {"paid"}


def test_gold_disqualify_on_prolific_blocks_and_revokes_through_the_dispatch(
    prolific_stage, fake, client, django_capture_on_commit_callbacks
):
    campaign, stage = prolific_stage
    assignment = _worked(stage, fake, client)
    worker = assignment.worker
    qualification = QualificationType.objects.create(owner=campaign.owner, name="Validator")
    paid_qualification_grant(qualification_type=qualification, worker=worker, source="quiz")
    run_operations()
    stage.review_rules = [
        {
            "rule": "gold_disqualify",
            "min": 0.5,
            "min_gold": 4,
            "qualification": qualification.pk,
            "block": True,
        }
    ]
    stage.save(update_fields=["review_rules"])
    facts = _facts(stage, assignment, [False, False, False, True])
    threshold = float(params_of(stage.review_rules[0])["sentence_threshold"])
    facts.gold = {(threshold, worker.pk): next(iter(facts.gold.values()))}

    done = _committed(
        lambda: gold_actions_apply(stage=stage, facts=facts), django_capture_on_commit_callbacks
    )

    assert (done["revoked"], done["blocked"]) == (1, 1)
    assert QualificationGrant.objects.get(worker=worker).revoked_at is not None
    block = WorkerBlock.objects.get(worker=worker, lifted_at__isnull=True)
    assert block.reason.startswith(f"gold_disqualify stage {stage.pk}:")
    ops = {
        op.kind: op
        for op in ProviderOperation.objects.filter(
            kind__in=[OperationKind.REVOKE, OperationKind.BLOCK]
        )
    }
    assert {k: op.state for k, op in ops.items()} == {
        OperationKind.REVOKE: OperationState.DONE,
        OperationKind.BLOCK: OperationState.DONE,
    }
    assert ops[OperationKind.BLOCK].idempotency_key == (
        f"block:{campaign.owner_id}:{worker.pk}:{block.pk}"
    )
    groups = {g["name"]: g for g in fake.state.groups.values()}
    assert worker.external_id in groups[f"qaportal-block-{campaign.owner_id}"]["participant_ids"]
    assert worker.external_id not in groups[f"qaportal-qual-{qualification.pk}"]["participant_ids"]
    assert operations_reconcile() == {"retry": 0, "recover": 0}
    # Again: nothing new is revoked, blocked or asked.
    again = _committed(
        lambda: gold_actions_apply(stage=stage, facts=facts), django_capture_on_commit_callbacks
    )
    assert (again["revoked"], again["blocked"]) == (0, 0)
    assert ProviderOperation.objects.filter(kind=OperationKind.BLOCK).count() == 1


def test_no_gold_bonus_for_a_block_with_rejected_work(
    prolific_stage, fake, client, django_capture_on_commit_callbacks
):
    _, stage = prolific_stage
    stage.bonus_rules = [GOLD_BONUS]
    stage.save(update_fields=["bonus_rules"])
    assignment = _worked(stage, fake, client)
    assignment.status = AssignmentStatus.REJECTED
    facts = _facts(stage, assignment, [True, True, True, True])
    done = _committed(
        lambda: gold_actions_apply(stage=stage, facts=facts), django_capture_on_commit_callbacks
    )
    assert done["bonuses"] == 0
    assert not ProviderOperation.objects.filter(kind=OperationKind.BONUS).exists()


def test_a_gold_bonus_and_block_on_mturk_are_carried_out_after_their_commit(
    requester, mturk, django_capture_on_commit_callbacks
):
    _, stage = make_campaign(requester, provider="mturk", slug="mturk-gold", items=1)
    publish = stage_provider_publish(stage=stage)
    assert publish is not None
    assert execute(publish.pk).state == OperationState.DONE
    hit = HIT.objects.get(stage=stage)
    assignment = page_submit(mturk, hit, "AGOLDWORKER1")
    mturk_hits_sync()
    assignment.refresh_from_db()
    stage.bonus_rules = [GOLD_BONUS]
    stage.save(update_fields=["bonus_rules"])

    done = _committed(
        lambda: gold_actions_apply(
            stage=stage, facts=_facts(stage, assignment, [True, False, True, True])
        ),
        django_capture_on_commit_callbacks,
    )
    blocked = _committed(
        lambda: platform_for(stage).workers_block(
            campaign=stage.campaign, reasons={assignment.worker_id: "gold accuracy 1/4"}
        ),
        django_capture_on_commit_callbacks,
    )

    assert (done["bonuses"], blocked) == (1, 1)
    assert [(b["WorkerId"], b["BonusAmount"]) for b in mturk.state.bonuses] == [
        ("AGOLDWORKER1", "0.25")
    ]
    assert set(
        ProviderOperation.objects.filter(
            kind__in=[OperationKind.BONUS, OperationKind.BLOCK]
        ).values_list("state", flat=True)
    ) == {OperationState.DONE}
    assert set(LedgerEntry.objects.values_list("kind", "status")) == {
        ("bonus", "paid"),
        ("bonus_fee", "paid"),
    }
