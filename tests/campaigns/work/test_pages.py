"""The worker pages, through the Django test client."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

from campaigns import tasktypes
from campaigns.models import Assignment, AssignmentStatus, Campaign, InviteLink, Stage, Worker
from campaigns.platforms.worker_actions import assignment_bonus_pay
from campaigns.work.decisions import assignment_approve
from campaigns.work.invites import invite_create, invite_token, local_grant_add
from campaigns.work.publishing import stage_publish

pytestmark = pytest.mark.django_db


@pytest.fixture
def stage(make_stage):
    stage = make_stage(items=4, items_per_hit=2, instructions="Write about each item.\n\nBe kind.")
    stage_publish(stage=stage)
    return stage


def _join(client: Client, stage) -> str:
    link = invite_create(
        campaign=stage.campaign, created_by=stage.campaign.owner, expires_in=timedelta(days=1)
    )
    token = invite_token(invite=link)
    url = reverse("worker:invite", kwargs={"token": token})
    landing = client.get(url)
    assert landing.status_code == 200
    assert "Start" in landing.text
    assert not Worker.objects.exists()  # following the link alone changes nothing
    response = client.post(url)
    assert response.status_code == 302
    assert response["Location"] == reverse("worker:stage", kwargs={"stage_id": stage.pk})
    return token


def _published_echo_stage(client: Client, make_stage, monkeypatch, task_type: str) -> Stage:
    """A published stage of ``task_type`` (the plain echo task registered for the test),
    4 items, 2 per HIT, joined by ``client``'s worker."""
    from tests.campaigns.work.conftest import PlainEchoTask

    monkeypatch.setitem(tasktypes._REGISTRY, PlainEchoTask.name, PlainEchoTask())
    stage = make_stage(items=4, items_per_hit=2)
    Stage.objects.filter(pk=stage.pk).update(task_type=task_type)
    stage.refresh_from_db()
    stage_publish(stage=stage)
    _join(client, stage)
    return stage


def _accept(client: Client, stage) -> Assignment:
    response = client.post(reverse("worker:accept", kwargs={"stage_id": stage.pk}))
    assert response.status_code == 302
    assignment = Assignment.objects.latest("id")
    assert response["Location"] == reverse(
        "worker:assignment", kwargs={"assignment_id": assignment.pk}
    )
    return assignment


def test_invite_then_stage_page_with_preview(client, stage):
    _join(client, stage)
    page = client.get(reverse("worker:stage", kwargs={"stage_id": stage.pk}))
    assert page.status_code == 200
    assert "<p>Be kind.</p>" in page.text  # instructions, readable without JS
    assert "Preview of the next task" in page.text
    assert "Item: text 0" in page.text
    assert "disabled" in page.text  # preview controls are read-only
    assert "Accept this task" in page.text


@pytest.mark.parametrize("task_type", ["test_echo", "test_echo_plain"])
def test_stage_page_previews_the_next_hits_items(
    client, make_stage, monkeypatch, task_type, django_assert_max_num_queries
):
    """The preview shows the next HIT's items, in order; without exclusive keys they
    are read with the worker's visit (PostgreSQL: the stage and the visit, 2 queries)."""
    stage = _published_echo_stage(client, make_stage, monkeypatch, task_type)
    url = reverse("worker:stage", kwargs={"stage_id": stage.pk})
    client.get(url)  # the session's first read
    plain = task_type == "test_echo_plain" and connection.vendor == "postgresql"
    with django_assert_max_num_queries(2 if plain else 6):
        page = client.get(url)
    # (The plain type has no work page: its stand-in lists the items' data.)
    assert page.text.index("text 0") < page.text.index("text 1")
    assert "text 2" not in page.text
    first = _accept(client, stage)
    client.post(
        reverse("worker:assignment", kwargs={"assignment_id": first.pk}),
        {"items/0/text": "first words", "items/1/text": "second words"},
    )
    page = client.get(url)
    assert page.text.index("text 2") < page.text.index("text 3")
    assert "text 0" not in page.text


