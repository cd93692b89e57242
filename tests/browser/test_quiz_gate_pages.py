"""Quiz-gated stages as an invited worker sees them (issue 20, point 14).

A worker who came through the invitation but has not passed the quiz is told exactly
that, with a link to the quiz (not "You have no access to this task"); after a try
the page gives the score, the pass mark, whether it passed and when a retake is
possible; a worker who passed is sent on to the stage the quiz opens.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse

from campaigns.design.services import campaign_create, stage_add
from campaigns.models import Item, ItemSource
from campaigns.platforms.publishing import campaign_start
from campaigns.work.invites import invite_create, invite_token
from tests.browser.a11y import assert_person_can_use
from tests.browser.pages import accept, screenshot
from tests.campaigns.tasktypes.test_quiz_survey import WHYQA
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _gated_campaign():
    owner = UserFactory.create()
    campaign = campaign_create(owner=owner, name="Why questions")
    quiz = stage_add(
        campaign=campaign,
        name="Qualification quiz",
        task_type="quiz",
        config={**WHYQA, "retake": {"max_tries": 2, "delay_minutes": 30}},
        reward=Decimal("0.00"),
        assignments_per_hit=10,
    )
    for n in range(2):  # one quiz HIT per try
        Item.objects.create(stage=quiz, external_id=f"try-{n}", data={}, source=ItemSource.UPLOADED)
    writing = stage_add(
        campaign=campaign,
        name="Write questions",
        task_type="question_writing",
        config={"questions_per_hit": 1},
        qualification_requirements=[{"quiz_stage": quiz.pk}],
    )
    Item.objects.create(
        stage=writing,
        external_id="cell",
        data={"topic": "rivers", "complexity_type": "comparative"},
        source=ItemSource.UPLOADED,
    )
    campaign_start(campaign=campaign, to_state="live")
    invite = invite_create(campaign=campaign, created_by=owner, expires_in=timedelta(days=1))
    return quiz, writing, reverse("worker:invite", kwargs={"token": invite_token(invite=invite)})


def _take_quiz(page, *, trap_answered: bool) -> None:
    accept(page)
    for text in ("Fleas on rats carried it.", "Ships moved rats between ports."):
        page.get_by_label(text).check()
    for text in ("Invasions weakened it.", "Its economy declined."):
        page.get_by_label(text).check()
    if trap_answered:
        page.get_by_label("Light scatters.").check()
    else:
        page.get_by_label("No answer: none of these is correct").nth(2).check()
    page.get_by_role("button", name="Submit").click()
    page.get_by_role("heading", name="Thank you!").wait_for()


@pytest.mark.parametrize("width", [390, 1280])
def test_a_worker_without_the_quiz_is_sent_to_it_and_sees_the_result(browser, live_server, width):
    quiz, writing, invite_path = _gated_campaign()
    gated_url = reverse("worker:stage", kwargs={"stage_id": writing.pk})
    context = browser.new_context(
        base_url=live_server.url, viewport={"width": width, "height": 844}
    )
    page = context.new_page()
    page.set_default_timeout(10_000)
    try:
        page.goto(invite_path)
        page.get_by_role("button", name="Start").click()
        page.wait_for_url(f"**/work/s/{quiz.pk}/")

        # The gated stage: told exactly what is missing, with the way to the quiz.
        response = page.goto(gated_url)
        assert response is not None
        assert response.status == 403
        page.get_by_role(
            "heading", name="You have not passed the quiz “Qualification quiz” yet"
        ).wait_for()
        assert "no access" not in page.content().lower()
        assert_person_can_use(page, where=f"quiz gate at {width} px")
        screenshot(page, "worker-quiz-first")
        page.get_by_role("link", name="Go to the quiz “Qualification quiz”").click()
        page.wait_for_url(f"**/work/s/{quiz.pk}/")

        # A failed try: score, pass mark, and when to try again.
        _take_quiz(page, trap_answered=True)
        result = page.locator(".w-quiz-result")
        assert result.get_by_role("heading").inner_text() == "You did not pass the quiz"
        text = result.inner_text()
        assert "Your score:" in text
        assert "7 of 9 points" in text
        assert "6.30 needed to pass" in text
        # Enough points, yet failed: the page says which question failed it, and why.
        assert "Question 3:" in text
        assert "You can try this quiz again after" in text
        assert_person_can_use(page, where=f"quiz result at {width} px")
        screenshot(page, "worker-quiz-failed")

        # Back at the gated stage: the last try and the retake time are there too.
        page.goto(gated_url)
        gate = page.locator(".w-gate").inner_text()
        assert "Your last try:" in gate
        assert "You can try this quiz again after" in gate
        # Issue 36, point 10: no way to a quiz that cannot be taken now.
        assert page.get_by_role("link", name="Go to the quiz “Qualification quiz”").count() == 0
        assert_person_can_use(page, where=f"quiz gate after a try at {width} px")
    finally:
        context.close()


def test_a_worker_who_passes_goes_on_to_the_stage(page, live_server):
    quiz, writing, invite_path = _gated_campaign()
    page.goto(invite_path)
    page.get_by_role("button", name="Start").click()
    page.wait_for_url(f"**/work/s/{quiz.pk}/")
    _take_quiz(page, trap_answered=False)
    result = page.locator(".w-quiz-result")
    assert result.get_by_role("heading").inner_text() == "You passed the quiz"
    assert "9 of 9 points" in result.inner_text()
    result.get_by_role("link", name="Go on to “Write questions”").click()
    page.wait_for_url(f"**/work/s/{writing.pk}/")
    assert page.get_by_role("button", name="Accept this task").is_visible()
