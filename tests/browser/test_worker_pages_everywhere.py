"""Every task type's worker pages, at a phone's 390 px and at 1280 px, as an invited
worker sees them: the stage page (instructions, Accept, the preview) and the task
page. Nothing scrolls sideways, every control is at least 44 px for a finger, and
axe-core finds no violation of any impact (issue 20, points 15 and 16; issue 36)."""

from __future__ import annotations

import pytest

from campaigns.tasktypes import task_type_names
from tests.browser.a11y import assert_person_can_use
from tests.browser.pages import WIDTHS, accept, live_stage, screenshot, start
from tests.campaigns.tasktypes.test_templates import CASES

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_every_task_type_is_covered():
    assert sorted(CASES) == task_type_names()
    assert len(task_type_names()) >= 12


@pytest.mark.parametrize("width", sorted(WIDTHS.values()))
@pytest.mark.parametrize("task_type", task_type_names())
def test_worker_pages_fit_and_pass_axe(browser, live_server, task_type, width):
    items, config, _answer, _text, _path = CASES[task_type]
    _stage, invite_path = live_stage(task_type=task_type, config=config, items=items)
    context = browser.new_context(
        base_url=live_server.url, viewport={"width": width, "height": 844}
    )
    page = context.new_page()
    page.set_default_timeout(10_000)
    try:
        start(page, invite_path)
        assert page.get_by_role("button", name="Accept this task").is_visible()
        assert_person_can_use(page, where=f"{task_type} stage page at {width} px")
        if task_type == "question_writing":  # one stage page is enough for the docs
            screenshot(page, "worker-stage")
        accept(page)
        assert page.get_by_role("button", name="Submit").is_visible()
        assert_person_can_use(page, where=f"{task_type} task page at {width} px")
        screenshot(page, f"worker-task-{task_type}")
    finally:
        context.close()
