"""Importing MTurk's batch results file: what is stored, idempotence, all or nothing."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command

from campaigns.models import HIT, Assignment, CampaignWorker, HITStatus, Item, Worker
from campaigns.platforms.mturk.csv.results import mturk_results_import
from qaportal.errors import DomainError, UploadRejected
from tests.campaigns.platforms.mturk.csv.conftest import BATCH, csv_bytes, rows_of
from tests.factories import CampaignFactory, StageFactory
from tests.helpers import FakeTerminal, progress_lines

pytestmark = pytest.mark.django_db

H1 = "3YGYP1364Z8NFH3JMC9V5CRQR4DMZX"
H2 = "3UEDKCTP9VQ0WEDZNQ9SXE7M9D8K7Q"
H3 = "3O2Y2UIUCQ2SPNTCEDN1Z5KRPXDFKN"


def snapshot() -> tuple:
    return (
        HIT.objects.count(),
        Item.objects.count(),
        Assignment.objects.count(),
        Worker.objects.count(),
        sorted(Worker.objects.values_list("submitted_count", "approved_count", "rejected_count")),
    )


def test_summary_counts_the_file(mturk_campaign, mturk_stage, batch_bytes):
    result = mturk_results_import(campaign=mturk_campaign, content=batch_bytes)

    assert result.as_dict() == {
        "hits": 3,
        "assignments": 4,
        "workers": 3,
        "work_time_seconds": 270 + 41 + 750 + 200,
        "created": 4,
        "hits_created": 3,
        "items_created": 3,
        "workers_created": 3,
    }


def test_hits_items_and_places(mturk_campaign, mturk_stage, batch_bytes):
    mturk_results_import(campaign=mturk_campaign, content=batch_bytes)

    h1 = HIT.objects.get(provider="mturk", provider_hit_id=H1)
    assert h1.stage == mturk_stage
    assert h1.provider_group_id == "3AQGTXO3W5LRXQPRBHTFYSZ0Z6Y1RG"
    assert h1.reward == Decimal("1.25")
    assert (h1.max_assignments, h1.places_left, h1.status) == (3, 0, HITStatus.COMPLETED)
    # 08:46:18 PST is 16:46:18 UTC.
    assert h1.published_at == datetime(2019, 11, 18, 16, 46, 18, tzinfo=UTC)
    h3 = HIT.objects.get(provider_hit_id=H3)  # the short row: a HIT nobody worked on
    assert (h3.places_left, h3.status) == (3, HITStatus.EXPIRED)
    assert h3.assignments.count() == 0
    item = h1.items.get()
    assert item.external_id == f"mturk:{H1}"
    assert item.data == {"topic": "movies", "complexity_type": "count"}
    assert h3.items.get().data == {"topic": "", "complexity_type": ""}


def test_assignments_answers_status_and_times(mturk_campaign, mturk_stage, batch_bytes):
    mturk_results_import(campaign=mturk_campaign, content=batch_bytes)

    approved = Assignment.objects.get(provider_assignment_id="3ZAK8W07I4EJH7YMFNDB6SAA0AD0UX")
    assert approved.status == "approved"
    assert approved.provider == "mturk"
    assert approved.answers == {"question": "How many films did Kubrick direct?", "answer": "13"}
    assert approved.accepted_at == datetime(2019, 11, 18, 17, 1, 2, tzinfo=UTC)
    assert approved.submitted_at == datetime(2019, 11, 18, 17, 5, 32, tzinfo=UTC)
    assert approved.decided_at == datetime(2019, 11, 19, 18, 0, 0, tzinfo=UTC)
    assert approved.decision_source == "mturk"
    assert approved.work_seconds == 270
    assert approved.feedback == "Great questions!"
    assert approved.review_details["identity"]["status"] == "confirmed"
    assert approved.review_details["mturk"]["LifetimeApprovalRate"] == "100% (12/12)"

    rejected = Assignment.objects.get(provider_assignment_id="3IUZPWIU1O7PY2XVLYD4RN2EP0WKWO")
    assert rejected.status == "rejected"
    assert (rejected.answers or {})["answer"] == "=1+1"
    assert rejected.feedback == "The question is not about the topic."

    multiline = Assignment.objects.get(provider_assignment_id="3KOPY89HM81HB86DP1VKE8F03B03J9")
    assert multiline.status == "submitted"
    assert multiline.answers is not None
    assert multiline.answers["question"] == (
        "Which actor appeared in the most\nBond films,\nand how many?"
    )
    assert multiline.answers["answer"] == "Roger Moore, 7 — «café»"

    # PDT: 15:30 is 22:30 UTC.
    summer = Assignment.objects.get(provider_assignment_id="3TMFV4NEP9NV3PRCP6CL1Z6JU6OW8H")
    assert summer.accepted_at == datetime(2019, 6, 11, 22, 30, tzinfo=UTC)
    assert summer.deadline == datetime(2019, 6, 11, 23, 30, tzinfo=UTC)


def test_workers_with_pseudonyms_and_counts(mturk_campaign, mturk_stage, batch_bytes):
    mturk_results_import(campaign=mturk_campaign, content=batch_bytes)

    worker = Worker.objects.get(provider="mturk", external_id="A1X2Y3Z4W5V6U7")
    assert worker.pseudonym.startswith("w_")
    assert (worker.submitted_count, worker.approved_count, worker.rejected_count) == (2, 1, 0)
    assert Worker.objects.get(external_id="A9B8C7D6E5F4G3").rejected_count == 1
    assert CampaignWorker.objects.filter(campaign=mturk_campaign).count() == 3


def test_reimport_adds_nothing(mturk_campaign, mturk_stage, batch_bytes):
    mturk_results_import(campaign=mturk_campaign, content=batch_bytes)
    before = snapshot()

    again = mturk_results_import(campaign=mturk_campaign, content=batch_bytes)

    assert snapshot() == before
    assert (again.created, again.hits_created, again.items_created, again.workers_created) == (
        0,
        0,
        0,
        0,
    )
    assert (again.hits, again.assignments, again.workers) == (3, 4, 3)


def test_a_later_download_adds_only_new_assignments(mturk_campaign, mturk_stage, batch_bytes):
    rows = rows_of(batch_bytes.decode("utf-8-sig"))
    first = [r for r in rows if r["AssignmentId"] != "3KOPY89HM81HB86DP1VKE8F03B03J9"]
    mturk_results_import(campaign=mturk_campaign, content=csv_bytes(first))
    assert HIT.objects.get(provider_hit_id=H1).places_left == 1

    result = mturk_results_import(campaign=mturk_campaign, content=batch_bytes)

    assert result.created == 1
    assert HIT.objects.get(provider_hit_id=H1).places_left == 0
    assert Assignment.objects.count() == 4


def test_existing_worker_is_reused(mturk_campaign, mturk_stage, batch_bytes):
    Worker.objects.create(provider="mturk", external_id="A1X2Y3Z4W5V6U7")

    result = mturk_results_import(campaign=mturk_campaign, content=batch_bytes)

    assert (result.workers, result.workers_created) == (3, 2)


def test_item_id_from_input_id_column(mturk_campaign, mturk_stage, batch_bytes):
    rows = rows_of(batch_bytes.decode("utf-8-sig"))
    for n, row in enumerate(rows):
        row["Input.id"] = f"cell-{row['HITId'][:4]}"
        del rows[n]["Approve"]

    mturk_results_import(campaign=mturk_campaign, content=csv_bytes(rows))

    item = HIT.objects.get(provider_hit_id=H1).items.get()
    assert item.external_id == "cell-3YGY"
    assert "id" not in item.data


# --- bad files -----------------------------------------------------------------------


def _broken(batch_bytes: bytes, column: str, value: str, *, index: int = 1) -> bytes:
    rows = rows_of(batch_bytes.decode("utf-8-sig"))
    rows[index][column] = value
    return csv_bytes(rows)


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("SubmitTime", "Mon Nov 18 25:15:41 PST 2019", "hour must be in 0..23"),
        ("AcceptTime", "18/11/2019 10:15", "is not a time like"),
        ("SubmitTime", "Mon Nov 18 10:15:41 XYZ 2019", "unknown time zone"),
        ("Reward", "one dollar", "is not an amount"),
        ("AssignmentStatus", "Pending", "is not one of Submitted, Approved, Rejected"),
        ("WorkTimeInSeconds", "-3", "is not a whole number"),
        ("WorkerId", "", "needs the worker's id"),
        ("SubmitTime", "Mon Nov 18 10:00:00 PST 2019", "submitted before it was accepted"),
    ],
)
def test_a_bad_cell_stores_nothing_and_names_row_and_column(
    mturk_campaign, mturk_stage, batch_bytes, column, value, message
):
    with pytest.raises(UploadRejected) as caught:
        mturk_results_import(
            campaign=mturk_campaign, content=_broken(batch_bytes, column, value, index=1)
        )

    assert snapshot() == (0, 0, 0, 0, [])
    assert caught.value.errors[0]["row"] == 3
    assert caught.value.errors[0]["field"] == column
    assert message in caught.value.errors[0]["message"]
    assert f"row 3, column {column}" in str(caught.value)


def test_row_numbers_count_lines_of_multiline_cells(mturk_campaign, mturk_stage, batch_bytes):
    # The third data row spans lines 4-6; the row after it starts on line 7.
    text = batch_bytes.decode("utf-8-sig").replace("Tue Jun 11 15:30:00 PDT 2019", "soon")

    with pytest.raises(UploadRejected) as caught:
        mturk_results_import(campaign=mturk_campaign, content=text.encode())

    assert caught.value.errors[0]["row"] == 7


def test_duplicate_assignment_rows_are_refused(mturk_campaign, mturk_stage, batch_bytes):
    rows = rows_of(batch_bytes.decode("utf-8-sig"))

    with pytest.raises(UploadRejected, match="same assignment is on row 2"):
        mturk_results_import(campaign=mturk_campaign, content=csv_bytes([*rows, rows[0]]))
    assert snapshot() == (0, 0, 0, 0, [])


def test_longer_row_than_header_is_refused(mturk_campaign, mturk_stage, batch_bytes):
    content = batch_bytes.replace(b'"",""\r\n', b'"","","surplus"\r\n', 1)

    with pytest.raises(UploadRejected, match="Row 2 has 34 cells but the header only 33"):
        mturk_results_import(campaign=mturk_campaign, content=content)


def test_not_utf8_is_refused(mturk_campaign, mturk_stage, batch_bytes):
    with pytest.raises(UploadRejected, match="not valid UTF-8"):
        mturk_results_import(
            campaign=mturk_campaign, content=batch_bytes.replace("é".encode(), b"\xe9")
        )


def test_missing_columns_are_named(mturk_campaign, mturk_stage):
    with pytest.raises(UploadRejected, match="'AssignmentId' is missing"):
        mturk_results_import(campaign=mturk_campaign, content=b"HITId,Title\nX,Y\n")


def test_only_mturk_campaigns_take_batch_results(requester, batch_bytes):
    local = StageFactory.create(campaign=CampaignFactory.create(owner=requester)).campaign

    with pytest.raises(DomainError, match="MTurk campaigns only"):
        mturk_results_import(campaign=local, content=batch_bytes)


def test_a_hit_of_another_campaign_is_refused(mturk_campaign, mturk_stage, batch_bytes, requester):
    other = CampaignFactory.create(owner=requester, provider="mturk")
    StageFactory.create(campaign=other)
    mturk_results_import(campaign=other, content=batch_bytes)
    before = snapshot()

    with pytest.raises(UploadRejected, match="belongs to another campaign"):
        mturk_results_import(campaign=mturk_campaign, content=batch_bytes)
    assert snapshot() == before


# --- the command -------------------------------------------------------------------------


def test_command_prints_the_summary(mturk_campaign, mturk_stage, capsys):
    terminal = FakeTerminal()
    call_command(
        "import_mturk_results", str(BATCH), "--campaign", "mturk-qa", "--stage", "0",
        stderr=terminal,
    )  # fmt: skip
    first = json.loads(capsys.readouterr().out)
    # On a terminal, a progress bar over the file's rows; none in a log (below).
    assert "100 % 5/5 rows" in progress_lines(terminal)[-1]  # 5 rows: a HIT without work
    call_command("import_mturk_results", str(BATCH), "--campaign", "mturk-qa")
    second, logged = capsys.readouterr()
    second = json.loads(second)
    assert logged == ""

    assert {k: first[k] for k in ("hits", "assignments", "workers", "created")} == {
        "hits": 3,
        "assignments": 4,
        "workers": 3,
        "created": 4,
    }
    assert first["work_time_seconds"] == 1261
    assert second["created"] == 0


def test_command_reports_rows_and_columns(mturk_campaign, mturk_stage, tmp_path, batch_bytes):
    path = tmp_path / "bad.csv"
    path.write_bytes(_broken(batch_bytes, "Reward", "$1.2.5", index=2))

    with pytest.raises(CommandError, match=r"row 4, column Reward"):
        call_command("import_mturk_results", str(path), "--campaign", "mturk-qa")
    assert Assignment.objects.count() == 0


def test_command_unknown_stage_or_campaign(mturk_campaign, mturk_stage):
    with pytest.raises(CommandError, match="no stage at position 7"):
        call_command("import_mturk_results", str(BATCH), "--campaign", "mturk-qa", "--stage", "7")
    with pytest.raises(CommandError, match="No campaign"):
        call_command("import_mturk_results", str(BATCH), "--campaign", "nope")
