"""Adversarial writing in Debian's chromium: a worker writes a question, sees the
model's answer, marks it, tries again and fools it, then submits; no axe-core violation
of any impact at a desktop and a phone width."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse

from campaigns.assist.endpoints import model_endpoint_create
from campaigns.design.services import campaign_create, stage_add
from campaigns.models import AdversarialTry, Assignment, AssignmentStatus, Item, ItemSource
from campaigns.platforms.publishing import campaign_start
from campaigns.work.invites import invite_create, invite_token
from tests.browser.a11y import axe_violations, layout_problems
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ALL_IMPACTS = ("minor", "moderate", "serious", "critical")
SIZES = ({"width": 1280, "height": 900}, {"width": 390, "height": 844})
SENTENCES = [
    "The Amazon river flows through Brazil.",
    "Its basin covers seven million square kilometres.",
    "Francisco de Orellana sailed it in 1542.",
]


def _invite_path() -> str:
    owner = UserFactory.create(username="owner")
    endpoint = model_endpoint_create(owner=owner, values={"name": "b", "kind": "baseline_bm25"})
    campaign = campaign_create(owner=owner, name="Beat the model")
    stage = stage_add(
        campaign=campaign,
        name="Beat the model",
        task_type="adversarial_passage_question",
        config={"adversarial": {"endpoint": endpoint.pk, "max_tries": 3, "judge": "worker"}},
        reward=Decimal("0.50"),
    )
    Item.objects.create(
        stage=stage,
        external_id="p1",
        data={"title": "Amazon", "sentences": SENTENCES},
        source=ItemSource.UPLOADED,
    )
    campaign_start(campaign=campaign, to_state="live")
    invite = invite_create(campaign=campaign, created_by=owner, expires_in=timedelta(days=1))
    return reverse("worker:invite", kwargs={"token": invite_token(invite=invite)})


def _no_violations(page) -> None:
    for size in SIZES:
        page.set_viewport_size(size)
        problems = axe_violations(page, impacts=ALL_IMPACTS) + layout_problems(page, touch_min=0)
        assert not problems, "\n".join(problems)


def test_write_see_the_models_answer_mark_and_try_again(page):
    page.goto(_invite_path())
    page.get_by_role("button", name="Start").click()
    page.get_by_role("button", name="Accept this task").click()
    page.wait_for_url("**/work/a/*/")
    assert page.get_by_role("button", name="Submit").is_disabled()
    _no_violations(page)

    page.get_by_label("Your question").fill("Where does the Amazon river flow?")
    page.get_by_label("The Amazon river flows through Brazil.").check()
    page.get_by_role("button", name="Ask the model").click()
    page.get_by_text("The model answered").wait_for()
    _no_violations(page)
    page.get_by_role("button", name="Yes, the model is right").click()
    page.get_by_text("The model got it right").wait_for()

    # Try again: the form keeps the last try; the worker rewrites the question.
    page.get_by_label("Your question").fill("Which river did the explorer sail in Brazil?")
    page.get_by_label("The Amazon river flows through Brazil.").uncheck()
    page.get_by_label("Francisco de Orellana sailed it in 1542.").check()
    page.get_by_role("button", name="Try again").click()
    page.get_by_role("button", name="No, the model is wrong").click()
    page.get_by_text("You fooled the model", exact=True).wait_for()
    _no_violations(page)
    page.get_by_role("button", name="Submit").click()
    page.wait_for_url("**/done/")

    assignment = Assignment.objects.get()
    assert assignment.status == AssignmentStatus.SUBMITTED
    assert isinstance(assignment.answers, dict)
    assert assignment.answers["adversarial"]["p1"]["fooled"] is True
    assert [t.fooled for t in AdversarialTry.objects.order_by("try_number")] == [False, True]
