"""Issue 36 point 5 in Debian's chromium, at 1280 and 390 px: a requirement, a review
rule, a bonus rule, an escalation and a hand-off added through the stage form's rows
(each *Add* sends the form back with the new row to fill), a bad value refused beside
its input with the rest kept, then all of them on the stage card. axe-core finds no
violation of any impact in any state visited; nothing scrolls sideways."""

from __future__ import annotations

from typing import Any

import pytest

from campaigns.design.services import stage_add
from campaigns.models import Stage
from tests.browser.a11y import axe_violations, layout_problems
from tests.browser.pages import screenshot
from tests.browser.test_requester_design import edit_url, log_in, writing_campaign
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ANY_IMPACT = ("minor", "moderate", "serious", "critical")


def _clean(page: Any, where: str) -> None:
    problems = axe_violations(page, impacts=ANY_IMPACT) + layout_problems(page, touch_min=0)
    assert not problems, f"{where}:\n" + "\n".join(problems)


def _add(page: Any, prefix: str, choice: str) -> None:
    page.locator(f"#{prefix}-add").select_option(label=choice)
    page.locator(f'button[name="add_row"][value="{prefix}"]').click()
    page.wait_for_load_state()


def _stages() -> tuple[Stage, Stage]:
    alice = UserFactory.create(username="alice")
    write = writing_campaign(alice)
    link = stage_add(
        campaign=write.campaign, name="Link answers", task_type="answer_entity_linking"
    )
    return write, link


@pytest.mark.parametrize("width", [1280, 390])
def test_settings_added_through_the_forms_show_on_the_stage_card(page, width):
    write, link = _stages()
    log_in(page)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(edit_url(write))
    _clean(page, f"stage edit, {width} px")

    _add(page, "req", "Approval rate")
    page.locator("#req-0-min").wait_for()
    _clean(page, f"stage edit with a requirement row, {width} px")
    page.locator("#req-0-min").fill("150")
    _add(page, "rr", "Gold accuracy")
    assert page.locator("#req-0-min").input_value() == "150"  # Add keeps what was typed
    page.locator("#rr-0-min").fill("0.8")
    _add(page, "br", "Gold bonus")
    page.locator("#br-0-amount").fill("0.50")
    _add(page, "esc", "Early stop")
    page.locator("#esc-0-first").fill("3")
    page.locator("#esc-0-extend_to").fill("8")
    assert page.locator("#esc-add").count() == 0  # one escalation rule at most
    page.get_by_label("Accepted output feeds").select_option(label="Link answers")
    page.locator("#ho-0-target").select_option("answer_entity_linking")

    # The bad value: refused beside its input, with the check's own words; all kept.
    page.get_by_role("button", name="Save stage").click()
    error = page.locator("#req-0-min-error")
    error.wait_for()
    assert "min must be a whole number from 0 to 100" in error.inner_text()
    assert page.locator("#req-0-min").get_attribute("aria-invalid") == "true"
    for selector, value in (("#rr-0-min", "0.8"), ("#br-0-amount", "0.50"), ("#esc-0-first", "3")):
        assert page.locator(selector).input_value() == value, selector
    screenshot(page, "flow-stage-settings-refused")
    _clean(page, f"stage edit refused, {width} px")

    page.locator("#req-0-min").fill("95")
    # The JSON is a click away and shows what the page was drawn from.
    page.get_by_text("Edit review rules as JSON").click()
    assert page.get_by_label("Review rules as JSON").is_visible()
    _clean(page, f"stage edit with the JSON open, {width} px")
    screenshot(page, "flow-stage-settings")
    page.get_by_role("button", name="Save stage").click()
    page.locator(".messages").get_by_text("saved").wait_for()

    write.refresh_from_db()
    assert write.qualification_requirements == [{"kind": "approval_rate", "min": 95}]
    assert write.review_rules == [{"rule": "gold_accuracy", "min": 0.8}]
    assert write.bonus_rules == [{"rule": "gold_bonus", "amount": "0.50"}]
    assert write.escalation_rule == {"rule": "early_stop", "first": 3, "extend_to": 8}
    assert write.next_stage_id == link.pk
    assert write.handoff == {"target": "answer_entity_linking"}

    card = page.locator(f"#stage-{write.pk}")
    if not card.locator(".stage-settings").is_visible():
        card.locator("summary").first.click()
    said = card.locator(".stage-settings").inner_text()
    for line in (
        "Approval rate at least 95 %",
        "Gold accuracy: min 0.8",
        "Gold bonus: amount 0.50",
        "Early stop: first 3, extend to 8",
        "Feeds “Link answers”: target answer_entity_linking",
    ):
        assert line in said, (line, said)
    card.locator(".stage-settings").scroll_into_view_if_needed()
    screenshot(page, "flow-stage-settings-card")
    _clean(page, f"campaign page with the stage's settings, {width} px")
