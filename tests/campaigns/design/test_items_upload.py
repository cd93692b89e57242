"""Item uploads: CSV and JSONL files become a stage's items, all or nothing."""

from __future__ import annotations

import json
import uuid

import pytest
from django.test import override_settings

from campaigns.design import items as items_service
from campaigns.design.items import items_delete_batch, items_upload
from campaigns.models import CampaignState, Item, ItemStatus, Stage
from qaportal.errors import DomainError, UploadRejected
from tests.factories import HITFactory, ItemFactory, StageFactory

pytestmark = pytest.mark.django_db

TYPES = ["count", "comparative", "superlative", "ordinal", "multihop"]


@pytest.fixture
def stage() -> Stage:
    return StageFactory.create(task_type="question_writing")


def _csv(rows: int, *, bad_line: int | None = None, ids: bool = True) -> bytes:
    """A CSV with a header (line 1) and ``rows`` data rows (lines 2..rows+1)."""
    lines = ["id,topic,complexity_type" if ids else "topic,complexity_type"]
    for line in range(2, rows + 2):
        kind = "sarcastic" if line == bad_line else TYPES[line % len(TYPES)]
        cells = [f"q-{line}"] if ids else []
        lines.append(",".join([*cells, f"topic {line}", kind]))
    return ("\n".join(lines) + "\n").encode()


def _jsonl(rows: int, *, bad_line: int | None = None) -> bytes:
    """JSON Lines with ``rows`` objects on lines 1..rows."""
    out = []
    for line in range(1, rows + 1):
        kind = "sarcastic" if line == bad_line else TYPES[line % len(TYPES)]
        out.append(
            json.dumps({"id": f"q-{line}", "topic": f"topic {line}", "complexity_type": kind})
        )
    return ("\n".join(out) + "\n").encode()


def _rejected(stage: Stage, content: bytes, filename: str = "items.csv") -> UploadRejected:
    before = Item.objects.count()
    with pytest.raises(UploadRejected) as info:
        items_upload(stage=stage, content=content, filename=filename)
    assert Item.objects.count() == before, "a rejected upload stored items"
    return info.value


def test_good_csv_of_1000_rows_is_stored_in_one_batch(stage):
    result = items_upload(stage=stage, content=_csv(1000), filename="cells.csv")

    assert result.created == 1000
    items = Item.objects.filter(stage=stage)
    assert items.count() == 1000
    assert set(items.values_list("upload_batch", flat=True)) == {result.batch}
    first = items.get(external_id="q-2")
    assert first.data == {"topic": "topic 2", "complexity_type": TYPES[2]}
    assert (first.source, first.status, first.gold) == ("uploaded", ItemStatus.PENDING, None)


def test_one_bad_row_in_1000_csv_rows_stores_nothing_and_names_line_637(stage):
    error = _rejected(stage, _csv(1000, bad_line=637))

    assert len(error.errors) == 1
    assert error.errors[0]["row"] == 637
    assert error.errors[0]["field"] == "complexity_type"
    assert "sarcastic" in error.errors[0]["message"]
    assert "header is line 1" in str(error)


def test_one_bad_row_in_1000_jsonl_rows_stores_nothing_and_names_line_637(stage):
    error = _rejected(stage, _jsonl(1000, bad_line=637), "cells.jsonl")

    assert [(e["row"], e["field"]) for e in error.errors] == [(637, "complexity_type")]
    assert "starting at 1" in str(error)


def test_good_jsonl_of_1000_rows_is_stored(stage):
    result = items_upload(stage=stage, content=_jsonl(1000), filename="cells.ndjson")

    assert result.created == 1000
    assert Item.objects.filter(stage=stage, upload_batch=result.batch).count() == 1000
    assert Item.objects.get(stage=stage, external_id="q-1").data == {
        "topic": "topic 1",
        "complexity_type": TYPES[1],
    }


def test_errors_are_capped_at_100_with_a_count_of_the_rest(stage):
    lines = ["topic,complexity_type"] + ["t,bad"] * 250
    error = _rejected(stage, "\n".join(lines).encode())

    assert len(error.errors) == 100
    assert [e["row"] for e in error.errors] == list(range(2, 102))
    assert "250 problem(s)" in str(error)
    assert "150 more" in str(error)


