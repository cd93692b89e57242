"""Exporting a campaign in MTurk's batch results layout: pseudonyms, formula guard,
bounded queries, and the round trip through the import."""

from __future__ import annotations

import io

import pytest
from django.utils import timezone

from campaigns.models import HIT, Assignment, Campaign, HITItem, Item, Worker
from campaigns.platforms.mturk.csv.format import STANDARD_COLUMNS, cell_neutralise, cell_restore
from campaigns.platforms.mturk.csv.results import mturk_results_import
from campaigns.platforms.mturk.csv.selectors import mturk_csv_rows, mturk_csv_write
from tests.campaigns.platforms.mturk.csv.conftest import rows_of
from tests.factories import (
    AssignmentFactory,
    CampaignFactory,
    HITFactory,
    ItemFactory,
    StageFactory,
    WorkerFactory,
)

pytestmark = pytest.mark.django_db


NOW = timezone.now()


def export(campaign: Campaign, **kwargs) -> tuple[str, int]:
    out = io.StringIO()
    written = mturk_csv_write(campaign_id=campaign.pk, out=out, **kwargs)
    return out.getvalue(), written


def test_layout_and_pseudonymised_workers(mturk_campaign, mturk_stage, batch_bytes):
    mturk_results_import(campaign=mturk_campaign, content=batch_bytes)

    text, written = export(mturk_campaign)
    rows = rows_of(text)

    assert written == 5  # 4 assignments and the HIT nobody worked on
    assert list(rows[0])[: len(STANDARD_COLUMNS)] == list(STANDARD_COLUMNS)
    assert list(rows[0])[len(STANDARD_COLUMNS) :] == [
        "Input.id",
        "Input.complexity_type",
        "Input.topic",
        "Answer.answer",
        "Answer.question",
        "Approve",
        "Reject",
    ]
    pseudonyms = set(Worker.objects.values_list("pseudonym", flat=True))
    assert {r["WorkerId"] for r in rows if r["WorkerId"]} <= pseudonyms
    assert "A1X2Y3Z4W5V6U7" not in text
    first = rows[0]
    assert first["Reward"] == "$1.25"
    assert first["CreationTime"] == "Mon Nov 18 08:46:18 PST 2019"
    assert first["AssignmentStatus"] == "Approved"
    assert first["ApprovalTime"] == "Tue Nov 19 10:00:00 PST 2019"
    assert first["LifetimeApprovalRate"] == "100% (12/12)"
    summer = next(r for r in rows if r["AssignmentId"] == "3TMFV4NEP9NV3PRCP6CL1Z6JU6OW8H")
    assert summer["AcceptTime"] == "Tue Jun 11 15:30:00 PDT 2019"
    assert (first["Approve"], first["Reject"]) == ("", "")


def test_raw_worker_ids_on_request(mturk_campaign, mturk_stage, batch_bytes):
    mturk_results_import(campaign=mturk_campaign, content=batch_bytes)

    text, _ = export(mturk_campaign, reveal_worker_ids=True)

    assert {r["WorkerId"] for r in rows_of(text) if r["WorkerId"]} == {
        "A1X2Y3Z4W5V6U7",
        "A9B8C7D6E5F4G3",
        "A5K5K5K5K5K5K5",
    }


@pytest.mark.parametrize("value", ['=HYPERLINK("x")', "+1", "-2", "@SUM(A1)", "\tx", "\rx"])
def test_formula_cells_are_neutralised(requester, value):
    stage = StageFactory.create(campaign=CampaignFactory.create(owner=requester))
    hit = HITFactory.create(stage=stage)
    HITItem.objects.create(hit=hit, item=ItemFactory.create(stage=stage, data={"topic": value}))
    AssignmentFactory.create(
        hit=hit, status="submitted", accepted_at=NOW, submitted_at=NOW, answers={"question": value}
    )

    text, _ = export(stage.campaign)
    row = rows_of(text)[0]

    assert row["Input.topic"] == "'" + value
    assert row["Answer.question"] == "'" + value
    assert cell_restore(row["Answer.question"]) == value


