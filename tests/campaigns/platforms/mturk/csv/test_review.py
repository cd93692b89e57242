"""Reviewing from the file: Approve / Reject columns of an exported batch CSV."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from campaigns.models import Assignment, LedgerEntry, ProviderOperation
from campaigns.platforms.mturk.csv.results import mturk_results_import
from campaigns.platforms.mturk.csv.review import mturk_results_review
from campaigns.platforms.mturk.csv.selectors import mturk_csv_write
from qaportal.errors import UploadRejected
from tests.campaigns.platforms.mturk.csv.conftest import csv_bytes, rows_of
from tests.factories import AssignmentFactory, CampaignFactory, HITFactory, StageFactory

pytestmark = pytest.mark.django_db

NOW = timezone.now()
LONG_FEEDBACK = "The question does not use the topic shown on the page. " * 3


@pytest.fixture
def no_platform(monkeypatch):
    """Paid decisions are requested, not carried out: no provider runs in these tests."""
    monkeypatch.setattr("campaigns.platforms.operations._enqueue", lambda *a, **k: None)


@pytest.fixture
def local_work(requester):
    stage = StageFactory.create(campaign=CampaignFactory.create(owner=requester, slug="local"))
    hit = HITFactory.create(stage=stage, max_assignments=3)
    return [
        AssignmentFactory.create(
            hit=hit, status="submitted", accepted_at=NOW, submitted_at=NOW, answers={"q": str(n)}
        )
        for n in range(3)
    ]


def exported(campaign_id: int) -> list[dict[str, str]]:
    out = io.StringIO()
    mturk_csv_write(campaign_id=campaign_id, out=out)
    return rows_of(out.getvalue())


def test_local_assignments_are_decided_from_the_file(local_work, requester):
    campaign = local_work[0].hit.stage.campaign
    rows = exported(campaign.pk)
    rows[0]["Approve"] = "x"
    rows[1]["Reject"] = "Off topic, sorry."

    result = mturk_results_review(campaign=campaign, content=csv_bytes(rows), decided_by=requester)

    assert result.counts == {"decided": 2}
    assert result.skipped == 1
    statuses = {a.pk: a.status for a in Assignment.objects.all()}
    assert statuses == {
        local_work[0].pk: "approved",
        local_work[1].pk: "rejected",
        local_work[2].pk: "submitted",
    }
    rejected = Assignment.objects.get(pk=local_work[1].pk)
    assert (rejected.feedback, rejected.decision_reason) == ("Off topic, sorry.",) * 2
    assert rejected.decided_by == requester
    assert rejected.decision_source == "requester"

    again = mturk_results_review(campaign=campaign, content=csv_bytes(rows))
    assert again.counts == {"already_decided": 2}


def test_the_other_way_round_is_not_turned_over(local_work):
    campaign = local_work[0].hit.stage.campaign
    rows = exported(campaign.pk)
    rows[0]["Approve"] = "x"
    mturk_results_review(campaign=campaign, content=csv_bytes(rows))
    rows[0]["Approve"], rows[0]["Reject"] = "", "Changed my mind"

    result = mturk_results_review(campaign=campaign, content=csv_bytes(rows))

    assert result.results[0]["result"] == "already_decided"
    assert Assignment.objects.get(pk=local_work[0].pk).status == "approved"


def test_a_bad_row_decides_nothing(local_work):
    campaign = local_work[0].hit.stage.campaign
    rows = exported(campaign.pk)
    rows[0]["Approve"] = "x"
    rows[2]["Approve"], rows[2]["Reject"] = "x", "no"

    with pytest.raises(UploadRejected, match="row 4, column Approve"):
        mturk_results_review(campaign=campaign, content=csv_bytes(rows))
    assert set(Assignment.objects.values_list("status", flat=True)) == {"submitted"}


def test_unknown_ids_and_other_campaigns_are_not_found(local_work, requester):
    other = StageFactory.create(campaign=CampaignFactory.create(owner=requester)).campaign
    rows = exported(local_work[0].hit.stage.campaign_id)
    rows[0]["Approve"] = "x"
    rows[1]["AssignmentId"], rows[1]["Approve"] = "NOPE", "x"

    result = mturk_results_review(campaign=other, content=csv_bytes(rows))

    assert [r["result"] for r in result.results] == ["not_found", "not_found"]
    assert set(Assignment.objects.values_list("status", flat=True)) == {"submitted"}


def test_file_without_review_columns_is_refused(local_work):
    with pytest.raises(UploadRejected, match="neither an Approve nor a Reject column"):
        mturk_results_review(
            campaign=local_work[0].hit.stage.campaign, content=b"AssignmentId\nX\n"
        )


def test_paid_assignments_go_through_provider_operations(
    mturk_campaign, mturk_stage, batch_bytes, no_platform
):
    mturk_results_import(campaign=mturk_campaign, content=batch_bytes)
    rows = exported(mturk_campaign.pk)
    by_id = {r["AssignmentId"]: r for r in rows}
    by_id["3KOPY89HM81HB86DP1VKE8F03B03J9"]["Approve"] = "x"
    by_id["3TMFV4NEP9NV3PRCP6CL1Z6JU6OW8H"]["Reject"] = LONG_FEEDBACK
    by_id["3ZAK8W07I4EJH7YMFNDB6SAA0AD0UX"]["Approve"] = "x"  # approved on MTurk already

    result = mturk_results_review(campaign=mturk_campaign, content=csv_bytes(rows))

    assert result.counts == {"already_decided": 1, "requested": 2}
    approve = Assignment.objects.get(provider_assignment_id="3KOPY89HM81HB86DP1VKE8F03B03J9")
    reject = Assignment.objects.get(provider_assignment_id="3TMFV4NEP9NV3PRCP6CL1Z6JU6OW8H")
    ops = {op.idempotency_key: op for op in ProviderOperation.objects.all()}
    assert set(ops) == {f"approve:assignment:{approve.pk}", f"reject:assignment:{reject.pk}"}
    assert ops[f"approve:assignment:{approve.pk}"].payload["submission_id"] == (
        "3KOPY89HM81HB86DP1VKE8F03B03J9"
    )
    assert LedgerEntry.objects.filter(assignment=approve, status="committed").count() == 2

    again = mturk_results_review(campaign=mturk_campaign, content=csv_bytes(rows))
    assert ProviderOperation.objects.count() == 2
    assert again.counts["requested"] == 2


def test_paid_refusals_are_reported_per_row(mturk_campaign, mturk_stage, batch_bytes, no_platform):
    mturk_results_import(campaign=mturk_campaign, content=batch_bytes)
    rows = exported(mturk_campaign.pk)
    target = next(r for r in rows if r["AssignmentId"] == "3TMFV4NEP9NV3PRCP6CL1Z6JU6OW8H")
    target["Reject"] = "too short"

    result = mturk_results_review(campaign=mturk_campaign, content=csv_bytes(rows))

    assert result.results[0]["result"] == "refused"
    assert "at least 100 characters" in result.results[0]["detail"]
    assert ProviderOperation.objects.count() == 0


def test_command_prints_the_summary(local_work, tmp_path, capsys):
    rows = exported(local_work[0].hit.stage.campaign_id)
    rows[2]["Approve"] = "x"
    path = tmp_path / "reviewed.csv"
    path.write_bytes(csv_bytes(rows))

    call_command("review_mturk_results", str(path), "--campaign", "local")
    summary = json.loads(capsys.readouterr().out)

    assert summary["counts"] == {"decided": 1}
    assert summary["skipped"] == 2
    assert summary["results"][0]["assignment_id"] == f"qaportal-assignment-{local_work[2].pk}"
    assert Assignment.objects.get(pk=local_work[2].pk).status == "approved"


def test_command_refuses_a_bad_file(local_work, tmp_path):
    path = tmp_path / "reviewed.csv"
    path.write_bytes(b"AssignmentId,Approve\n,x\n")

    with pytest.raises(CommandError, match="row 2, column AssignmentId"):
        call_command("review_mturk_results", str(path), "--campaign", "local")
