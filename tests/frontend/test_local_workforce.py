"""The requester's side of the local workforce: invite links, grants, the review queue.

The two-stage local campaign and its submissions come from ``tests.helpers``
(``local_pipeline``, ``submitted_assignment``), shared with the API tests.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from campaigns.design.services import campaign_create, stage_add
from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    Campaign,
    InviteLink,
    Item,
    ItemSource,
    LocalGrant,
    Stage,
)
from campaigns.work.allocation import assignment_accept
from campaigns.work.decisions import assignment_approve
from campaigns.work.invites import (
    invite_check,
    invite_create,
    invite_redeem,
    invite_token,
    invite_url,
)
from tests.factories import UserFactory
from tests.helpers import local_pipeline, submitted_assignment

pytestmark = pytest.mark.django_db

SITE_URL = "https://qa.example.org"


def _messages(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def _url(name: str, campaign: Campaign, **kwargs: Any) -> str:
    return reverse(f"frontend:{name}", kwargs={"slug": campaign.slug, **kwargs})


@pytest.fixture(autouse=True)
def site_url(settings):
    settings.SITE_URL = SITE_URL


@pytest.fixture
def pipeline(requester) -> tuple[Campaign, Stage, Stage]:
    return local_pipeline(requester)


# --- Workforce page: invite links ------------------------------------------------------


def test_workforce_page_lists_sections_and_stage_urls(alice_client, campaign, stage):
    response = alice_client.get(_url("campaign-workforce", campaign))

    assert response.status_code == 200
    html = response.content.decode()
    assert "Invite links" in html
    assert "Annotators with an account" in html
    assert f'value="{SITE_URL}/work/s/{stage.pk}/"' in html
    # The detail page leads here.
    detail = alice_client.get(_url("campaign-detail", campaign)).content.decode()
    assert _url("campaign-workforce", campaign) in detail
    assert _url("campaign-review", campaign) in detail


def test_workforce_of_a_platform_campaign_explains_where_workers_come_from(alice_client, requester):
    campaign = campaign_create(owner=requester, name="On MTurk", provider="mturk")

    html = alice_client.get(_url("campaign-workforce", campaign)).content.decode()

    assert "workers come from the platform" in html
    assert "Create invite link" not in html
    response = alice_client.post(
        _url("invite-create", campaign), {"expires_in_days": 7, "stage": ""}
    )
    assert response.status_code == 400
    assert "local workforce only" in response.content.decode()
    assert not InviteLink.objects.exists()


def test_create_invite_shows_its_full_url(alice_client, campaign, stage, requester):
    before = timezone.now()
    response = alice_client.post(
        _url("invite-create", campaign),
        {"stage": "", "expires_in_days": "3", "max_uses": "2"},
    )

    invite = InviteLink.objects.get()
    assert response.status_code == 302
    assert response["Location"].endswith(f"#invite-{invite.pk}")
    assert invite.stage is None
    assert invite.max_uses == 2
    assert invite.created_by == requester
    assert before + timedelta(days=3) <= invite.expires_at <= timezone.now() + timedelta(days=3)
    # The token is signed with a timestamp: any URL shown must name this invite.
    (message,) = _messages(response)
    shown = re.search(re.escape(SITE_URL) + r"/work/i/([^/]+)/", message)
    assert shown
    assert invite_check(token=shown.group(1)) == invite
    page = alice_client.get(_url("campaign-workforce", campaign)).content.decode()
    listed = re.search(r'value="' + re.escape(SITE_URL) + r'/work/i/([^/"]+)/"', page)
    assert listed
    assert invite_check(token=listed.group(1)) == invite
    assert "0 / 2" in page
    assert "active" in page


def test_create_invite_for_one_stage(alice_client, campaign, stage):
    alice_client.post(_url("invite-create", campaign), {"stage": stage.pk, "expires_in_days": 1})
    assert InviteLink.objects.get().stage == stage


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"stage": "", "expires_in_days": "0"}, "expires_in_days"),
        ({"stage": "", "expires_in_days": "400"}, "expires_in_days"),
        ({"stage": "", "expires_in_days": "7", "max_uses": "0"}, "max_uses"),
    ],
)
def test_invalid_invite_form_is_400_and_stores_nothing(alice_client, campaign, data, field):
    response = alice_client.post(_url("invite-create", campaign), data)

    assert response.status_code == 400
    assert field in response.context["invite_form"].errors
    assert not InviteLink.objects.exists()


def test_invite_for_another_campaigns_stage_is_refused(alice_client, campaign, other_requester):
    foreign = campaign_create(owner=other_requester, name="Bob's")
    foreign_stage = stage_add(campaign=foreign, name="Bob's stage", task_type="question_writing")

    response = alice_client.post(
        _url("invite-create", campaign), {"stage": foreign_stage.pk, "expires_in_days": 1}
    )

    assert response.status_code == 400
    assert not InviteLink.objects.exists()


def test_invite_created_on_the_page_lets_a_worker_in(alice_client, pipeline):
    campaign, writing, _ = pipeline
    alice_client.post(_url("invite-create", campaign), {"stage": "", "expires_in_days": 7})
    page = alice_client.get(_url("campaign-workforce", campaign)).content.decode()
    match = re.search(r'value="' + re.escape(SITE_URL) + r'(/work/i/[^"]+/)"', page)
    assert match, "the invite URL is on the page"
    path = match.group(1)

    worker = Client()
    landing = worker.get(path)
    assert landing.status_code == 200
    assert campaign.name in landing.content.decode()
    started = worker.post(path)
    assert started.status_code == 302
    assert started["Location"] == reverse("worker:stage", kwargs={"stage_id": writing.pk})
    stage_page = worker.get(started["Location"])
    assert stage_page.status_code == 200
    assert "Accept this task" in stage_page.content.decode()
    assert InviteLink.objects.get().use_count == 1


def test_revoke_invite(alice_client, pipeline):
    campaign, writing, _ = pipeline
    invite = invite_create(
        campaign=campaign, created_by=campaign.owner, expires_in=timedelta(days=1)
    )
    worker = Client()
    worker.post(invite_url(invite=invite).removeprefix(SITE_URL))

    asked = alice_client.post(_url("invite-revoke", campaign, invite_id=invite.pk))
    # Revoking is final: the first post asks, naming the consequence; nothing changes.
    assert asked.status_code == 200
    assert "can take no more tasks" in asked.content.decode()
    invite.refresh_from_db()
    assert invite.revoked_at is None

    response = alice_client.post(
        _url("invite-revoke", campaign, invite_id=invite.pk), {"confirmed": "yes"}
    )

    assert response.status_code == 302
    invite.refresh_from_db()
    assert invite.revoked_at is not None
    assert any("revoked" in m for m in _messages(response))
    page = alice_client.get(_url("campaign-workforce", campaign)).content.decode()
    assert "badge-revoked" in page
    # Those who joined through it are cut off too.
    assert worker.get(reverse("worker:stage", kwargs={"stage_id": writing.pk})).status_code == 403
    again = alice_client.post(
        _url("invite-revoke", campaign, invite_id=invite.pk), {"confirmed": "yes"}
    )
    assert any("already revoked" in m for m in _messages(again))


def test_revoking_another_campaigns_invite_is_404(alice_client, campaign, other_requester):
    foreign = campaign_create(owner=other_requester, name="Bob's")
    invite = invite_create(
        campaign=foreign, created_by=other_requester, expires_in=timedelta(days=1)
    )

    response = alice_client.post(_url("invite-revoke", campaign, invite_id=invite.pk))

    assert response.status_code == 404
    invite.refresh_from_db()
    assert invite.revoked_at is None


# --- Workforce page: grants ----------------------------------------------------------


def test_grant_lets_a_logged_in_user_work_and_remove_stops_them(alice_client, pipeline):
    campaign, writing, _ = pipeline
    annotator = UserFactory.create(username="dora")
    worker = Client()
    worker.force_login(annotator)
    stage_url = reverse("worker:stage", kwargs={"stage_id": writing.pk})
    assert worker.get(stage_url).status_code == 403

    response = alice_client.post(_url("grant-add", campaign), {"username": "dora"})

    assert response.status_code == 302
    grant = LocalGrant.objects.get(campaign=campaign)
    assert grant.user == annotator
    assert any("dora may now work" in m for m in _messages(response))
    page = alice_client.get(_url("campaign-workforce", campaign)).content.decode()
    assert "dora" in page
    assert f"{SITE_URL}{stage_url}" in page
    assert worker.get(stage_url).status_code == 200

    asked = alice_client.post(_url("grant-remove", campaign, grant_id=grant.pk))
    assert asked.status_code == 200
    assert "dora can take no more tasks" in asked.content.decode()
    assert LocalGrant.objects.exists()
    removed = alice_client.post(
        _url("grant-remove", campaign, grant_id=grant.pk), {"confirmed": "yes"}
    )

    assert removed.status_code == 302
    assert not LocalGrant.objects.exists()
    assert worker.get(stage_url).status_code == 403


def test_grant_to_unknown_user_is_a_form_error(alice_client, campaign):
    response = alice_client.post(_url("grant-add", campaign), {"username": "nobody"})

    assert response.status_code == 400
    assert "No active account" in response.content.decode()
    assert not LocalGrant.objects.exists()


def test_grant_twice_is_one_grant(alice_client, campaign):
    UserFactory.create(username="dora")
    alice_client.post(_url("grant-add", campaign), {"username": "dora"})
    alice_client.post(_url("grant-add", campaign), {"username": "dora"})
    assert LocalGrant.objects.count() == 1


def test_removing_another_campaigns_grant_is_404(alice_client, campaign, other_requester):
    foreign = campaign_create(owner=other_requester, name="Bob's")
    from campaigns.work.invites import local_grant_add

    grant = local_grant_add(campaign=foreign, user=UserFactory.create(username="dora"))

    response = alice_client.post(_url("grant-remove", campaign, grant_id=grant.pk))

    assert response.status_code == 404
    assert LocalGrant.objects.filter(pk=grant.pk).exists()


# --- Review queue ------------------------------------------------------------------------


def test_review_queue_shows_submissions_oldest_first(alice_client, pipeline):
    campaign, writing, _ = pipeline
    first = submitted_assignment(writing, question="Which river is longer, the Nile or the Rhine?")
    second = submitted_assignment(writing, question="Which film is older, Alien or Heat?")

    response = alice_client.get(_url("campaign-review", campaign))

    assert response.status_code == 200
    rows = response.context["rows"]
    assert [r["assignment"].pk for r in rows] == [first.pk, second.pk]
    html = response.content.decode()
    assert first.worker.pseudonym in html
    assert first.worker.external_id not in html
    assert "Which river is longer, the Nile or the Rhine?" in html
    assert "The Nile" in html
    assert "rivers" in html  # the item next to the answer
    assert "57" in html  # keystrokes
    assert "(12 characters)" in html  # two pastes, 9 + 3 characters
    assert "2 submitted assignments awaiting a decision" in html
    assert rows[0]["telemetry"] == {
        "keystrokes": 57,
        "paste_count": 2,
        "pasted_chars": 12,
        "focus_losses": 2,
        "visibility_changes": 1,
    }


def test_review_queue_filters_by_stage_and_paginates(alice_client, requester):
    topics = tuple(f"topic {n}" for n in range(27))
    campaign, writing, linking = local_pipeline(requester, slug="big", topics=topics)
    for n in range(27):
        submitted_assignment(writing, question=f"Which is bigger, {n} or {n + 1}?")

    page1 = alice_client.get(_url("campaign-review", campaign), {"stage": writing.pk})
    page2 = alice_client.get(_url("campaign-review", campaign), {"stage": writing.pk, "page": 2})
    other = alice_client.get(_url("campaign-review", campaign), {"stage": linking.pk})

    assert len(page1.context["rows"]) == 25
    assert len(page2.context["rows"]) == 2
    assert page1.context["page"].paginator.count == 27
    assert other.context["rows"] == []
    assert alice_client.get(_url("campaign-review", campaign), {"stage": 999999}).status_code == 404


def test_approve_on_the_page_hands_off_to_the_next_stage(
    alice_client, pipeline, requester, django_capture_on_commit_callbacks
):
    campaign, writing, linking = pipeline
    assignment = submitted_assignment(writing)

    with django_capture_on_commit_callbacks(execute=True):
        response = alice_client.post(
            _url("review-decide", campaign, assignment_id=assignment.pk),
            {"decision": "approve", "feedback": "", "stage": writing.pk, "page": 1},
        )

    assert response.status_code == 302
    # Back where the requester was: the queue's page, at the decided row's place.
    assert response["Location"] == (
        _url("campaign-review", campaign) + f"?stage={writing.pk}&page=1#assignment-{assignment.pk}"
    )
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.APPROVED
    assert assignment.decided_by == requester
    assert assignment.decision_source == "requester"
    assert any("approved" in m and "Link answers" in m for m in _messages(response))
    produced = Item.objects.get(stage=linking)
    assert produced.source == ItemSource.PRODUCED
    assert produced.source_assignment_id == assignment.pk
    assert produced.data["question"] == "Which river is longer?"
    assert produced.data["answer"] == "The Nile"
    assert HIT.objects.filter(stage=linking, status="published").count() == 1
    # Decided work leaves the queue.
    queue = alice_client.get(_url("campaign-review", campaign))
    assert queue.context["rows"] == []


def test_reject_requires_feedback(alice_client, pipeline):
    campaign, writing, _ = pipeline
    assignment = submitted_assignment(writing)
    url = _url("review-decide", campaign, assignment_id=assignment.pk)

    refused = alice_client.post(url, {"decision": "reject", "feedback": "  "})

    assert refused.status_code == 302
    assert any("feedback" in m for m in _messages(refused))
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.SUBMITTED

    alice_client.post(url, {"decision": "reject", "feedback": "The answer is not a river."})

    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.REJECTED
    assert assignment.feedback == "The answer is not a river."
    assert assignment.decision_reason == "The answer is not a river."


def test_double_approve_is_a_clear_message(alice_client, pipeline):
    campaign, writing, _ = pipeline
    assignment = submitted_assignment(writing)
    url = _url("review-decide", campaign, assignment_id=assignment.pk)
    alice_client.post(url, {"decision": "approve"})

    again = alice_client.post(url, {"decision": "approve"}, follow=True)
    opposite = alice_client.post(url, {"decision": "reject", "feedback": "no"}, follow=True)

    assert again.status_code == 200
    assert f"Assignment #{assignment.pk} was already approved by alice" in again.content.decode()
    assert opposite.status_code == 200
    assert "was already approved" in opposite.content.decode()
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.APPROVED


def test_decision_on_an_unsubmitted_assignment_is_a_message(alice_client, pipeline):
    campaign, writing, _ = pipeline
    invite = invite_create(
        campaign=campaign, created_by=campaign.owner, expires_in=timedelta(days=1)
    )
    _, worker = invite_redeem(token=invite_token(invite=invite))
    accepted = assignment_accept(stage=writing, worker=worker)

    response = alice_client.post(
        _url("review-decide", campaign, assignment_id=accepted.pk), {"decision": "approve"}
    )

    assert response.status_code == 302
    assert any("not submitted" in m for m in _messages(response))
    accepted.refresh_from_db()
    assert accepted.status == AssignmentStatus.ACCEPTED


def test_bulk_approve(alice_client, requester, django_capture_on_commit_callbacks):
    campaign, writing, linking = local_pipeline(requester, topics=("rivers", "films", "lakes"))
    a, b, c = (submitted_assignment(writing, question=f"Which is older, {n}?") for n in "abc")
    assignment_approve(assignment=c, source="requester")

    with django_capture_on_commit_callbacks(execute=True):
        response = alice_client.post(
            _url("review-bulk", campaign),
            {"ids": [a.pk, b.pk, c.pk, 999999], "decision": "approve", "feedback": ""},
        )

    assert response.status_code == 302
    shown = _messages(response)
    assert "Approved 2 assignments." in shown
    assert any(f"#{c.pk} was already approved" in m for m in shown)
    assert any("#999999 was not found" in m for m in shown)
    statuses = set(Assignment.objects.filter(pk__in=[a.pk, b.pk]).values_list("status", flat=True))
    assert statuses == {AssignmentStatus.APPROVED}
    assert Item.objects.filter(stage=linking).count() == 2


def test_bulk_reject_requires_feedback_and_a_selection(alice_client, pipeline):
    campaign, writing, _ = pipeline
    a = submitted_assignment(writing)

    no_feedback = alice_client.post(
        _url("review-bulk", campaign), {"ids": [a.pk], "decision": "reject"}
    )
    nothing = alice_client.post(_url("review-bulk", campaign), {"decision": "approve"})

    assert any("feedback" in m for m in _messages(no_feedback))
    assert any("Select at least one" in m for m in _messages(nothing))
    a.refresh_from_db()
    assert a.status == AssignmentStatus.SUBMITTED

    form = {"ids": [a.pk], "decision": "reject", "feedback": "Vague."}
    asked = alice_client.post(_url("review-bulk", campaign), form)
    # Rejecting asks first, naming the feedback the workers read; the page posts the
    # same selection again.
    page = asked.content.decode()
    assert asked.status_code == 200
    assert "Reject 1 assignment?" in page
    assert "“Vague.”" in page
    assert f'name="ids" value="{a.pk}"' in page
    a.refresh_from_db()
    assert a.status == AssignmentStatus.SUBMITTED
    alice_client.post(_url("review-bulk", campaign), {**form, "confirmed": "yes"})
    a.refresh_from_db()
    assert (a.status, a.feedback) == (AssignmentStatus.REJECTED, "Vague.")


def test_bulk_cannot_touch_another_campaigns_assignments(alice_client, campaign, other_requester):
    _, bob_writing, _ = local_pipeline(other_requester, slug="bobs")
    bobs = submitted_assignment(bob_writing)

    response = alice_client.post(
        _url("review-bulk", campaign), {"ids": [bobs.pk], "decision": "approve"}
    )

    assert any("not found" in m for m in _messages(response))
    bobs.refresh_from_db()
    assert bobs.status == AssignmentStatus.SUBMITTED


# --- Who may see and act -----------------------------------------------------------------


def _page_requests(campaign: Campaign, ids: dict[str, int]) -> dict[str, tuple[str, str, dict]]:
    return {
        "workforce": ("get", _url("campaign-workforce", campaign), {}),
        "invite-create": (
            "post",
            _url("invite-create", campaign),
            {"stage": "", "expires_in_days": 7},
        ),
        "invite-revoke": (
            "post",
            _url("invite-revoke", campaign, invite_id=ids["invite"]),
            {"confirmed": "yes"},
        ),
        "grant-add": ("post", _url("grant-add", campaign), {"username": "dora"}),
        "grant-remove": (
            "post",
            _url("grant-remove", campaign, grant_id=ids["grant"]),
            {"confirmed": "yes"},
        ),
        "review": ("get", _url("campaign-review", campaign), {}),
        "decide": (
            "post",
            _url("review-decide", campaign, assignment_id=ids["assignment"]),
            {"decision": "approve"},
        ),
        "bulk": (
            "post",
            _url("review-bulk", campaign),
            {"ids": [ids["assignment"]], "decision": "approve"},
        ),
    }


PAGES = ["workforce", "invite-create", "invite-revoke", "grant-add", "grant-remove", "review"]
PAGES += ["decide", "bulk"]


@pytest.fixture
def alices_work(pipeline) -> tuple[Campaign, dict[str, int]]:
    from campaigns.work.invites import local_grant_add

    campaign, writing, _ = pipeline
    invite = invite_create(
        campaign=campaign, created_by=campaign.owner, expires_in=timedelta(days=1)
    )
    grant = local_grant_add(campaign=campaign, user=UserFactory.create(username="erin"))
    assignment = submitted_assignment(writing)
    return campaign, {"invite": invite.pk, "grant": grant.pk, "assignment": assignment.pk}


def _assert_untouched(campaign: Campaign, ids: dict[str, int]) -> None:
    assert InviteLink.objects.filter(campaign=campaign).count() == 2  # ours + the worker's
    assert InviteLink.objects.get(pk=ids["invite"]).revoked_at is None
    assert list(LocalGrant.objects.filter(campaign=campaign).values_list("pk", flat=True)) == [
        ids["grant"]
    ]
    assert Assignment.objects.get(pk=ids["assignment"]).status == AssignmentStatus.SUBMITTED


@pytest.mark.parametrize("name", PAGES)
def test_another_requester_gets_404_everywhere(bob_client, alices_work, name):
    campaign, ids = alices_work
    UserFactory.create(username="dora")
    method, url, data = _page_requests(campaign, ids)[name]

    response = getattr(bob_client, method)(url, data)

    assert response.status_code == 404
    _assert_untouched(campaign, ids)


@pytest.mark.parametrize("name", PAGES)
def test_anonymous_is_sent_to_login(client, alices_work, name):
    campaign, ids = alices_work
    method, url, data = _page_requests(campaign, ids)[name]

    response = getattr(client, method)(url, data)

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))
    _assert_untouched(campaign, ids)


@pytest.mark.parametrize("who", ["collaborator", "staff"])
def test_collaborators_and_staff_may_review(alices_work, who):
    campaign, ids = alices_work
    user = UserFactory.create(username=who, is_staff=who == "staff")
    if who == "collaborator":
        campaign.collaborators.add(user)
    client = Client()
    client.force_login(user)

    assert client.get(_url("campaign-workforce", campaign)).status_code == 200
    assert client.get(_url("campaign-review", campaign)).status_code == 200
    client.post(
        _url("review-decide", campaign, assignment_id=ids["assignment"]), {"decision": "approve"}
    )
    assert Assignment.objects.get(pk=ids["assignment"]).decided_by == user


def test_worker_pages_are_never_stored_by_a_cache(alice_client, pipeline):
    """Anonymous, yet each worker page is one worker's (their task, their feedback):
    ``Cache-Control: private, no-store`` on every one, whatever the answer."""
    campaign, writing, _ = pipeline
    alice_client.post(_url("invite-create", campaign), {"stage": "", "expires_in_days": 7})
    page = alice_client.get(_url("campaign-workforce", campaign)).content.decode()
    match = re.search(r'value="' + re.escape(SITE_URL) + r'(/work/i/[^"]+/)"', page)
    assert match
    worker = Client()
    landing = worker.get(match.group(1))
    started = worker.post(match.group(1))
    stage_page = worker.get(started["Location"])
    accepted = worker.post(reverse("worker:accept", kwargs={"stage_id": writing.pk}))
    assert accepted.status_code == 302
    task = worker.get(accepted["Location"])
    assert task.status_code == 200
    assignment_id = int(re.findall(r"/work/a/(\d+)/", accepted["Location"])[0])
    done = worker.get(reverse("worker:done", kwargs={"assignment_id": assignment_id}))
    for response in (landing, started, stage_page, accepted, task, done):
        assert response["Cache-Control"] == "private, no-store", response