def test_neutralise_and_restore_are_inverse():
    for value in ["plain", "'quoted", "", "=1", "'=1", "''-", "-", "'"]:
        assert cell_restore(cell_neutralise(value)) == value


def test_local_campaign_gets_qaportal_ids_and_json_answers(requester):
    stage = StageFactory.create(campaign=CampaignFactory.create(owner=requester))
    hit = HITFactory.create(stage=stage)
    item = ItemFactory.create(stage=stage, data={"topic": "x", "n": 3})
    HITItem.objects.create(hit=hit, item=item)
    done = AssignmentFactory.create(
        hit=hit,
        status="approved",
        accepted_at=NOW,
        submitted_at=NOW,
        decided_at=NOW,
        answers={"questions": [{"q": "Why?"}]},
    )
    AssignmentFactory.create(hit=hit, status="accepted")  # not stored: not exported

    rows = rows_of(export(stage.campaign)[0])

    assert len(rows) == 1
    assert rows[0]["HITId"] == f"qaportal-hit-{hit.pk}"
    assert rows[0]["AssignmentId"] == f"qaportal-assignment-{done.pk}"
    assert rows[0]["Input.id"] == item.external_id
    assert rows[0]["Input.n"] == "3"
    assert rows[0]["Answer.questions"] == '[{"q": "Why?"}]'


def test_queries_do_not_grow_with_rows(requester, django_assert_max_num_queries):
    stage = StageFactory.create(campaign=CampaignFactory.create(owner=requester))
    for n in range(30):
        hit = HITFactory.create(stage=stage)
        HITItem.objects.create(hit=hit, item=ItemFactory.create(stage=stage))
        AssignmentFactory.create(
            hit=hit,
            worker=WorkerFactory.create(),
            status="submitted",
            accepted_at=NOW,
            submitted_at=NOW,
            answers={"question": f"q{n}"},
        )

    with django_assert_max_num_queries(8):
        rows = list(mturk_csv_rows(campaign_id=stage.campaign_id))
    assert len(rows) == 31


def test_round_trip_gives_the_same_data(mturk_campaign, mturk_stage, batch_bytes, requester):
    def data(campaign: Campaign) -> tuple:
        hits = sorted(
            HIT.objects.filter(stage__campaign=campaign).values_list(
                "provider_hit_id",
                "provider_group_id",
                "reward",
                "max_assignments",
                "places_left",
                "status",
                "published_at",
                "expires_at",
            )
        )
        items = sorted(
            (i.external_id, sorted(i.data.items()))
            for i in Item.objects.filter(stage__campaign=campaign)
        )
        assignments = sorted(
            Assignment.objects.filter(hit__stage__campaign=campaign).values_list(
                "provider_assignment_id",
                "hit__provider_hit_id",
                "worker__external_id",
                "status",
                "accepted_at",
                "submitted_at",
                "decided_at",
                "work_seconds",
                "feedback",
                "deadline",
            )
        )
        answers = sorted(
            (a.provider_assignment_id, sorted((a.answers or {}).items()), a.review_details["mturk"])
            for a in Assignment.objects.filter(hit__stage__campaign=campaign)
        )
        return hits, items, assignments, answers

    mturk_results_import(campaign=mturk_campaign, content=batch_bytes)
    before = data(mturk_campaign)
    text, _ = export(mturk_campaign, reveal_worker_ids=True)
    # MTurk ids are unique across campaigns: the original must go before its copy comes in.
    mturk_campaign.delete()
    copy = CampaignFactory.create(owner=requester, provider="mturk")
    StageFactory.create(campaign=copy, assignment_duration=mturk_stage.assignment_duration)

    result = mturk_results_import(campaign=copy, content=text.encode())

    assert result.created == 4
    after = data(copy)
    # The original file has no Input.id: items were named mturk:<HITId>, and keep that name.
    assert after == before
