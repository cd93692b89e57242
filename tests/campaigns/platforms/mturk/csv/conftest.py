"""Fixtures for the MTurk batch CSV tests: an MTurk campaign with one stage, the
crafted batch results file (BOM, quoted cells, a multiline answer, PST and PDT times,
dollar rewards, a short row), and helpers to read CSV text back."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from campaigns.models import Campaign, Stage
from tests.factories import CampaignFactory, StageFactory

FIXTURES = Path(__file__).parent / "fixtures"
BATCH = FIXTURES / "Batch_4242_batch_results.csv"


@pytest.fixture
def batch_bytes() -> bytes:
    return BATCH.read_bytes()


@pytest.fixture
def mturk_campaign(requester) -> Campaign:
    return CampaignFactory.create(
        owner=requester, slug="mturk-qa", name="MTurk QA", provider="mturk"
    )


@pytest.fixture
def mturk_stage(mturk_campaign) -> Stage:
    return StageFactory.create(campaign=mturk_campaign, name="Write questions", position=0)


def rows_of(text: str) -> list[dict[str, str]]:
    """The CSV text as dicts by column (the header is the first row)."""
    return list(csv.DictReader(io.StringIO(text.removeprefix("\ufeff"), newline="")))


def csv_bytes(rows: list[dict[str, str]]) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()