def test_utf8_bom_is_dropped(stage):
    content = "\ufeffid,topic,complexity_type\nq1,Zürich,count\n".encode()
    items_upload(stage=stage, content=content, filename="items.csv")

    item = Item.objects.get(stage=stage)
    assert item.external_id == "q1"
    assert item.data == {"topic": "Zürich", "complexity_type": "count"}


def test_utf8_bom_before_jsonl_is_dropped(stage):
    content = b"\xef\xbb\xbf" + _jsonl(2)
    assert items_upload(stage=stage, content=content, filename="items.jsonl").created == 2


def test_invalid_utf8_names_line_and_byte(stage):
    content = b"topic,complexity_type\nok,count\ncaf\xe9,count\n"
    error = _rejected(stage, content)

    assert error.errors[0]["row"] == 3
    assert "line 3" in str(error)
    assert "byte offset 34" in str(error)
    assert "0xe9" in str(error)


def test_nul_character_is_rejected(stage):
    error = _rejected(stage, b"topic,complexity_type\nx\x00,count\n")
    assert error.errors[0]["row"] == 2


def test_duplicate_id_within_the_file(stage):
    content = b"id,topic,complexity_type\na,t,count\nb,t,count\nc,t,count\na,t,count\n"
    error = _rejected(stage, content)

    assert [(e["row"], e["field"]) for e in error.errors] == [(5, "id")]
    assert "row 2" in error.errors[0]["message"]


def test_duplicate_id_against_existing_items_of_the_stage(stage):
    ItemFactory.create(stage=stage, external_id="q-7")
    ItemFactory.create(external_id="q-9")  # another stage: no conflict
    error = _rejected(stage, _csv(10))

    assert [(e["row"], e["field"]) for e in error.errors] == [(7, "id")]
    assert "exists" in error.errors[0]["message"]
    assert Item.objects.filter(stage=stage).count() == 1


def test_ids_the_stage_holds_are_named_after_earlier_chunks_went_in(stage, monkeypatch):
    # The unique constraint finds them as the rows are stored: the chunks stored before
    # the one holding a taken id are undone with it, and every taken id is named.
    monkeypatch.setattr(items_service, "COPY_CHUNK", 3)
    for external_id in ("q-9", "q-11"):
        ItemFactory.create(stage=stage, external_id=external_id)
    error = _rejected(stage, _csv(12))

    assert [(e["row"], e["field"]) for e in error.errors] == [(9, "id"), (11, "id")]
    assert "'q-9'" in error.errors[0]["message"]
    assert Item.objects.filter(stage=stage).count() == 2


def test_taken_ids_and_bad_rows_are_listed_together(stage):
    ItemFactory.create(stage=stage, external_id="q-4")
    error = _rejected(stage, _csv(6, bad_line=6))

    assert [(e["row"], e["field"]) for e in error.errors] == [
        (4, "id"),
        (6, "complexity_type"),
    ]


def test_csv_ids_are_stripped_blank_ones_generated_long_ones_refused(stage):
    good = b"id,topic,complexity_type\n  q-1  ,t,count\n,t,count\n"
    error = _rejected(stage, good + b"x" * 201 + b",t,count\n")
    assert [(e["row"], e["field"]) for e in error.errors] == [(4, "id")]
    assert "longer than 200" in error.errors[0]["message"]

    result = items_upload(stage=stage, content=good, filename="a.csv")

    stored = Item.objects.filter(stage=stage).order_by("pk")
    ids = list(stored.values_list("external_id", flat=True))
    assert ids == ["q-1", f"row-3-{result.batch.hex[:8]}"]


def test_text_only_and_json_column_files_store_the_same_rows(stage):
    items_upload(stage=stage, content=b"id,topic,complexity_type\na,t,count\n", filename="a.csv")
    other = StageFactory.create(campaign=stage.campaign, task_type="question_writing")
    json_file = b'id,topic,complexity_type:json\na,t,"""count"""\n'
    items_upload(stage=other, content=json_file, filename="a.csv")

    text_only, with_json = (Item.objects.get(stage=s) for s in (stage, other))
    assert text_only.data == with_json.data == {"topic": "t", "complexity_type": "count"}
    assert text_only.external_id == with_json.external_id == "a"


