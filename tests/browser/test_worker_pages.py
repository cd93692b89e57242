"""A worker completes real task pages in Debian's chromium (Playwright).

The whole path a worker takes: invite link → Start → Accept → fill the form →
a refused submit that keeps the text → a fixed submit → thank-you page; the
stored assignment is then checked in the database.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse

from campaigns.design.items import items_upload
from campaigns.design.services import campaign_create, stage_add
from campaigns.models import Assignment, AssignmentStatus
from campaigns.platforms.publishing import campaign_start
from campaigns.work.invites import invite_create, invite_token
from tests.browser.a11y import assert_person_can_use
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _campaign_with_stage(*, task_type: str, config: dict, rows: bytes):
    owner = UserFactory.create(username="owner")
    campaign = campaign_create(owner=owner, name=f"Browser {task_type}")
    stage = stage_add(
        campaign=campaign, name="work", task_type=task_type, config=config, reward=Decimal("0.50")
    )
    items_upload(stage=stage, content=rows, filename="items.jsonl")
    campaign_start(campaign=campaign, to_state="live")
    invite = invite_create(campaign=campaign, created_by=owner, expires_in=timedelta(days=1))
    return stage, reverse("worker:invite", kwargs={"token": invite_token(invite=invite)})


def _start_and_accept(page, invite_path: str) -> None:
    page.goto(invite_path)
    page.get_by_role("button", name="Start").click()
    page.get_by_role("button", name="Accept this task").click()
    page.wait_for_url("**/work/a/*/")


def test_worker_writes_count_questions(page):
    stage, invite_path = _campaign_with_stage(
        task_type="question_writing",
        config={"questions_per_hit": 2},
        rows=b'{"id": "movies-count", "topic": "movies", "complexity_type": "count"}\n',
    )
    _start_and_accept(page, invite_path)

    first = page.locator('[name="questions/0/question"]')
    # No question mark: the server refuses it and the page keeps everything typed.
    first.fill("How many films are in the Toy Story series")
    page.locator('[name="questions/0/answer"]').fill("4")
    page.locator('[name="questions/0/numeric_value"]').fill("4")
    page.locator('[name="questions/0/counted_entities"]').fill(
        "Toy Story\nToy Story 2\nToy Story 3\nToy Story 4"
    )
    page.locator('[name="questions/1/question"]').fill("How many Oscars did Titanic win?")
    page.locator('[name="questions/1/answer"]').fill("11")
    page.locator('[name="questions/1/numeric_value"]').fill("11")
    page.locator('[name="questions/1/counted_entities"]').fill(
        "Best Picture\nBest Director\nBest Cinematography\nBest Art Direction\nBest Costume Design"
    )
    page.get_by_role("button", name="Submit").click()

    assert page.locator(".tt-error").first.is_visible()
    assert first.input_value() == "How many films are in the Toy Story series"
    assert (
        "Best Costume Design" in page.locator('[name="questions/1/counted_entities"]').input_value()
    )
    assert not Assignment.objects.filter(status=AssignmentStatus.SUBMITTED).exists()
    assert_person_can_use(page, where="refused answer, errors shown")

    # Typed key by key, as a person would: the page's telemetry counts the keystrokes.
    first.press("End")
    first.press_sequentially("?")
    page.get_by_role("button", name="Submit").click()
    page.get_by_role("heading", name="Thank you!").wait_for()
    assert_person_can_use(page, where="thank-you page")

    stored = Assignment.objects.get(hit__stage=stage)
    assert stored.status == AssignmentStatus.SUBMITTED
    assert stored.answers is not None
    questions = stored.answers["questions"]
    assert [q["question"] for q in questions] == [
        "How many films are in the Toy Story series?",
        "How many Oscars did Titanic win?",
    ]
    assert stored.work_seconds is not None
    assert stored.telemetry["keystrokes"] > 0


def test_worker_selects_answer_sentences(page):
    sentences = [
        "The Great Fire of London began on 2 September 1666.",
        "It started in a bakery on Pudding Lane.",
        "Most houses were built of timber, so the fire spread quickly.",
        "A strong east wind fanned the flames.",
    ]
    row = (
        '{"id": "fire", "question": "Why did the Great Fire of London spread so fast?", '
        f'"sentences": {__import__("json").dumps(sentences)}}}\n'
    ).encode()
    stage, invite_path = _campaign_with_stage(
        task_type="sentence_selection_answer", config={}, rows=row
    )
    _start_and_accept(page, invite_path)

    assert_person_can_use(page, where="sentence selection task")
    page.get_by_label(sentences[2]).check()
    page.get_by_label(sentences[3]).check()
    page.get_by_role("button", name="Submit").click()
    page.get_by_role("heading", name="Thank you!").wait_for()

    stored = Assignment.objects.get(hit__stage=stage)
    assert stored.status == AssignmentStatus.SUBMITTED
    assert stored.answers is not None
    entry = stored.answers["items"][0] if "items" in stored.answers else stored.answers
    assert sorted(entry["sentences"]) == [2, 3]
    assert entry["no_answer"] is False
