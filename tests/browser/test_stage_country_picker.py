"""Issue 34 in Debian's chromium: on a Prolific stage the requester picks countries by
name on the edit page (1280 and 390 px, axe clean) and they become the country
requirement; the stage card's "Estimate the time from the pilot" sets the minutes and
says whether the reward still meets Prolific's hourly minimum."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.utils import timezone

from campaigns.models import Campaign, Stage
from tests.browser.a11y import assert_person_can_use
from tests.browser.test_requester_design import edit_url, log_in, writing_campaign
from tests.factories import AssignmentFactory, HITFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _prolific_stage() -> Stage:
    alice = UserFactory.create(username="alice")
    stage = writing_campaign(alice, provider="prolific")
    assert stage.campaign.currency == "GBP"
    Stage.objects.filter(pk=stage.pk).update(
        qualification_requirements=[
            {"kind": "approval_rate", "min": 95},
            {"kind": "locale", "countries": ["US"]},
        ]
    )
    return stage


@pytest.mark.parametrize("width", [1280, 390])
def test_countries_are_picked_by_name(page, width):
    stage = _prolific_stage()
    log_in(page)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(edit_url(stage))
    picker = page.get_by_label("Countries workers live in")
    assert picker.is_visible()
    assert picker.locator("option:checked").all_inner_texts() == ["United States (US)"]
    assert_person_can_use(
        page, where=f"stage edit with the country picker, {width} px", touch=False
    )
    picker.select_option(["GB", "CA"])
    page.get_by_role("button", name="Save stage").click()
    page.locator(".messages").get_by_text("saved").wait_for()
    stage.refresh_from_db()
    assert stage.qualification_requirements == [
        {"kind": "approval_rate", "min": 95},
        {"kind": "locale", "countries": ["CA", "GB"]},
    ]
    # A refusal is said beside the list, and the page stays usable.
    page.goto(edit_url(stage))
    page.get_by_text("Edit qualification requirements as JSON").click()
    page.get_by_label("Qualification requirements as JSON").fill(
        '[{"kind": "country", "countries": ["FR"]}]'
    )
    page.get_by_label("Countries workers live in").select_option(["DE"])
    page.get_by_role("button", name="Save stage").click()
    page.get_by_text("change them in one place").wait_for()
    assert_person_can_use(page, where=f"stage edit refused, {width} px", touch=False)


def test_the_pilot_estimate_says_whether_prolific_pay_holds(page):
    stage = _prolific_stage()
    Campaign.objects.filter(pk=stage.campaign_id).update(state="pilot")
    hit = HITFactory.create(stage=stage)
    now = timezone.now()
    for seconds in (590, 600, 600, 610, 620):
        AssignmentFactory.create(
            hit=hit,
            status="submitted",
            accepted_at=now,
            submitted_at=now,
            answers={},
            work_seconds=seconds,
        )
    log_in(page)
    page.set_viewport_size({"width": 390, "height": 900})
    page.goto(f"/campaigns/{stage.campaign.slug}/")
    card = page.locator(f"#stage-{stage.pk}")
    if (
        card.locator("summary").count()
        and not card.get_by_role("button", name="Estimate the time from the pilot").is_visible()
    ):
        card.locator("summary").first.click()
    card.get_by_role("button", name="Estimate the time from the pilot").click()
    message = page.locator(".messages")
    message.get_by_text("now estimates 10 min per assignment").wait_for()
    assert "no longer meets the hourly minimum" in message.inner_text()
    assert_person_can_use(page, where="campaign page after the estimate, 390 px", touch=False)
    stage.refresh_from_db()
    assert stage.config["estimated_minutes"] == 10
    assert stage.reward == Decimal("0.50")


@pytest.mark.parametrize("width", [1280, 390])
def test_the_recipe_table_quotes_the_prolific_pilot(page, width):
    UserFactory.create(username="alice")
    log_in(page)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto("/")
    table = page.locator("#recipe-scales")
    table.locator(".prolific-pilot").first.wait_for()
    assert "Prolific: " in table.inner_text()
    assert_person_can_use(
        page, where=f"campaign list with the recipe table, {width} px", touch=False
    )