def test_same_ids_may_be_uploaded_to_another_stage(stage):
    items_upload(stage=stage, content=_csv(5), filename="a.csv")
    other = StageFactory.create(campaign=stage.campaign)
    assert items_upload(stage=other, content=_csv(5), filename="a.csv").created == 5


@pytest.mark.parametrize("content", [b"", b"\n\n  \n", b"\xef\xbb\xbf"])
def test_empty_file_is_rejected(stage, content):
    assert "no items" in str(_rejected(stage, content))


def test_header_only_file_is_rejected(stage):
    assert "header but no data rows" in str(_rejected(stage, b"topic,complexity_type\n"))


def test_row_limit(stage):
    with override_settings(ITEM_UPLOAD_MAX_ROWS=10):
        error = _rejected(stage, _csv(11))
        assert "more than 10 rows" in str(error)
        assert items_upload(stage=stage, content=_csv(10), filename="x.csv").created == 10


def test_size_limit(stage):
    content = _csv(10)
    with override_settings(ITEM_UPLOAD_MAX_BYTES=len(content) - 1):
        assert "limited to" in str(_rejected(stage, content))
    with override_settings(ITEM_UPLOAD_MAX_BYTES=len(content)):
        assert items_upload(stage=stage, content=content, filename="x.csv").created == 10


def test_generated_ids_are_row_numbers_that_never_collide(stage):
    first = items_upload(stage=stage, content=_csv(3, ids=False), filename="a.csv")
    second = items_upload(stage=stage, content=_csv(3, ids=False), filename="a.csv")

    assert first.batch != second.batch
    ids = set(Item.objects.filter(stage=stage).values_list("external_id", flat=True))
    assert len(ids) == 6
    assert f"row-2-{first.batch.hex[:8]}" in ids
    assert f"row-4-{second.batch.hex[:8]}" in ids


def test_csv_gold_json_columns_and_dotted_names(stage):
    content = (
        b"id,topic,complexity_type,a.b,meta:json,gold\n"
        b'q1,Paris,count,{"x": 1},"{""hops"": 2, ""tags"": [""geo""]}","""Paris"""\n'
        b"q2,Rome,yesno,,,\n"
    )
    items_upload(stage=stage, content=content, filename="items.csv")

    q1 = Item.objects.get(stage=stage, external_id="q1")
    assert q1.data == {
        "topic": "Paris",
        "complexity_type": "count",
        "a.b": '{"x": 1}',  # plain columns stay text, whatever they look like
        "meta": {"hops": 2, "tags": ["geo"]},
    }
    assert q1.gold == "Paris"
    q2 = Item.objects.get(stage=stage, external_id="q2")
    assert q2.data == {"topic": "Rome", "complexity_type": "yesno", "a.b": ""}
    assert q2.gold is None


def test_csv_bad_gold_json_is_a_row_error(stage):
    content = b"topic,complexity_type,gold\nParis,count,Paris\n"
    error = _rejected(stage, content)
    assert [(e["row"], e["field"]) for e in error.errors] == [(2, "gold")]
    assert "quoted" in error.errors[0]["message"]


def test_csv_header_problems(stage):
    error = _rejected(stage, b"id,external_id,topic,,complexity_type\n1,2,t,x,count\n")
    fields = {e["field"] for e in error.errors}
    assert fields == {"external_id", "column 4"}
    assert {e["row"] for e in error.errors} == {1}


def test_csv_row_with_missing_cells_and_unclosed_quote(stage):
    error = _rejected(stage, b"topic,complexity_type\nParis\nRome,count\n")
    assert error.errors[0]["row"] == 2
    assert "1 cells but the header has 2" in error.errors[0]["message"]

    error = _rejected(stage, b'topic,complexity_type\nRome,count\n"Paris,count\nx,count\n')
    assert error.errors[0]["row"] == 3
    assert "never closed" in error.errors[0]["message"]


def test_csv_quoted_newlines_and_crlf_keep_line_numbers(stage):
    content = b'topic,complexity_type\r\n"two\r\nlines",count\r\n\r\nRome,bogus\r\n'
    error = _rejected(stage, content)
    assert [e["row"] for e in error.errors] == [5]


