"""Items: /api/v1/stages/{id}/items/ and /api/v1/stages/{id}/items/upload/."""

from __future__ import annotations

import json
import uuid

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from campaigns.models import Campaign, CampaignState, Item, ItemSource, ItemStatus
from tests.factories import AssignmentFactory, ItemFactory

pytestmark = pytest.mark.django_db

CSV_ITEMS = b"id,topic,complexity_type\nq1,movies,count\nq2,music,superlative\n"
JSONL_ITEMS = (
    b'{"id": "q1", "topic": "movies", "complexity_type": "count"}\n'
    b'{"id": "q2", "topic": "music", "complexity_type": "superlative"}\n'
)


def items_url(stage_id: int, suffix: str = "") -> str:
    return f"/api/v1/stages/{stage_id}/items/{suffix}"


# --- list ------------------------------------------------------------------------------


def test_list_items(token_client, stage, item):
    response = token_client.get(items_url(stage.pk))

    assert response.status_code == 200
    (row,) = response.json()["results"]
    assert row["external_id"] == "a-1"
    assert row["data"] == {"topic": "movies", "complexity_type": "count"}
    assert row["gold"] is None
    assert row["source"] == "uploaded"
    assert row["status"] == "pending"


def test_list_only_this_stages_items(token_client, stage, item, campaign):
    ItemFactory.create(stage__campaign=campaign, external_id="elsewhere")

    response = token_client.get(items_url(stage.pk))

    assert [r["external_id"] for r in response.json()["results"]] == ["a-1"]


def test_list_filters_by_status_and_source(token_client, stage):
    ItemFactory.create(stage=stage, external_id="pending")
    ItemFactory.create(stage=stage, external_id="done", status=ItemStatus.COMPLETED)
    ItemFactory.create(
        stage=stage,
        external_id="produced",
        source=ItemSource.PRODUCED,
        source_assignment=AssignmentFactory.create(hit__stage=stage),
    )

    def ids(**params):
        response = token_client.get(items_url(stage.pk), params)
        assert response.status_code == 200
        return sorted(r["external_id"] for r in response.json()["results"])

    assert ids(status="completed") == ["done"]
    assert ids(source="produced") == ["produced"]
    assert ids(status="pending", source="uploaded") == ["pending"]
    assert ids() == ["done", "pending", "produced"]


def test_list_rejects_unknown_filter_value(token_client, stage):
    response = token_client.get(items_url(stage.pk), {"status": "lost"})

    assert response.status_code == 400
    assert "status" in response.json()


def test_list_missing_stage_is_404(token_client):
    assert token_client.get(items_url(999999)).status_code == 404


# --- upload ----------------------------------------------------------------------------


def test_upload_multipart_csv(token_client, stage):
    upload = SimpleUploadedFile("topics.csv", CSV_ITEMS, content_type="text/csv")

    response = token_client.post(items_url(stage.pk, "upload/"), {"file": upload})

    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["created"] == 2
    batch = uuid.UUID(body["batch"])
    stored = Item.objects.filter(stage=stage).order_by("external_id")
    assert [i.external_id for i in stored] == ["q1", "q2"]
    assert {i.upload_batch for i in stored} == {batch}
    assert stored[1].data == {"topic": "music", "complexity_type": "superlative"}


@pytest.mark.parametrize(
    ("content_type", "content"),
    [
        ("text/csv", CSV_ITEMS),
        ("text/csv; charset=utf-8", CSV_ITEMS),
        ("application/x-ndjson", JSONL_ITEMS),
        ("application/jsonl", JSONL_ITEMS),
    ],
)
def test_upload_raw_body(token_client, stage, content_type, content):
    response = token_client.post(items_url(stage.pk, "upload/"), content, content_type=content_type)

    assert response.status_code == 201, response.json()
    assert response.json()["created"] == 2
    assert set(Item.objects.filter(stage=stage).values_list("external_id", flat=True)) == {
        "q1",
        "q2",
    }


def test_uploaded_batch_filters_the_list(token_client, stage, item):
    response = token_client.post(items_url(stage.pk, "upload/"), CSV_ITEMS, content_type="text/csv")
    batch = response.json()["batch"]

    listed = token_client.get(items_url(stage.pk), {"upload_batch": batch}).json()

    assert sorted(r["external_id"] for r in listed["results"]) == ["q1", "q2"]


def test_upload_with_bad_rows_is_400_with_row_errors(token_client, stage):
    content = b"id,topic,complexity_type\nq1,movies,count\nq2,music,sideways\n"

    response = token_client.post(items_url(stage.pk, "upload/"), content, content_type="text/csv")

    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "upload_rejected"
    assert body["errors"]
    assert {e["row"] for e in body["errors"]} == {3}
    assert set(body["errors"][0]) == {"row", "field", "message"}
    assert not Item.objects.exists()


def test_upload_without_file_is_400(token_client, stage):
    response = token_client.post(items_url(stage.pk, "upload/"), {}, format="multipart")

    assert response.status_code == 400
    assert "file" in response.json()


def test_upload_unsupported_content_type_is_415(token_client, stage):
    response = token_client.post(
        items_url(stage.pk, "upload/"),
        json.dumps([{"topic": "movies"}]),
        content_type="application/json",
    )

    assert response.status_code == 415
    assert not Item.objects.exists()


def test_upload_over_the_limit_is_413(token_client, stage, settings):
    settings.ITEM_UPLOAD_MAX_BYTES = len(CSV_ITEMS) - 1
    url = items_url(stage.pk, "upload/")

    raw = token_client.post(url, CSV_ITEMS, content_type="text/csv")
    multipart = token_client.post(url, {"file": SimpleUploadedFile("t.csv", CSV_ITEMS)})

    assert (raw.status_code, multipart.status_code) == (413, 413)
    assert not Item.objects.exists()


def test_upload_exactly_at_the_limit_is_accepted(token_client, stage, settings):
    settings.ITEM_UPLOAD_MAX_BYTES = len(CSV_ITEMS)

    response = token_client.post(items_url(stage.pk, "upload/"), CSV_ITEMS, content_type="text/csv")

    assert response.status_code == 201


def test_upload_to_completed_campaign_is_refused(token_client, stage):
    Campaign.objects.filter(slug="alpha").update(state=CampaignState.COMPLETED)

    response = token_client.post(items_url(stage.pk, "upload/"), CSV_ITEMS, content_type="text/csv")

    assert response.status_code == 400
    assert response.json()["errors"] == {"state": ["completed"]}
    assert not Item.objects.exists()
