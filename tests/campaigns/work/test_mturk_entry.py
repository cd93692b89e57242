"""MTurk's ExternalQuestion page (/w/mturk/): preview, accept, submit once, hand back."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.test import Client

from campaigns.models import HIT, Assignment, AssignmentStatus, HITItem, Worker, WorkerBlock
from tests.campaigns.work.conftest import add_items

pytestmark = pytest.mark.django_db

HIT_ID = "3YGYP1364Z8NFH3JMC9V5CRQR4DMZX"
ASSIGNMENT_ID = "3ZAK8W07I4EJH7YMFNDB6SAA0AD0UX"
WORKER_ID = "A1X2Y3Z4W5V6U7"
SANDBOX = "https://workersandbox.mturk.com"


@pytest.fixture
def hit(make_stage):
    stage = make_stage(instructions="Be kind.")
    stage.campaign.provider = "mturk"
    stage.campaign.save(update_fields=["provider"])
    hit = HIT.objects.create(
        stage=stage,
        provider="mturk",
        provider_hit_id=HIT_ID,
        max_assignments=3,
        places_left=3,
        reward=Decimal("0.50"),
        status="published",
    )
    (item,) = add_items(stage, ["a cat on a mat"])
    HITItem.objects.create(hit=hit, item=item)
    return hit


def entry(client: Client, **params: str | None):
    query = {
        "assignmentId": ASSIGNMENT_ID,
        "hitId": HIT_ID,
        "workerId": WORKER_ID,
        "turkSubmitTo": SANDBOX,
        **params,
    }
    return client.get("/w/mturk/", {k: v for k, v in query.items() if v is not None})


def form_fields(html: str) -> dict[str, str]:
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', html))


def test_preview_shows_the_task_read_only(client, hit):
    response = entry(client, assignmentId="ASSIGNMENT_ID_NOT_AVAILABLE", workerId=None)

    assert response.status_code == 200
    assert "Accept the HIT to start" in response.text
    assert "a cat on a mat" in response.text
    assert "inert" in response.text
    assert 'type="submit"' not in response.text
    assert not Assignment.objects.exists()
    assert not Worker.objects.exists()


def test_page_may_be_framed_by_mturk_only(client, hit):
    response = entry(client, assignmentId="ASSIGNMENT_ID_NOT_AVAILABLE")

    assert "X-Frame-Options" not in response
    policy = [d.strip() for d in response["Content-Security-Policy"].split(";")]
    assert "frame-ancestors 'self' https://www.mturk.com https://workersandbox.mturk.com" in policy
    assert "script-src 'self'" in policy  # the rest of the site's policy still holds


def test_accept_makes_one_assignment_with_an_unconfirmed_identity(client, hit):
    first = entry(client)
    again = entry(client)

    assert first.status_code == again.status_code == 200
    assignment = Assignment.objects.get()
    assert assignment.provider == "mturk"
    assert assignment.provider_assignment_id == ASSIGNMENT_ID
    assert assignment.status == AssignmentStatus.ACCEPTED
    assert assignment.worker.external_id == WORKER_ID
    assert assignment.worker.provider == "mturk"
    assert assignment.review_details["identity"]["status"] == "unconfirmed"
    hit.refresh_from_db()
    assert hit.places_left == 2
    fields = form_fields(first.text)
    assert fields["assignmentId"] == ASSIGNMENT_ID
    assert fields["turkSubmitTo"] == SANDBOX
    assert fields["qa_token"]
    assert 'name="items/0/text"' in first.text
    assert WORKER_ID not in first.text


def test_submit_stores_once_and_posts_back_to_mturk(hit):
    fields = form_fields(entry(Client()).text)
    fields.pop("csrfmiddlewaretoken", None)
    # In MTurk's iframe our cookies are third-party: the POST comes without any.
    client = Client(enforce_csrf_checks=True)
    post = {**fields, "items/0/text": "A cat sits.", "telemetry": ""}

    first = client.post("/w/mturk/submit/", post)
    second = client.post("/w/mturk/submit/", post)

    assert first.status_code == second.status_code == 200
    for response in (first, second):
        assert f'action="{SANDBOX}/mturk/externalSubmit"' in response.text
        assert f'name="assignmentId" value="{ASSIGNMENT_ID}"' in response.text
        assert "X-Frame-Options" not in response
    assignment = Assignment.objects.get()
    assert assignment.status == AssignmentStatus.SUBMITTED
    assert assignment.answers is not None
    assert assignment.answers["items"][0]["text"] == "A cat sits."
    assert Worker.objects.get().submitted_count == 1
    # Opening the HIT again after submitting hands it back again, nothing else.
    reopened = entry(client)
    assert "externalSubmit" in reopened.text
    assert Assignment.objects.count() == 1


def test_invalid_answer_comes_back_with_its_fields(client, hit):
    fields = form_fields(entry(client).text)

    response = client.post("/w/mturk/submit/", {**fields, "items/0/text": "x"})

    assert response.status_code == 400
    assert "Write at least 3 characters." in response.text
    assert form_fields(response.text)["assignmentId"] == ASSIGNMENT_ID
    assert Assignment.objects.get().status == AssignmentStatus.ACCEPTED


def test_forged_token_saves_nothing(client, hit):
    fields = form_fields(entry(client).text)

    response = client.post(
        "/w/mturk/submit/", {**fields, "qa_token": "forged", "items/0/text": "A cat sits."}
    )

    assert response.status_code == 400
    assert Assignment.objects.get().status == AssignmentStatus.ACCEPTED


@pytest.mark.parametrize(
    "turk_submit_to",
    [
        "https://evil.example.org",
        "http://www.mturk.com",
        "https://www.mturk.com.evil.example.org",
        "https://www.mturk.com/elsewhere",
        "https://www.mturk.com?x=1",
        "",
    ],
)
def test_bad_turk_submit_to_is_refused(client, hit, turk_submit_to):
    response = entry(client, turkSubmitTo=turk_submit_to)

    assert response.status_code == 400
    assert "only inside MTurk" in response.text
    assert not Assignment.objects.exists()


def test_bad_turk_submit_to_on_submit_is_refused(client, hit):
    fields = form_fields(entry(client).text)

    response = client.post(
        "/w/mturk/submit/",
        {**fields, "turkSubmitTo": "https://evil.example.org", "items/0/text": "A cat sits."},
    )

    assert response.status_code == 400
    assert Assignment.objects.get().status == AssignmentStatus.ACCEPTED


def test_extra_submit_hosts_come_from_settings(client, hit, settings):
    settings.MTURK_SUBMIT_HOSTS_EXTRA = ["http://localhost:8123"]

    response = entry(client, turkSubmitTo="http://localhost:8123")

    assert response.status_code == 200
    assert "http://localhost:8123" in response["Content-Security-Policy"]


def test_unknown_hit_gets_a_clear_page(client, hit):
    response = entry(client, hitId="3NOSUCHHIT00000000000000000000")

    assert response.status_code == 404
    assert "This HIT is not known here" in response.text
    assert "X-Frame-Options" not in response


def test_incomplete_link(client, hit):
    response = client.get("/w/mturk/")

    assert response.status_code == 400
    assert "Please open this task from MTurk" in response.text


def test_assignment_id_of_another_worker_is_refused(client, hit):
    entry(client)

    response = entry(client, workerId="A0THERW0RKER00")

    assert response.status_code == 403
    assert Assignment.objects.count() == 1


def test_new_assignment_for_the_same_worker_returns_the_old_one(client, hit):
    entry(client)

    response = entry(client, assignmentId="3NEWASSIGNMENT0000000000000000")

    assert response.status_code == 200
    statuses = dict(Assignment.objects.values_list("provider_assignment_id", "status"))
    assert statuses == {ASSIGNMENT_ID: "returned", "3NEWASSIGNMENT0000000000000000": "accepted"}
    hit.refresh_from_db()
    assert hit.places_left == 2


def test_paused_campaign_and_blocked_worker_take_nothing(client, hit):
    blocked = Worker.objects.create(provider="mturk", external_id=WORKER_ID)
    WorkerBlock.objects.create(requester=hit.stage.campaign.owner, worker=blocked, reason="spam")
    assert entry(client).status_code == 403

    hit.stage.campaign.state = "paused"
    hit.stage.campaign.save(update_fields=["state"])
    assert entry(client, workerId="A0THERW0RKER00").status_code == 409
    assert not Assignment.objects.exists()


def test_expired_hit_takes_no_new_assignment_but_keeps_the_old_one(client, hit):
    entry(client)
    HIT.objects.filter(pk=hit.pk).update(status="expired")

    assert entry(client).status_code == 200  # the worker's own assignment, resumed
    response = entry(client, assignmentId="3NEWASSIGNMENT0000000000000000")
    assert response.status_code == 409
    assert "This HIT has expired." in response.text
    assert Assignment.objects.count() == 1


def test_a_nul_character_in_an_mturk_answer_is_400(client, hit):
    fields = form_fields(entry(client).text)
    response = client.post("/w/mturk/submit/", {**fields, "items/0/text": "A cat\x00 sits."})
    assert response.status_code == 400
    assert "NUL character" in response.text
    assert Assignment.objects.get().status == AssignmentStatus.ACCEPTED


def test_the_task_page_with_its_signed_token_is_never_cached(client, hit):
    for response in (entry(client, assignmentId="ASSIGNMENT_ID_NOT_AVAILABLE"), entry(client)):
        assert response.status_code == 200
        assert response["Cache-Control"] == "private, no-store"


def test_made_up_assignment_ids_beyond_the_hits_places_are_refused(client, hit):
    """MTurk hands out at most max_assignments assignments of a HIT: a fourth id on a
    three-place HIT is made up and makes no assignment (it made an unconfirmed one)."""
    for n in range(3):
        taken = entry(Client(), assignmentId=f"3ZAK8W07I4EJH7YMFNDB6SAA0AD0U{n}", workerId=f"A{n}W")
        assert taken.status_code == 200
    made_up = entry(Client(), assignmentId="3ZAK8W07I4EJH7YMFNDB6SAA0AD0U9", workerId="AFORGED")
    assert "no places left" in made_up.text
    assert Assignment.objects.filter(hit=hit).count() == 3
    assert not Worker.objects.filter(external_id="AFORGED", assignments__isnull=False).exists()
    # A place whose worker let the deadline pass is MTurk's to hand out again.
    first = Assignment.objects.order_by("id").first()
    assert first is not None
    Assignment.objects.filter(pk=first.pk).update(deadline=first.accepted_at)
    again = entry(Client(), assignmentId="3ZAK8W07I4EJH7YMFNDB6SAA0AD0U8", workerId="ANEW")
    assert again.status_code == 200
    assert Assignment.objects.filter(hit=hit).count() == 4