def test_jsonl_nested_objects_gold_and_external_id(stage):
    rows = [
        {
            "external_id": "m1",
            "topic": "movies",
            "complexity_type": "count",
            "answer": {"answerType": "numerical", "answer": [3], "mention": "3"},
            "gold": {"answer": [3]},
        },
        {"id": 17, "topic": "books", "complexity_type": "yesno", "gold": None},
        {"topic": "music", "complexity_type": "generic"},
    ]
    content = "\n\n".join(json.dumps(r) for r in rows).encode()
    result = items_upload(stage=stage, content=content, filename="mintaka.jsonl")

    m1 = Item.objects.get(stage=stage, external_id="m1")
    assert m1.data["answer"] == {"answerType": "numerical", "answer": [3], "mention": "3"}
    assert "external_id" not in m1.data
    assert m1.gold == {"answer": [3]}
    assert Item.objects.get(stage=stage, external_id="17").gold is None
    # Blank lines count: the third object is on line 5.
    assert Item.objects.filter(stage=stage, external_id=f"row-5-{result.batch.hex[:8]}").exists()


def test_jsonl_line_problems(stage):
    content = b"\n".join(
        [
            b'["a"]',
            b'{"topic": "t", "complexity_type": "count"',
            b'{"topic": NaN, "complexity_type": "count"}',
            b'{"topic": "a\\u0000b", "complexity_type": "count"}',
            b'{"topic": "\\ud800", "complexity_type": "count"}',
        ]
    )
    error = _rejected(stage, content, "x.jsonl")
    assert [e["row"] for e in error.errors] == [1, 2, 3, 4, 5]
    assert "JSON object" in error.errors[0]["message"]


def test_format_is_sniffed_from_content_for_other_names(stage):
    assert items_upload(stage=stage, content=_jsonl(2), filename="items.txt").created == 2
    assert items_upload(stage=stage, content=_csv(2, ids=False), filename="upload").created == 2
    assert "JSON Lines" in str(_rejected(stage, b'[{"topic": "t"}]', "items.json"))


@pytest.mark.parametrize("state", [CampaignState.PILOT, CampaignState.LIVE, CampaignState.PAUSED])
def test_items_can_be_added_to_running_campaigns(stage, state):
    stage.campaign.state = state
    stage.campaign.save()
    assert items_upload(stage=stage, content=_csv(2), filename="x.csv").created == 2


def test_completed_campaign_takes_no_items(stage):
    stage.campaign.state = CampaignState.COMPLETED
    stage.campaign.save()
    with pytest.raises(DomainError, match="completed"):
        items_upload(stage=stage, content=_csv(2), filename="x.csv")
    assert not Item.objects.exists()


def test_produced_source_is_refused(stage):
    with pytest.raises(DomainError, match="source"):
        items_upload(stage=stage, content=_csv(2), filename="x.csv", source="produced")


def test_ids_taken_while_storing_reject_the_whole_upload(stage, monkeypatch):
    # Another writer inserts q-3 after the check: the unique constraint catches it.
    ItemFactory.create(stage=stage, external_id="q-3")
    monkeypatch.setattr(items_service, "_existing_ids", lambda **kwargs: set())
    error = _rejected(stage, _csv(5))
    assert "while the file was being stored" in str(error)


def test_delete_batch_of_unpublished_items(stage):
    kept = items_upload(stage=stage, content=_csv(3), filename="a.csv")
    other = items_upload(stage=stage, content=_csv(2, ids=False), filename="b.csv")

    assert items_delete_batch(stage=stage, batch=other.batch) == 2
    assert items_delete_batch(stage=stage, batch=uuid.uuid4()) == 0
    assert Item.objects.filter(stage=stage, upload_batch=kept.batch).count() == 3
    assert Item.objects.filter(stage=stage).count() == 3


def test_delete_batch_refuses_once_an_item_is_in_a_hit(stage):
    result = items_upload(stage=stage, content=_csv(3), filename="a.csv")
    hit = HITFactory.create(stage=stage)
    hit.items.add(Item.objects.get(stage=stage, external_id="q-2"))

    with pytest.raises(DomainError, match="1 item"):
        items_delete_batch(stage=stage, batch=result.batch)
    Item.objects.filter(external_id="q-3").update(status=ItemStatus.PUBLISHED)
    with pytest.raises(DomainError, match="2 item"):
        items_delete_batch(stage=stage, batch=result.batch)
    assert Item.objects.filter(stage=stage).count() == 3
