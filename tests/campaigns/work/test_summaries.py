"""The dashboard's summaries (migration 0018) equal a full recount after every kind of
write, and still after compaction and a rebuild:

- the ledger's running totals (``LedgerStageTotal``, ``LedgerWorkerTotal``), written by
  ``payments.ledger`` on both databases;
- the item, HIT and held-work counters (``StageItemCount``, ``StageHITCount``,
  ``StageHeldWork``), written by PostgreSQL's triggers (SQLite's readers count rows).
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from unittest.mock import patch

import pytest
from django.db import connection
from django.utils import timezone

from campaigns.insights.money import campaign_costs
from campaigns.insights.workers import campaign_worker_table
from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    HITStatus,
    Item,
    ItemStatus,
    LedgerEntry,
    LedgerStageTotal,
    LedgerStatus,
    LedgerWorkerTotal,
    Stage,
    StageAssignmentCountDelta,
    StageAssignmentJournal,
    StageHeldWork,
    StageHITCount,
    StageSubmissionMinute,
    StageWorkerCount,
)
from campaigns.payments.budget import campaign_spending, campaign_spending_full
from campaigns.payments.ledger import (
    LedgerBonus,
    ledger_approval_commit,
    ledger_bonus_commit,
    ledger_bonuses_write,
    ledger_operation_settle,
)
from campaigns.payments.totals import (
    ledger_totals_compact,
    ledger_totals_full,
    ledger_totals_of,
    ledger_totals_rebuild,
)
from campaigns.work.counts import stage_counters_compact, stage_counters_rebuild
from campaigns.work.decisions import assignment_decide
from campaigns.work.selectors.counts import (
    stage_assignment_counts,
    stage_assignment_counts_and_versions,
    stage_assignment_counts_full,
    stage_held_work,
    stage_held_work_full,
    stage_hit_counts,
    stage_hit_counts_full,
    stage_item_counts,
    stage_item_counts_full,
    stage_recent_submissions,
    stage_worker_counts,
    stage_worker_counts_full,
)
from tests.campaigns.work.test_decisions import _work
from tests.factories import ProviderOperationFactory
from tests.validation.db_helpers import worker

pytestmark = pytest.mark.django_db
postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the stage counters' triggers are PostgreSQL's"
)


def _ledger_agrees(stage: Stage) -> tuple[dict, dict]:
    kept = ledger_totals_of(campaign_id=stage.campaign_id)
    assert kept == ledger_totals_full(campaign_id=stage.campaign_id)
    return kept


def _stage_counters_agree(*stages: Stage) -> None:
    ids = [s.pk for s in stages]
    assert stage_item_counts(stage_ids=ids) == stage_item_counts_full(stage_ids=ids)
    assert stage_hit_counts(stage_ids=ids) == stage_hit_counts_full(stage_ids=ids)
    assert stage_held_work(stage_ids=ids) == stage_held_work_full(stage_ids=ids)
    workers = set(Assignment.objects.values_list("worker_id", flat=True))
    assert stage_worker_counts(stage_ids=ids, worker_ids=workers) == stage_worker_counts_full(
        stage_ids=ids, worker_ids=workers
    )
    for ago in (timedelta(days=1), timedelta(minutes=10)):
        since = (timezone.now() - ago).replace(second=0, microsecond=0)
        recent = stage_recent_submissions(stage_ids=ids, since=since)
        with patch.object(connection, "vendor", "sqlite"):  # the count on the assignments
            assert recent == stage_recent_submissions(stage_ids=ids, since=since)


def _pay(stage: Stage) -> list[Assignment]:
    """Approve two answers with their reward and fee, bonus one, write two bonuses in
    bulk (one twice), and settle one operation paid, another cancelled."""
    rows = list(Assignment.objects.filter(hit__stage=stage).order_by("pk"))
    a, b, c = rows[:3]
    first, second = (
        ProviderOperationFactory.create(campaign=stage.campaign, kind="approve") for _ in "ab"
    )
    for assignment, operation in ((a, first), (b, second)):
        assignment_decide(assignment=assignment, approve=True, source="requester")
        ledger_approval_commit(
            assignment=assignment,
            operation=operation,
            pay_kind="reward",
            reward=Decimal("0.50"),
            fee=Decimal("0.10"),
            currency="USD",
        )
    # Again: idempotent, nothing new counted.
    ledger_approval_commit(
        assignment=a,
        operation=first,
        pay_kind="reward",
        reward=Decimal("0.50"),
        fee=Decimal("0.10"),
        currency="USD",
    )
    ledger_bonus_commit(
        campaign=stage.campaign,
        assignment=a,
        operation=first,
        key="b:1",
        amount=Decimal("0.25"),
        fee=Decimal("0.05"),
        currency="USD",
        memo="well done",
    )
    bonuses = [
        LedgerBonus(
            key=f"gold:{x.pk}",
            assignment_id=x.pk,
            worker_id=x.worker_id,
            amount=Decimal("0.30"),
            memo="gold",
            fee=Decimal("0.06"),
        )
        for x in (b, c)
    ]
    assert ledger_bonuses_write(stage=stage, bonuses=bonuses, status="planned", currency="USD") == 4
    assert ledger_bonuses_write(stage=stage, bonuses=bonuses, status="planned", currency="USD") == 0
    assert ledger_operation_settle(operation=first, status=LedgerStatus.PAID) == 4
    assert ledger_operation_settle(operation=first, status=LedgerStatus.PAID) == 0
    assert ledger_operation_settle(operation=second, status=LedgerStatus.CANCELLED) == 2
    return rows


def test_ledger_totals_equal_the_ledger_after_each_writer_compaction_and_rebuild():
    stage, _, _ = _work(3)
    _pay(stage)
    by_stage, by_worker = _ledger_agrees(stage)
    assert by_stage[(stage.pk, "reward", "paid")] == (1, Decimal("0.50"))
    assert by_stage[(stage.pk, "reward", "cancelled")] == (1, Decimal("0.50"))
    assert by_stage[(stage.pk, "bonus", "planned")] == (2, Decimal("0.60"))
    assert LedgerStageTotal.objects.count() > len(by_stage)  # deltas before folding
    assert ledger_totals_compact() > 0
    assert LedgerStageTotal.objects.count() == len(by_stage)
    assert LedgerWorkerTotal.objects.count() == len(by_worker)
    assert _ledger_agrees(stage) == (by_stage, by_worker)
    assert ledger_totals_compact() == 0  # folded rows stay as they are
    LedgerStageTotal.objects.all().delete()
    LedgerWorkerTotal.objects.update(amount=Decimal("9.99"))
    ledger_totals_rebuild()
    assert _ledger_agrees(stage) == (by_stage, by_worker)


def test_costs_workers_and_budget_read_the_summaries_and_agree_with_full_counts():
    stage, _, _ = _work(3)
    rows = _pay(stage)
    costs = campaign_costs(campaign=stage.campaign)
    entries = LedgerEntry.objects.filter(campaign=stage.campaign)
    paid = sum(e.amount for e in entries if e.status == LedgerStatus.PAID)
    committed = sum(e.amount for e in entries if e.status == LedgerStatus.COMMITTED)
    planned = sum(e.amount for e in entries if e.status == LedgerStatus.PLANNED)
    assert (costs.spent, costs.committed, costs.planned) == (paid, committed, planned)
    # Held: the submitted answers without an entry (rows[3:]; rows[2] has a planned bonus).
    held_rewards = sum(r.hit.reward for r in rows[3:])
    assert held_rewards > 0
    assert costs.stages[0].held >= held_rewards
    assert costs.budget_used == campaign_spending(campaign=stage.campaign)
    assert campaign_spending(campaign=stage.campaign) == campaign_spending_full(
        campaign=stage.campaign
    )
    earnings = {r.worker_id: r.earnings for r in campaign_worker_table(campaign=stage.campaign)}
    expected: dict[int, Decimal] = {}
    for e in entries.filter(
        kind__in=["reward", "bonus", "quiz_payment"], status__in=["committed", "paid"]
    ):
        assert e.worker_id is not None
        expected[e.worker_id] = expected.get(e.worker_id, Decimal(0)) + e.amount
    assert {w: v for w, v in earnings.items() if v} == expected


@postgresql
def test_stage_counters_equal_full_counts_after_each_kind_of_write():
    stage, _, rows = _work(4)  # 4 HITs x 2 workers, all submitted
    other, _, _ = _work(2)
    _stage_counters_agree(stage, other)
    assert stage_held_work(stage_ids=[stage.pk])[stage.pk][0] == 8
    # Decisions and ledger entries take work out of the held work.
    _pay(stage)
    _stage_counters_agree(stage, other)
    assert stage_held_work(stage_ids=[stage.pk])[stage.pk][0] == 5  # 2 approved, 1 bonused
    # Items and HITs change status, places, rewards.
    Item.objects.filter(stage=stage).update(status=ItemStatus.DROPPED)
    hit = HIT.objects.filter(stage=stage).order_by("pk").last()
    assert hit is not None
    HIT.objects.filter(pk=hit.pk).update(
        status=HITStatus.PUBLISHED, places_left=1, reward=Decimal("0.75")
    )
    _stage_counters_agree(stage, other)
    # An accepted answer returned, one re-opened, a ledger entry deleted, rows deleted.
    Assignment.objects.filter(pk=rows[-1].pk).update(status=AssignmentStatus.RETURNED)
    Assignment.objects.filter(pk=rows[-2].pk).update(status=AssignmentStatus.ACCEPTED)
    earlier = timezone.now() - timedelta(minutes=30)
    Assignment.objects.filter(pk=rows[0].pk).update(
        accepted_at=earlier - timedelta(minutes=1), submitted_at=earlier
    )
    LedgerEntry.objects.filter(assignment=rows[2]).delete()
    _stage_counters_agree(stage, other)
    Assignment.objects.filter(pk=rows[1].pk).update(worker=worker("w9"))
    Assignment.objects.filter(pk=rows[-1].pk).delete()
    Item.objects.filter(stage=other).delete()
    _stage_counters_agree(stage, other)
    expected = stage_hit_counts_full(stage_ids=[stage.pk, other.pk])
    # Compaction folds to one row per group and keeps the sums; a rebuild recounts.
    assert stage_counters_compact() > 0
    assert StageHITCount.objects.filter(stage=stage).count() == len(expected[stage.pk])
    _stage_counters_agree(stage, other)
    assert stage_counters_compact() == 0
    assert not StageWorkerCount.objects.filter(folded=False).exists()
    StageHITCount.objects.all().delete()
    StageWorkerCount.objects.update(n=7)
    stage_counters_rebuild(stage_ids=[stage.pk])
    assert stage_hit_counts(stage_ids=[stage.pk]) == {stage.pk: expected[stage.pk]}
    stage_counters_rebuild()
    _stage_counters_agree(stage, other)


@postgresql
def test_a_deleted_stage_leaves_deltas_that_compaction_drops():
    stage, _, _ = _work(2)
    stage_id = stage.pk
    stage.campaign.delete()
    assert StageHITCount.objects.filter(stage_id=stage_id).exists()  # the deletes' deltas
    stage_counters_compact()
    assert not StageHITCount.objects.filter(stage_id=stage_id).exists()


@postgresql
def test_bulk_writes_after_single_rows_count_alike_and_every_trigger_is_sized():
    """Migration 0021: each transition-table trigger runs its statements as planned once
    for a few rows, and through EXECUTE (planned for its size) above that; a bulk write
    on a connection whose first writes were single rows counts exactly as before."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT p.proname, p.prosrc FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid"
            " WHERE NOT t.tgisinternal"
            " AND (t.tgoldtable IS NOT NULL OR t.tgnewtable IS NOT NULL)"
        )
        functions = cursor.fetchall()
    assert len(functions) >= 12
    for name, source in functions:
        assert "IF rows > 8 THEN" in source, name
        assert "EXECUTE $q$" in source, name
    stage, _, rows = _work(6)  # 6 HITs x 2 workers, all submitted
    # Single rows first (the plans kept for the small branch), then the large branch.
    for row in rows[:3]:
        Assignment.objects.filter(pk=row.pk).update(status=AssignmentStatus.APPROVED)
    _stage_counters_agree(stage)
    Assignment.objects.filter(hit__stage=stage).update(status=AssignmentStatus.REJECTED)
    _stage_counters_agree(stage)
    assert stage_assignment_counts(stage_ids=[stage.pk]) == stage_assignment_counts_full(
        stage_ids=[stage.pk]
    )
    assert stage_assignment_counts(stage_ids=[stage.pk])[stage.pk]["rejected"] == 12
    Assignment.objects.filter(hit__stage=stage).delete()
    _stage_counters_agree(stage)
    assert not stage_assignment_counts(stage_ids=[stage.pk]).get(stage.pk, {}).get("rejected")