def test_accept_for_a_stage_that_is_gone_is_404(client, stage):
    """The stage is read in the allocation's locking statement: a missing one is a 404,
    whether the session's worker exists or not."""
    _join(client, stage)
    missing = reverse("worker:accept", kwargs={"stage_id": stage.pk + 1000})
    assert client.post(missing).status_code == 404
    Worker.objects.all().delete()
    assert client.post(missing).status_code == 404
    gone = client.post(reverse("worker:accept", kwargs={"stage_id": stage.pk}))
    assert gone.status_code == 403  # a stale session: nobody it speaks for has access
    assert not Assignment.objects.exists()


def test_returning_to_the_invite_resumes(client, stage):
    token = _join(client, stage)
    again = client.get(reverse("worker:invite", kwargs={"token": token}))
    assert again.status_code == 302
    client.post(reverse("worker:invite", kwargs={"token": token}))
    assert Worker.objects.count() == 1
    assert InviteLink.objects.get().use_count == 1


def test_full_flow_with_error_then_double_submit(client, stage):
    _join(client, stage)
    assignment = _accept(client, stage)
    url = reverse("worker:assignment", kwargs={"assignment_id": assignment.pk})

    page = client.get(url)
    assert page.status_code == 200
    assert 'name="telemetry"' in page.text
    assert "worker/telemetry.js" in page.text
    assert "Time left" in page.text
    assert 'name="csrfmiddlewaretoken"' in page.text

    bad = client.post(url, {"items/0/text": "my careful words", "telemetry": "{"})
    assert bad.status_code == 400
    assert "my careful words" in bad.text
    assert "Write at least 3 characters." in bad.text
    assert 'aria-invalid="true"' in bad.text
    assert Assignment.objects.get(pk=assignment.pk).status == AssignmentStatus.ACCEPTED

    form = {
        "items/0/text": "my careful words",
        "items/1/text": "and more",
        "telemetry": '{"keystrokes": 17}',
    }
    done_url = reverse("worker:done", kwargs={"assignment_id": assignment.pk})
    first = client.post(url, form)
    assert first.status_code == 302
    assert first["Location"] == done_url
    second = client.post(url, {"items/0/text": "a replayed, different text"})
    assert second.status_code == 302
    assert second["Location"] == done_url

    stored = Assignment.objects.get(pk=assignment.pk)
    assert stored.status == AssignmentStatus.SUBMITTED
    assert stored.answers is not None
    assert stored.answers["items"][0]["text"] == "my careful words"
    assert stored.telemetry["keystrokes"] == 17
    assert stored.worker.submitted_count == 1

    thanks = client.get(done_url)
    assert thanks.status_code == 200
    assert "Thank you" in thanks.text
    assert "Next task" in thanks.text
    assert client.get(url)["Location"] == done_url


def test_other_worker_gets_404(client, stage):
    _join(client, stage)
    assignment = _accept(client, stage)
    stranger = Client()
    _join_again = invite_create(
        campaign=stage.campaign, created_by=stage.campaign.owner, expires_in=timedelta(days=1)
    )
    stranger.post(reverse("worker:invite", kwargs={"token": invite_token(invite=_join_again)}))
    for name in ("worker:assignment", "worker:done"):
        assert (
            stranger.get(reverse(name, kwargs={"assignment_id": assignment.pk})).status_code == 404
        )
    url = reverse("worker:assignment", kwargs={"assignment_id": assignment.pk})
    assert stranger.post(url, {"items/0/text": "hijack"}).status_code == 404
    assert (
        stranger.post(reverse("worker:return", kwargs={"assignment_id": assignment.pk})).status_code
        == 404
    )
    assert Client().get(url).status_code == 404
    assert Assignment.objects.get(pk=assignment.pk).answers is None


def test_stage_page_without_access(client, stage):
    assert client.get(reverse("worker:stage", kwargs={"stage_id": stage.pk})).status_code == 403
    assert client.post(reverse("worker:accept", kwargs={"stage_id": stage.pk})).status_code == 403


def test_tampered_expired_revoked_invites_are_refused(client, stage):
    link = invite_create(
        campaign=stage.campaign, created_by=stage.campaign.owner, expires_in=timedelta(days=1)
    )
    token = invite_token(invite=link)
    tampered = client.get(reverse("worker:invite", kwargs={"token": token + "x"}))
    assert tampered.status_code == 403
    assert "not valid" in tampered.text
    link.revoked_at = link.created_at
    link.save()
    assert client.post(reverse("worker:invite", kwargs={"token": token})).status_code == 403
    assert not Worker.objects.exists()


