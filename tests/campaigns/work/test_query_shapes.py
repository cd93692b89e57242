"""The large-campaign reads use the indexes made for them: PostgreSQL's plan for each
query shape (with sequential scans priced out, on a small dataset) names the index.
Plans, never timings; ``bench/ten_million_bench.py`` measures the time."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import QuerySet
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from campaigns.insights.money import campaign_costs
from campaigns.insights.progress import campaign_progress, recent_submissions
from campaigns.insights.workers import campaign_worker_table
from campaigns.models import (
    Assignment,
    StageAssignmentCount,
    StageAssignmentCountDelta,
    StageAssignmentJournal,
)
from campaigns.payments.budget import campaign_spending
from campaigns.payments.totals import ledger_stage_totals, ledger_worker_earnings
from campaigns.work.counts import stage_assignment_journal_fold
from campaigns.work.selectors import review
from campaigns.work.selectors.counts import (
    stage_held_work,
    stage_hit_counts,
    stage_item_counts,
    stage_recent_submissions,
    stage_worker_counts,
)
from campaigns.work.selectors.review import assignment_review_queue
from tests.campaigns.work.test_decisions import _work

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="plans are PostgreSQL's"),
]


def _plan(queryset: QuerySet[Any]) -> str:
    sql, params = queryset.query.get_compiler(using=queryset.db).as_sql()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "ANALYZE campaigns_assignment, campaigns_hit, campaigns_stageassignmentcount, "
            "campaigns_stageassignmentcountdelta, campaigns_stageassignmentjournal"
        )
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN {sql}", params)
        return "\n".join(row[0] for row in cursor.fetchall())


def test_review_queue_first_page_of_a_big_campaign_reads_the_queue_index_in_order(monkeypatch):
    monkeypatch.setattr(review, "QUEUE_WALK_SHARE", 0.5)  # a share this small data can show
    big, _, _ = _work(150)
    small, _, _ = _work(2)
    plan = _plan(assignment_review_queue(campaign=big.campaign)[:25])
    # An index in the page's order (submitted_at): the queue's partial index, or the
    # submitted_at index filtered on the status; the planner picks by its statistics.
    assert re.search(r"Index Scan using assignment_(awaiting_review|submitted_at) ", plan), plan
    # The index's order is the page's: no sort of the queue. The planner may still break
    # ties of the index's leading column itself (an Incremental Sort on its presorted key).
    assert not re.search(r"(?<!Incremental )\bSort  \(", plan), plan
    if "Incremental Sort" in plan:
        assert "Presorted Key: campaigns_assignment.submitted_at" in plan, plan
    # The small campaign beside it reads its own HITs' assignments, not the whole queue.
    plan = _plan(assignment_review_queue(campaign=small.campaign)[:25])
    assert "assignment_awaiting_review" not in plan, plan


def test_recent_submissions_read_the_submitted_at_index():
    stage, _, rows = _work(40)
    # Most of the work is old, as on any site that has run a while: the last hour's is
    # a small slice of the index.
    old = timezone.now() - timedelta(days=2)
    Assignment.objects.filter(pk__in=[a.pk for a in rows[2:]]).update(
        accepted_at=old - timedelta(minutes=5), submitted_at=old
    )
    since = timezone.now() - timedelta(hours=1)
    plan = _plan(recent_submissions(stage_ids=[stage.pk], since=since))
    assert "assignment_submitted_at" in plan, plan


def test_counters_are_read_by_their_unique_index():
    stage, _, _ = _work(3)
    found = StageAssignmentCount.objects.filter(stage_id__in=[stage.pk], n__gt=0)
    plan = _plan(found.values_list("stage_id", "status", "n"))
    assert "stageassignmentcount_unique" in plan, plan


def _plans_of(read: Callable[[], Any]) -> list[str]:
    """The plans of every statement ``read`` runs (as run, parameters inlined)."""
    with CaptureQueriesContext(connection) as captured:
        read()
    plans = []
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("ANALYZE")
        cursor.execute("SET LOCAL enable_seqscan = off")
        for query in captured.captured_queries:
            cursor.execute(f"EXPLAIN {query['sql']}")
            plans.append("\n".join(row[0] for row in cursor.fetchall()))
    return plans


def test_dashboard_summaries_are_read_by_their_indexes():
    """The item, HIT and held-work counters by (stage, status), the ledger's totals by
    campaign: each read is one index scan of a few rows per stage or campaign, never a
    read of the items, HITs, assignments or ledger."""
    stage, _, _ = _work(3)
    ids = [stage.pk]
    campaign_id = stage.campaign_id
    for read, index in (
        (lambda: stage_item_counts(stage_ids=ids), "stageitemcount_stage"),
        (lambda: stage_hit_counts(stage_ids=ids), "stagehitcount_stage"),
        (lambda: stage_held_work(stage_ids=ids), "stageheldwork_stage"),
        (
            lambda: stage_recent_submissions(
                stage_ids=ids, since=timezone.now() - timedelta(hours=1)
            ),
            "stagesubmissionminute_stage",
        ),
        (
            lambda: stage_worker_counts(stage_ids=ids, worker_ids=[1, 2]),
            # By (worker, stage) or (stage, worker, migration 0023): both bound both columns.
            "stageworkercount_(worker|stage)",
        ),
        (
            lambda: ledger_stage_totals(campaign_id=campaign_id, statuses=["paid"]),
            "ledgerstagetotal_campaign",
        ),
        (
            lambda: ledger_worker_earnings(
                campaign_id=campaign_id, kinds=["reward"], statuses=["paid"]
            ),
            "ledgerworkertotal_campaign",
        ),
    ):
        (plan,) = _plans_of(read)
        assert re.search(f"(Index Scan using|Bitmap Index Scan on) {index} ", plan), plan
        for table in ("campaigns_item ", "campaigns_hit ", "campaigns_assignment ", "ledgerentry"):
            assert table not in plan, plan


def test_costs_and_progress_read_no_big_table():
    """The costs page's and the progress API's selectors, and the budget check, read no
    ledger entry and count no item, HIT or assignment (the items done, cached under the
    counters, aside)."""
    stage, _, _ = _work(3)
    campaign = stage.campaign
    for read in (
        lambda: campaign_spending(campaign=campaign),
        lambda: campaign_costs(campaign=campaign),
    ):
        for plan in _plans_of(read):
            assert "campaigns_ledgerentry" not in plan, plan
            assert "on campaigns_item " not in plan, plan
    cache.clear()
    plans = _plans_of(lambda: campaign_progress(campaign=campaign))
    # Only the items done (cached under the counters) touch the big tables.
    touching = [p for p in plans if re.search(r"on campaigns_(item|hit|assignment) ", p)]
    assert len(touching) <= 1, touching


def test_pending_counter_deltas_are_read_by_their_stage_index():
    stage, _, _ = _work(3)
    journal = StageAssignmentJournal.objects.filter(stage_id__in=[stage.pk])
    assert journal.exists()  # the worker writes' triggers appended them (migration 0026)
    plan = _plan(journal.values_list("stage_id", "new_status"))
    assert "assignmentjournal_stage" in plan, plan
    # A reader's rows of the journal, read by the stage and worker together.
    plan = _plan(
        StageAssignmentJournal.objects.filter(stage_id__in=[stage.pk], worker_id__in=[1, 2])
    )
    assert re.search(r"assignmentjournal_stage.*\n.*Index Cond: .*stage_id.*worker_id", plan), plan
    stage_assignment_journal_fold(stage_ids=[stage.pk])  # into the deltas
    pending = StageAssignmentCountDelta.objects.filter(stage_id__in=[stage.pk])
    assert pending.exists()
    plan = _plan(pending.values_list("stage_id", "status", "n", "changes"))
    assert "countdelta_stage" in plan, plan


def test_workers_table_page_reads_the_counters_by_stage_never_the_assignments():
    """A page of the workers table: the per-worker counters by the campaign's stages
    (``stageworkercount_stage``), the ledger's per-worker totals by campaign, the quality
    snapshot by (campaign, worker); never the assignments, HITs or ledger entries."""
    stage, _, _ = _work(3)

    def table() -> Any:
        return campaign_worker_table(campaign=stage.campaign, ordering="-approval_rate")

    def read(plans: list[str]) -> str:
        (plan,) = [p for p in plans if "campaigns_stageworkercount" in p]
        return plan

    table()  # the snapshot computed (eager mode) before the reads whose plans are read
    count_plan = read(_plans_of(lambda: table().count()))
    page_plan = read(_plans_of(lambda: table()[:50]))
    for plan in (count_plan, page_plan):
        # By an index with the stage in its condition: ``stageworkercount_stage`` (stage
        # first) at any size; on this test's few rows the planner may as well walk
        # ``stageworkercount_worker`` with the same condition.
        assert re.search(
            r"Index (Only )?Scan using stageworkercount_(stage|worker) "
            r"on campaigns_stageworkercount.*\n.*Index Cond: \(+stage_id = ",
            plan,
        ), plan
        for table_name in ("campaigns_assignment ", "campaigns_hit ", "campaigns_ledgerentry "):
            assert table_name not in plan, plan
    # The count leaves out the joins that cannot change it; the page reads them by index.
    assert "ledgerworkertotal_campaign" in page_plan, page_plan
    assert "campaignworkerquality_unique" in page_plan, page_plan
