"""The model endpoints page in Debian's chromium: add the built-in baseline, test it,
and no axe-core violation of any impact at a desktop and a phone width."""

from __future__ import annotations

import pytest

from tests.browser.a11y import axe_violations, layout_problems
from tests.browser.test_requester_design import log_in
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ALL_IMPACTS = ("minor", "moderate", "serious", "critical")


def test_add_and_test_the_baseline_with_no_axe_violation(page):
    UserFactory.create(username="alice")
    log_in(page)
    page.goto("/model-endpoints/")
    page.get_by_label("Name:", exact=True).fill("Baseline")
    page.get_by_label("Kind:", exact=True).select_option("baseline_bm25")
    page.get_by_role("button", name="Add the endpoint").click()
    page.get_by_text("Added the model endpoint Baseline.").wait_for()
    page.get_by_role("button", name="Test this endpoint (Baseline)").click()
    page.get_by_text("Paris is the capital of France.").wait_for()
    for size in ({"width": 1280, "height": 900}, {"width": 390, "height": 844}):
        page.set_viewport_size(size)
        problems = axe_violations(page, impacts=ALL_IMPACTS) + layout_problems(page, touch_min=0)
        assert not problems, "\n".join(problems)
    page.get_by_role("link", name="Baseline").click()
    problems = axe_violations(page, impacts=ALL_IMPACTS)
    assert not problems, "\n".join(problems)