def test_return_frees_the_task(client, stage):
    _join(client, stage)
    assignment = _accept(client, stage)
    response = client.post(reverse("worker:return", kwargs={"assignment_id": assignment.pk}))
    assert response.status_code == 302
    assert Assignment.objects.get(pk=assignment.pk).status == AssignmentStatus.RETURNED
    closed = client.post(
        reverse("worker:assignment", kwargs={"assignment_id": assignment.pk}),
        {"items/0/text": "too late now"},
    )
    assert closed.status_code == 409
    assert "returned" in closed.text


def test_no_work_left(client, make_stage):
    stage = make_stage(items=1)
    stage_publish(stage=stage)
    _join(client, stage)
    assignment = _accept(client, stage)
    client.post(
        reverse("worker:assignment", kwargs={"assignment_id": assignment.pk}),
        {"items/0/text": "done and dusted"},
    )
    page = client.get(reverse("worker:stage", kwargs={"stage_id": stage.pk}))
    assert "no task left" in page.text
    again = client.post(reverse("worker:accept", kwargs={"stage_id": stage.pk}))
    assert again.status_code == 200
    assert "no task left" in again.text


def test_logged_in_annotator(client, stage, user_factory):
    annotator = user_factory(username="annotator")
    local_grant_add(campaign=stage.campaign, user=annotator)
    client.force_login(annotator)
    assert client.get(reverse("worker:stage", kwargs={"stage_id": stage.pk})).status_code == 200
    assignment = _accept(client, stage)
    assert assignment.worker.user == annotator


def test_task_type_without_template_gets_a_stand_in(client, stage, monkeypatch):
    monkeypatch.setattr(type(tasktypes.task_type_get("test_echo")), "template_name", "")
    _join(client, stage)
    assignment = _accept(client, stage)
    page = client.get(reverse("worker:assignment", kwargs={"assignment_id": assignment.pk}))
    assert page.status_code == 200
    assert "no work page yet" in page.text


def test_accept_without_access_on_a_paused_campaign_is_refused(client, stage, make_stage):
    """The accept view leaves the access check to the service; a worker of another
    campaign gets the no-access page, not this stage's page."""
    Campaign.objects.filter(pk=stage.campaign_id).update(state="paused")
    _join(client, make_stage(items=1))
    response = client.post(reverse("worker:accept", kwargs={"stage_id": stage.pk}))
    assert response.status_code == 403
    assert "Be kind." not in response.text


def test_a_nul_character_in_an_answer_is_400_and_nothing_is_stored(client, stage):
    _join(client, stage)
    assignment = _accept(client, stage)
    url = reverse("worker:assignment", kwargs={"assignment_id": assignment.pk})
    form = {"items/0/text": "my care\x00ful words", "items/1/text": "and more", "telemetry": ""}
    response = client.post(url, form)
    assert response.status_code == 400
    assert "NUL character" in response.text
    assert Assignment.objects.get(pk=assignment.pk).status == AssignmentStatus.ACCEPTED
    fixed = client.post(url, {**form, "items/0/text": "my careful words"})
    assert fixed.status_code == 302


@pytest.mark.parametrize("task_type", ["test_echo", "test_echo_plain"])
def test_thank_you_page_offers_next_task_only_while_there_is_one(
    client, make_stage, monkeypatch, task_type
):
    """Next task while a HIT this worker holds no place on has a free place; "no other
    task" once they answered every HIT, or once the campaign stops taking work. With
    and without exclusive keys (the next HIT read with the assignment, or looked for)."""
    stage = _published_echo_stage(client, make_stage, monkeypatch, task_type)

    def answer() -> str:
        assignment = _accept(client, stage)
        url = reverse("worker:assignment", kwargs={"assignment_id": assignment.pk})
        form = {"items/0/text": "first words", "items/1/text": "second words"}
        done = client.post(url, form)
        assert done.status_code == 302
        return done["Location"]

    first = answer()
    assert "Next task" in client.get(first).text
    Campaign.objects.filter(pk=stage.campaign_id).update(state="paused")
    paused = client.get(first).text
    assert "Next task" not in paused
    assert "There is no other task for you in this stage right now." in paused
    Campaign.objects.filter(pk=stage.campaign_id).update(state="live")
    second = answer()
    for url in (first, second):  # both HITs answered: nothing left for this worker
        page = client.get(url).text
        assert "Next task" not in page
        assert "There is no other task for you in this stage right now." in page


