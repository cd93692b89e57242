"""The review queue's LLM flag in Debian's chromium: the flag, its evidence and the
model's text shown; no axe-core violation of any impact at 1280 and 390 px."""

from __future__ import annotations

import pytest

from campaigns.models import Assignment
from tests.browser.a11y import axe_violations, layout_problems
from tests.browser.test_requester_design import log_in
from tests.factories import UserFactory
from tests.frontend.test_review_llm_flag import MODEL_TEXT, stored_flag
from tests.helpers import local_pipeline, submitted_assignment

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ALL_IMPACTS = ("minor", "moderate", "serious", "critical")


def test_the_flag_and_its_evidence_with_no_axe_violation(page):
    alice = UserFactory.create(username="alice")
    campaign, writing, _ = local_pipeline(alice, slug="flag-browser")
    text = "Which river is longer, the Nile or the Amazon?"
    waiting = submitted_assignment(writing, question=text)
    Assignment.objects.filter(pk=waiting.pk).update(llm_flag=stored_flag(text))
    log_in(page)
    page.goto(f"/campaigns/{campaign.slug}/review/")
    section = page.get_by_role("region", name="LLM flag")
    section.wait_for()
    assert "Flagged: a model may have written this answer" in section.inner_text()
    assert MODEL_TEXT in section.inner_text()  # shown as text, never run
    for size in ({"width": 1280, "height": 900}, {"width": 390, "height": 844}):
        page.set_viewport_size(size)
        problems = axe_violations(page, impacts=ALL_IMPACTS) + layout_problems(page, touch_min=0)
        assert not problems, f"{size['width']} px:\n" + "\n".join(problems)
