"""The MTurk results endpoints: import (multipart and raw CSV), streamed export,
review from the file; who may use them and what bad input gets."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.http import StreamingHttpResponse
from django.utils import timezone
from rest_framework.test import APIClient

from campaigns.models import HIT, Assignment
from tests.campaigns.platforms.mturk.csv.conftest import csv_bytes, rows_of
from tests.factories import (
    AssignmentFactory,
    CampaignFactory,
    HITFactory,
    StageFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

URL = "/api/v1/campaigns/mturk-qa/mturk-results/"


def upload(client: APIClient, url: str, content: bytes, **headers):
    return client.post(
        url,
        {"file": SimpleUploadedFile("Batch_4242_batch_results.csv", content, "text/csv")},
        format="multipart",
        **headers,
    )


def body(response) -> str:
    assert isinstance(response, StreamingHttpResponse)
    return b"".join(response.streaming_content).decode()  # type: ignore[arg-type]


def test_import_multipart(token_client, mturk_stage, batch_bytes):
    response = upload(token_client, URL, batch_bytes)

    assert response.status_code == 201, response.content
    assert response.json()["created"] == 4
    assert response.json()["work_time_seconds"] == 1261
    again = upload(token_client, URL, batch_bytes)
    assert again.status_code == 201
    assert again.json()["created"] == 0
    assert Assignment.objects.count() == 4


def test_import_raw_csv_into_a_chosen_stage(token_client, mturk_campaign, mturk_stage, batch_bytes):
    second = StageFactory.create(campaign=mturk_campaign, name="Second", position=1)

    response = token_client.post(f"{URL}?stage=1", batch_bytes, content_type="text/csv")

    assert response.status_code == 201, response.content
    assert set(HIT.objects.values_list("stage_id", flat=True)) == {second.pk}


def test_import_is_idempotent_with_a_key(token_client, mturk_stage, batch_bytes):
    first = upload(token_client, URL, batch_bytes, HTTP_IDEMPOTENCY_KEY="k-1")
    replay = upload(token_client, URL, batch_bytes, HTTP_IDEMPOTENCY_KEY="k-1")
    other = upload(token_client, URL, batch_bytes[:-30], HTTP_IDEMPOTENCY_KEY="k-1")

    assert first.status_code == replay.status_code == 201
    assert replay.json() == first.json()
    assert replay["Idempotent-Replayed"] == "true"
    assert other.status_code == 422


def test_bad_file_is_400_with_rows_and_nothing_stored(token_client, mturk_stage, batch_bytes):
    rows = rows_of(batch_bytes.decode("utf-8-sig"))
    rows[2]["AcceptTime"] = "yesterday"

    response = upload(token_client, URL, csv_bytes(rows))

    assert response.status_code == 400
    assert response.json()["code"] == "upload_rejected"
    assert response.json()["errors"][0] == {
        "row": 4,
        "field": "AcceptTime",
        "message": "'yesterday' is not a time like 'Mon Nov 18 08:46:18 PST 2019'",
    }
    assert HIT.objects.count() == 0


@pytest.mark.parametrize(
    ("query", "payload", "field"),
    [
        ("", None, "file"),
        ("?stage=first", b"x", "stage"),
    ],
)
def test_missing_file_or_bad_stage(token_client, mturk_stage, query, payload, field):
    if payload is None:
        response = token_client.post(URL + query, {}, format="multipart")
    else:
        response = upload(token_client, URL + query, payload)

    assert response.status_code == 400
    assert field in response.json()


def test_unknown_stage_and_local_campaign_are_400(
    token_client, requester, mturk_stage, batch_bytes
):
    CampaignFactory.create(owner=requester, slug="alpha")
    assert upload(token_client, URL + "?stage=5", batch_bytes).status_code == 400
    local = upload(token_client, "/api/v1/campaigns/alpha/mturk-results/", batch_bytes)
    assert local.status_code == 400
    assert "MTurk campaigns only" in local.json()["detail"]


def test_export_streams_csv_with_pseudonyms(token_client, mturk_stage, batch_bytes):
    upload(token_client, URL, batch_bytes)

    response = token_client.get(URL, HTTP_ACCEPT="text/csv")

    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert 'filename="mturk-qa_batch_results.csv"' in response["Content-Disposition"]
    rows = rows_of(body(response))
    assert len(rows) == 5
    assert all(r["WorkerId"].startswith("w_") for r in rows if r["WorkerId"])
    revealed = rows_of(body(token_client.get(URL + "?reveal_worker_ids=true")))
    assert "A1X2Y3Z4W5V6U7" in {r["WorkerId"] for r in revealed}


def test_review_endpoint_decides_local_work(token_client, requester):
    stage = StageFactory.create(campaign=CampaignFactory.create(owner=requester, slug="loc"))
    now = timezone.now()
    done = AssignmentFactory.create(
        hit=HITFactory.create(stage=stage), status="submitted", accepted_at=now, submitted_at=now
    )
    rows = rows_of(body(token_client.get("/api/v1/campaigns/loc/mturk-results/")))
    rows[0]["Approve"] = "x"

    response = upload(token_client, "/api/v1/campaigns/loc/mturk-results/review/", csv_bytes(rows))

    assert response.status_code == 200, response.content
    assert response.json()["counts"] == {"decided": 1}
    assert response.json()["results"][0]["status"] == "approved"
    done.refresh_from_db()
    assert (done.status, done.decided_by) == ("approved", requester)


def test_review_of_a_bad_file_is_400(token_client, mturk_stage):
    response = upload(token_client, URL + "review/", b"AssignmentId,Approve,Reject\nA1,x,no\n")

    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "Approve"


def test_other_requesters_get_404_and_change_nothing(mturk_stage, batch_bytes):
    bob = APIClient()
    bob.force_authenticate(UserFactory.create(username="bob"))

    assert bob.get(URL).status_code == 404
    assert upload(bob, URL, batch_bytes).status_code == 404
    assert upload(bob, URL + "review/", b"AssignmentId,Approve\nX,x\n").status_code == 404
    assert HIT.objects.count() == 0


def test_anonymous_gets_401(api_client, mturk_stage, batch_bytes):
    assert api_client.get(URL).status_code == 401
    assert upload(api_client, URL, batch_bytes).status_code == 401
    assert upload(api_client, URL + "review/", batch_bytes).status_code == 401
