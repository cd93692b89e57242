"""The large-campaign reads use the indexes made for them: PostgreSQL's plan for each
query shape (with sequential scans priced out, on a small dataset) names the index.
Plans, never timings; ``bench/ten_million_bench.py`` measures the time."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from campaigns.insights.progress import recent_submissions
from campaigns.models import Assignment, StageAssignmentCount, StageAssignmentCountDelta
from campaigns.work.selectors import review
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
            "campaigns_stageassignmentcountdelta"
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


def test_pending_counter_deltas_are_read_by_their_stage_index():
    stage, _, _ = _work(3)
    pending = StageAssignmentCountDelta.objects.filter(stage_id__in=[stage.pk])
    assert pending.exists()  # the triggers appended them
    plan = _plan(pending.values_list("stage_id", "status", "n", "changes"))
    assert "countdelta_stage" in plan, plan
