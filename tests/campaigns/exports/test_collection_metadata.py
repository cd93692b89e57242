"""The collection-metadata export: on PostgreSQL the database formats the cells; the file
is byte for byte the one the Python writer makes (the reference, used elsewhere), over
the awkward values: no or empty provider ids, formula-like text, CSV quoting, whole
seconds and microseconds, no publication time, no work time; paged a few rows at a
time."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.db import connection

from campaigns.exports import collection_metadata
from campaigns.exports.collection_metadata import (
    METADATA_COLUMNS,
    _python_chunks,
    collection_metadata_stream,
)
from campaigns.exports.common import Tally
from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    Campaign,
    CampaignState,
    HITStatus,
    Stage,
    Worker,
)

pytestmark = pytest.mark.django_db

WHOLE = datetime(2026, 3, 1, 12, 0, 5, tzinfo=UTC)
FRACTION = datetime(2026, 3, 1, 12, 0, 5, 120, tzinfo=UTC)


def _hit(stage: Stage, *, provider_hit_id: str | None, reward: str, published: datetime | None):
    hit = HIT.objects.create(
        stage=stage,
        provider="local",
        provider_hit_id=provider_hit_id,
        reward=Decimal(reward),
        status=HITStatus.PUBLISHED,
        published_at=published,
    )
    HIT.objects.filter(pk=hit.pk).update(created_at=WHOLE)  # auto_now_add otherwise
    return hit


def _assignment(hit: HIT, worker: Worker, **fields) -> Assignment:
    defaults = {"status": AssignmentStatus.SUBMITTED, "accepted_at": WHOLE, "submitted_at": WHOLE}
    return Assignment.objects.create(hit=hit, worker=worker, provider="local", **defaults | fields)


@pytest.fixture
def campaign(requester) -> Campaign:
    campaign = Campaign.objects.create(
        owner=requester, name="Meta", slug="meta", state=CampaignState.LIVE
    )
    stage = Stage.objects.create(
        campaign=campaign, name='=cmd|" ,x\nnext line', task_type="question_writing"
    )
    workers = [
        Worker.objects.create(provider="local", external_id=external_id)
        for external_id in ("+plus", "@at", "\ttab", "plain", "-minus")
    ]
    unpublished = _hit(stage, provider_hit_id=None, reward="0.50", published=None)
    formula = _hit(stage, provider_hit_id="-3HIT", reward="12.30", published=FRACTION)
    empty = _hit(stage, provider_hit_id="", reward="0.05", published=WHOLE)
    _assignment(unpublished, workers[0], provider_assignment_id=None, work_seconds=None)
    _assignment(
        unpublished,
        workers[1],
        provider_assignment_id="=A1",
        status=AssignmentStatus.APPROVED,
        accepted_at=FRACTION,
        submitted_at=FRACTION,
        work_seconds=0,
    )
    _assignment(
        formula,
        workers[2],
        provider_assignment_id="",
        work_seconds=42,
        llm_flag={"status": "scored", "flagged": True, "score": 0.91},
    )
    _assignment(
        formula,
        workers[3],
        provider_assignment_id="A-4",
        status=AssignmentStatus.REJECTED,
        llm_flag={"status": "scored", "flagged": False, "score": 0.2},
    )
    _assignment(
        empty,
        workers[4],
        provider_assignment_id="@5",
        work_seconds=7,
        llm_flag={"status": "endpoint_refused", "flagged": False},
    )
    # Not stored work: left out.
    _assignment(
        empty, workers[0], status=AssignmentStatus.ACCEPTED, submitted_at=None, work_seconds=None
    )
    return campaign


def _python_file(campaign: Campaign, *, reveal: bool) -> str:
    header = io.StringIO()
    csv.writer(header).writerow(METADATA_COLUMNS)
    body = "".join(_python_chunks(campaign=campaign, reveal=reveal, tally=Tally()))
    return header.getvalue() + body


@pytest.mark.parametrize("reveal", [False, True])
def test_the_database_writes_the_python_writers_bytes(campaign, monkeypatch, reveal):
    assert connection.vendor == "postgresql"  # the path under test
    monkeypatch.setattr(collection_metadata, "PG_CHUNK", 2)  # three pages and an empty one
    tally = Tally()

    text = "".join(collection_metadata_stream(campaign=campaign, reveal=reveal, tally=tally))

    assert text == _python_file(campaign, reveal=reveal)
    assert tally.rows == 5
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert len(rows) == 5
    first, second, third, fourth, fifth = rows
    assert first["worker"] == (
        "'+plus" if reveal else Worker.objects.get(external_id="+plus").pseudonym
    )
    assert first["hit_id"] == str(HIT.objects.get(provider_hit_id=None).pk)
    assert first["assignment_id"] == str(Assignment.objects.order_by("pk")[0].pk)
    assert first["stage"] == "'=cmd|\" ,x\nnext line"
    assert first["reward"] == "0.50"
    assert first["upload_time"] == "2026-03-01T12:00:05+00:00"  # created: never published
    assert first["work_time_seconds"] == ""
    assert second["assignment_id"] == "'=A1"
    assert second["accept_time"] == second["submit_time"] == "2026-03-01T12:00:05.000120+00:00"
    assert second["work_time_seconds"] == "0"
    assert third["hit_id"] == "'-3HIT"
    assert third["assignment_id"] == str(Assignment.objects.order_by("pk")[2].pk)
    assert third["upload_time"] == "2026-03-01T12:00:05.000120+00:00"
    assert (fourth["approval_status"], fourth["rejected"]) == ("rejected", "yes")
    assert fifth["hit_id"] == str(HIT.objects.get(provider_hit_id="").pk)
    assert (fifth["reward"], fifth["assignment_id"]) == ("0.05", "'@5")
    flagged = [r["llm_flagged"] for r in rows]
    assert flagged == ["", "", "yes", "no", "no"]  # empty: no flag asked for
    if reveal:
        assert third["worker"] == "'\ttab"
        assert fifth["worker"] == "'-minus"
    assert "\r\n" in text  # the csv module's line ends, as before


def test_an_export_without_rows_is_its_header(requester):
    campaign = Campaign.objects.create(owner=requester, name="Empty", slug="empty")
    tally = Tally()

    text = "".join(collection_metadata_stream(campaign=campaign, tally=tally))

    assert text == ",".join(METADATA_COLUMNS) + "\r\n"
    assert tally.rows == 0