def test_the_bonus_reason_reaches_the_worker(client, stage, django_capture_on_commit_callbacks):
    """Issue 36, point 6: the reason the review queue says "the worker sees" is on the
    worker's page for that task, with the amount."""
    _join(client, stage)
    assignment = _accept(client, stage)
    url = reverse("worker:assignment", kwargs={"assignment_id": assignment.pk})
    client.post(url, {"items/0/text": "careful", "items/1/text": "words", "telemetry": "{}"})
    assignment.refresh_from_db()
    with django_capture_on_commit_callbacks(execute=True):
        assignment_approve(assignment=assignment, source="requester")
        assignment_bonus_pay(
            assignment=assignment, amount=Decimal("0.40"), reason="Sharp <b>questions</b>", key="k1"
        )

    done = client.get(reverse("worker:done", kwargs={"assignment_id": assignment.pk})).text

    assert "A bonus of <strong>0.40 USD</strong> for this task" in done
    assert "“Sharp &lt;b&gt;questions&lt;/b&gt;”" in done


def test_the_work_page_escapes_names_and_keeps_its_landmarks(client, make_stage):
    """The page is put together outside the template engine (campaigns/platforms/
    task_page.py): every value is escaped, the frame is worker/base.html's, and a renamed
    stage or campaign shows its new name (the frame is kept per name)."""
    stage = make_stage(items=2, instructions="Line <one>.\n\nLine two.")
    Stage.objects.filter(pk=stage.pk).update(name='Stage <b>"x"</b>')
    Campaign.objects.filter(pk=stage.campaign_id).update(name="Camp & <i>y</i>")
    stage.refresh_from_db()
    stage_publish(stage=stage)
    _join(client, stage)
    assignment = _accept(client, stage)
    url = reverse("worker:assignment", kwargs={"assignment_id": assignment.pk})
    html = client.get(url).text
    assert "<b>" not in html
    assert "<title>Stage &lt;b&gt;&quot;x&quot;&lt;/b&gt; · qaportal</title>" in html
    assert "<h1>Stage &lt;b&gt;&quot;x&quot;&lt;/b&gt;</h1>" in html
    assert '<span class="w-brand">Camp &amp; &lt;i&gt;y&lt;/i&gt;</span>' in html
    assert "<p>Line &lt;one&gt;.</p>" in html
    assert '<main id="main" class="w-main">' in html
    assert html.count('name="csrfmiddlewaretoken"') == 1
    assert f'<form method="post" action="{url}"' in html
    assert f'formaction="{url}return/"' in html
    assert '<details class="w-instructions" open>' in html
    assert "{#" not in html
    assert html.rstrip().endswith("</html>")

    Stage.objects.filter(pk=stage.pk).update(name="Renamed")
    html = client.get(url).text
    assert "<h1>Renamed</h1>" in html
    assert "<title>Renamed · qaportal</title>" in html

    # With errors, the notes fold and the notice says nothing was saved.
    again = client.post(url, {"items/0/text": ""})
    assert again.status_code == 400
    assert '<details class="w-instructions">' in again.text
    assert 'id="form-errors"' in again.text


def test_a_page_part_can_hold_submit(client, stage, monkeypatch):
    from campaigns.platforms import task_page

    def part(assignment, action_url, context):
        return task_page.PagePart(
            html='<p id="why">Not yet &amp; not now.</p>', holds_submit=True, why_id="why"
        )

    monkeypatch.setattr(task_page, "_page_parts", [*task_page._page_parts, part])
    _join(client, stage)
    assignment = _accept(client, stage)
    html = client.get(reverse("worker:assignment", kwargs={"assignment_id": assignment.pk})).text
    assert '<p id="why">Not yet &amp; not now.</p>' in html
    assert (
        '<button type="submit" class="secondary" disabled aria-describedby="why" data-submit>'
        in html
    )