def _figures(stage: Stage) -> tuple:
    """What the pages read of a stage's assignment summaries."""
    ids = [stage.pk]
    workers = set(Assignment.objects.values_list("worker_id", flat=True))
    since = (timezone.now() - timedelta(days=1)).replace(second=0, microsecond=0)
    table = campaign_worker_table(campaign=stage.campaign, ordering="pseudonym")
    return (
        stage_assignment_counts_and_versions(stage_ids=ids),
        stage_held_work(stage_ids=ids),
        stage_worker_counts(stage_ids=ids, worker_ids=workers),
        stage_recent_submissions(stage_ids=ids, since=since),
        [(r.worker_id, r.submitted, r.approved, r.rejected) for r in table[:50]],
    )


@postgresql
def test_a_one_row_write_appends_one_journal_row_and_a_fold_keeps_every_figure():
    """Migration 0026: a one-row write that keeps its HIT and worker appends one journal
    row and no summary delta; the readers add the journal, and folding it changes no
    figure. A row moved to another HIT or worker writes the deltas as before."""
    stage, _, rows = _work(3)  # 3 HITs x 2 workers, all submitted
    stage_counters_compact()
    assert not StageAssignmentJournal.objects.exists()
    deltas = (StageAssignmentCountDelta, StageWorkerCount, StageSubmissionMinute, StageHeldWork)

    def sizes() -> list[int]:
        return [m.objects.filter(stage=stage).count() for m in deltas]

    before = sizes()
    a, b, c, d, e, _ = rows
    Assignment.objects.filter(pk=a.pk).update(status=AssignmentStatus.APPROVED)  # held out
    Assignment.objects.filter(pk=b.pk).update(status=AssignmentStatus.ACCEPTED)  # minute out
    earlier = timezone.now() - timedelta(hours=2)
    Assignment.objects.filter(pk=c.pk).update(
        accepted_at=earlier - timedelta(minutes=1), submitted_at=earlier
    )
    Assignment.objects.filter(pk=d.pk).update(feedback="no summary moves")
    Assignment.objects.filter(pk=e.pk).delete()
    assert sizes() == before
    assert sorted(
        StageAssignmentJournal.objects.values_list("old_status", "new_status", "held"), key=str
    ) == sorted(
        [
            (None, None, 0),  # c: its minute only
            ("submitted", "accepted", 0),  # b: held before and after
            ("submitted", "approved", -1),
            ("submitted", None, -1),  # e deleted
        ],
        key=str,
    )
    figures = _figures(stage)
    _stage_counters_agree(stage)
    assert figures[0][0] == stage_assignment_counts_full(stage_ids=[stage.pk])
    assert stage_counters_compact() > 0
    assert not StageAssignmentJournal.objects.exists()
    assert _figures(stage) == figures
    _stage_counters_agree(stage)
    # Another worker: the deltas, no journal row.
    Assignment.objects.filter(pk=d.pk).update(worker=worker("w9"))
    assert not StageAssignmentJournal.objects.exists()
    assert sizes() != before
    _stage_counters_agree(stage)
