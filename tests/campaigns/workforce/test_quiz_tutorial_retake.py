"""Tutorials and retakes: a tutorial quiz shows its steps and practice questions (their
key in the page for immediate feedback, the scored questions' key never); practice
answers are recorded and never scored; a pass pays the pass bonus once; the retake
policy refuses a worker who passed, one who used their tries, and one who comes back
before the delay, and lets a failed worker try again on the next quiz HIT after it."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from campaigns.design.services import campaign_create, stage_add
from campaigns.models import Assignment, Item, ItemSource, LedgerEntry
from campaigns.platforms.publishing import campaign_start
from campaigns.tasktypes import task_type_get
from campaigns.work.allocation import WorkerNotAllowedError, assignment_accept
from campaigns.work.invites import invite_create, invite_redeem, invite_token
from campaigns.work.submission import assignment_submit
from tests.campaigns.tasktypes.test_quiz_survey import WHYQA
from tests.campaigns.workforce.test_quiz_gate import ANSWERS_THE_UNANSWERABLE, PERFECT

pytestmark = pytest.mark.django_db

TUTORIAL = {
    **WHYQA,
    "steps": [
        {"title": "Read the passage", "body": "Each question comes with a short passage."},
        {"title": "Pick the sentences", "body": "Select the sentences that answer it."},
    ],
    "practice": [
        {
            "id": "p1",
            "prompt": "Which sentence says why the lamp was lit?",
            "explanation": "The second sentence gives the reason: ships needed to see it.",
            "options": [
                {"id": "a", "text": "The lamp was lit at dusk."},
                {"id": "b", "text": "Ships needed to see the rocks.", "correct": True},
            ],
        }
    ],
    "retake": {"max_tries": 2, "delay_minutes": 30},
    "pass_bonus": "1.50",
}


@pytest.fixture
def tutorial(requester):
    campaign = campaign_create(owner=requester, name="Tutorial", slug="tutorial")
    quiz = stage_add(
        campaign=campaign,
        name="Tutorial",
        task_type="quiz",
        config=TUTORIAL,
        reward=Decimal("3.50"),
        assignments_per_hit=20,
    )
    for n in range(2):  # one quiz HIT per try
        Item.objects.create(stage=quiz, external_id=f"try-{n}", data={}, source=ItemSource.UPLOADED)
    campaign = campaign_start(campaign=campaign, to_state="pilot")
    invite = invite_create(campaign=campaign, created_by=requester, expires_in=timedelta(days=1))
    return campaign, quiz, invite_token(invite=invite)


def _submit(quiz, worker, form):
    a = assignment_accept(stage=quiz, worker=worker)
    result = assignment_submit(assignment_id=a.pk, worker=worker, form=form, telemetry={})
    assert result.stored, result.errors
    return result.assignment


def test_the_page_shows_steps_and_practice_feedback_but_not_the_scored_key(tutorial):
    from django.template.loader import render_to_string

    _campaign, quiz, _token = tutorial
    html = render_to_string(
        "tasktypes/quiz.html", {"items": [], "config": quiz.config, "preview": False}
    )
    assert "Read the passage" in html
    assert "Pick the sentences" in html
    assert "Check your answer" in html
    assert "ships needed to see it" in html
    assert 'data-tt-correct="1"' in html
    assert "quiz_tutorial.js" in html
    # The scored questions carry no key: only the practice inputs are marked.
    assert html.count("data-tt-correct=") == 2
    for group in ("essential", "wrong", '"ok"'):
        assert group not in html


def test_practice_is_recorded_not_scored_and_a_pass_pays_its_bonus_once(tutorial):
    _campaign, quiz, token = tutorial
    _, worker = invite_redeem(token=token)
    work = _submit(quiz, worker, {**PERFECT, "practice/0/selected": ["a"]})
    quiz_details = work.review_details["quiz"]
    assert quiz_details["passed"] is True
    assert quiz_details["practice"] == [{"id": "p1", "right": False}]
    assert quiz_details["points"] == 9  # the practice question adds nothing
    bonuses = LedgerEntry.objects.filter(assignment=work, kind="bonus")
    assert [b.amount for b in bonuses] == [Decimal("1.50")]
    with pytest.raises(WorkerNotAllowedError, match="passed this quiz already"):
        assignment_accept(stage=quiz, worker=worker)
    assert LedgerEntry.objects.filter(kind="bonus").count() == 1


def test_a_failed_worker_retakes_after_the_delay_within_the_tries(tutorial):
    _campaign, quiz, token = tutorial
    _, worker = invite_redeem(token=token)
    first = _submit(quiz, worker, ANSWERS_THE_UNANSWERABLE)
    assert first.review_details["quiz"]["passed"] is False
    with pytest.raises(WorkerNotAllowedError, match="try this quiz again after"):
        assignment_accept(stage=quiz, worker=worker)
    earlier = timezone.now() - timedelta(minutes=31)
    Assignment.objects.filter(pk=first.pk).update(accepted_at=earlier, submitted_at=earlier)
    second = _submit(quiz, worker, ANSWERS_THE_UNANSWERABLE)
    assert second.hit_id != first.hit_id  # the next quiz HIT
    earlier = timezone.now() - timedelta(hours=2)
    Assignment.objects.filter(pk=second.pk).update(accepted_at=earlier, submitted_at=earlier)
    with pytest.raises(WorkerNotAllowedError, match="used all 2 tries"):
        assignment_accept(stage=quiz, worker=worker)
    assert not LedgerEntry.objects.filter(kind="bonus").exists()


def test_one_try_by_default(requester):
    campaign = campaign_create(owner=requester, name="Once", slug="once")
    quiz = stage_add(campaign=campaign, name="Quiz", task_type="quiz", config=WHYQA)
    for n in range(2):
        Item.objects.create(stage=quiz, external_id=f"q{n}", data={}, source=ItemSource.UPLOADED)
    campaign = campaign_start(campaign=campaign, to_state="pilot")
    invite = invite_create(campaign=campaign, created_by=requester, expires_in=timedelta(days=1))
    _, worker = invite_redeem(token=invite_token(invite=invite))
    _submit(quiz, worker, ANSWERS_THE_UNANSWERABLE)
    with pytest.raises(WorkerNotAllowedError, match="used your try"):
        assignment_accept(stage=quiz, worker=worker)


def test_a_practice_question_needs_a_marked_answer():
    config = {
        **TUTORIAL,
        "practice": [
            {
                **TUTORIAL["practice"][0],
                "options": [{"id": "a", "text": "one"}, {"id": "b", "text": "two"}],
            }
        ],
    }
    errors = task_type_get("quiz").validate_config(config)
    assert [e.path for e in errors] == ["practice/0/options"]


def test_the_stage_page_says_why_and_offers_no_accept(tutorial, client):
    from django.urls import reverse

    from campaigns.models import Worker

    _campaign, quiz, token = tutorial
    invite = reverse("worker:invite", kwargs={"token": token})
    assert client.post(invite).status_code in (200, 302)
    worker = Worker.objects.get()
    _submit(quiz, worker, ANSWERS_THE_UNANSWERABLE)
    page = client.get(reverse("worker:stage", kwargs={"stage_id": quiz.pk}))
    text = page.content.decode()
    assert page.status_code == 200
    assert "You can try this quiz again after" in text
    assert reverse("worker:accept", kwargs={"stage_id": quiz.pk}) not in text
