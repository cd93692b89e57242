"""The results export's key queries cost what the campaign holds, not what the database
holds: in PostgreSQL's plan (EXPLAIN ANALYZE's row counts, never its timing) a 4-HIT
campaign beside one of 4,000 HITs reads a few rows per HIT of its own, and no HIT item,
item or assignment table is read whole."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from campaigns.models import HANDED_IN, HIT, Assignment, HITItem, Item, ItemSource, Stage
from campaigns.platforms.mturk.csv import selectors
from tests.factories import CampaignFactory, StageFactory, WorkerFactory

pytestmark = pytest.mark.django_db

BIG_TABLES = {"campaigns_hititem", "campaigns_item", "campaigns_assignment"}


def _fill(stage: Stage, hits: int, *, start: int = 0) -> None:
    items = Item.objects.bulk_create(
        Item(stage=stage, external_id=f"x-{start + n}", data={"q": n}, source=ItemSource.UPLOADED)
        for n in range(hits)
    )
    made = HIT.objects.bulk_create(
        HIT(stage=stage, provider="mturk", reward=Decimal("0.10"), max_assignments=1)
        for _ in range(hits)
    )
    HITItem.objects.bulk_create(
        HITItem(hit=hit, item=item, position=0) for hit, item in zip(made, items, strict=True)
    )
    worker = WorkerFactory.create()
    now = timezone.now()
    Assignment.objects.bulk_create(
        Assignment(
            hit=hit,
            worker=worker,
            status="submitted",
            answers={"a": 1},
            accepted_at=now,
            submitted_at=now,
        )
        for hit in made
    )


def _plan(sql: str, params: list[Any]) -> dict[str, Any]:
    with connection.cursor() as cursor:
        cursor.execute(
            "ANALYZE campaigns_hititem, campaigns_item, campaigns_hit, campaigns_assignment"
        )
        cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", params)
        found = cursor.fetchone()[0]
    return (json.loads(found) if isinstance(found, str) else found)[0]["Plan"]


def _nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return [plan, *(n for child in plan.get("Plans", []) for n in _nodes(child))]


def _queries(campaign_id: int) -> dict[str, tuple[str, list[Any]]]:
    return {
        "input keys": (selectors._INPUT_KEYS_SQL, [campaign_id]),
        "answer keys": (
            selectors._ANSWER_KEYS_SQL,
            [campaign_id, [str(s) for s in HANDED_IN]],
        ),
    }


def _rows_read(plan: dict[str, Any]) -> int:
    """Rows the plan's scans of the big tables touched (returned or filtered away)."""
    return sum(
        int((n.get("Actual Rows", 0) + n.get("Rows Removed by Filter", 0)) * n["Actual Loops"])
        for n in _nodes(plan)
        if n.get("Relation Name") in BIG_TABLES
    )


def test_the_key_queries_cost_per_campaign_not_per_database(requester):
    assert connection.vendor == "postgresql"  # the path under test (SQLite walks the rows)
    small = StageFactory.create(campaign=CampaignFactory.create(owner=requester, slug="small"))
    _fill(small, 4)
    big = StageFactory.create(campaign=CampaignFactory.create(owner=requester, slug="big"))
    _fill(big, 4000)

    for name, (sql, params) in _queries(small.campaign_id).items():
        plan = _plan(sql, params)
        whole = [
            n["Relation Name"]
            for n in _nodes(plan)
            if n["Node Type"] == "Seq Scan" and n.get("Relation Name") in BIG_TABLES
        ]
        assert not whole, f"{name}: reads {whole} whole"
        # 4 HITs of 4,004: what is read is the small campaign's rows, a few per HIT.
        assert _rows_read(plan) <= 4 * 4, (name, _rows_read(plan))


def test_the_columns_are_those_of_the_campaign(requester):
    small = StageFactory.create(campaign=CampaignFactory.create(owner=requester, slug="small"))
    _fill(small, 2)
    other = StageFactory.create(campaign=CampaignFactory.create(owner=requester, slug="other"))
    Item.objects.filter(stage=other).delete()
    item = Item.objects.create(stage=other, external_id="o", data={"elsewhere": 1})
    hit = HIT.objects.create(stage=other, provider="mturk", reward=Decimal("0.10"))
    HITItem.objects.create(hit=hit, item=item, position=0)
    # A HIT's second item does not add columns: only its first is the Input.
    second = Item.objects.create(stage=small, external_id="second", data={"later": 1})
    first_hit = HIT.objects.filter(stage=small).order_by("pk").first()
    assert first_hit is not None
    HITItem.objects.create(hit=first_hit, item=second, position=1)
    columns = selectors.mturk_csv_columns(campaign_id=small.campaign_id)
    assert "Input.q" in columns
    assert "Answer.a" in columns
    assert "Input.elsewhere" not in columns
    assert "Input.later" not in columns
