"""The requester's review queue in Debian's chromium (issue 20, points 10 and 16).

Entity-link review: the three annotators of one item side by side, each span
highlighted in the text, each id with its Wikidata label and a link; a decision is
saved without a page reload and the keyboard (j/k, 1 to 9, d) still drives the page.
Assignment review: rule verdicts in words, "Select all on this page" (and "*").
Both pass axe-core (no violation of any impact) at 1280 and 390 px.
"""

from __future__ import annotations

import pytest

from campaigns.models import Assignment
from linking.models import EntityLinkResolution, ResolutionStatus, WikidataCacheEntry
from tests.browser.a11y import assert_person_can_use
from tests.browser.pages import screenshot
from tests.campaigns.api.review_builders import link_review_item, reviewed_stage
from tests.factories import UserFactory
from tests.validation.db_helpers import hits, submit, worker

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct horse battery"


def _log_in(browser, live_server, username: str, width: int):
    context = browser.new_context(
        base_url=live_server.url, viewport={"width": width, "height": 900}
    )
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/")
    return context, page


@pytest.mark.parametrize("width", [390, 1280])
def test_link_review_side_by_side_without_reloads(browser, live_server, width):
    owner = UserFactory.create(username="alice")
    item, _annotations = link_review_item(owner, slug="links")
    # Val Kilmer's label is in the Wikidata cache; Tom Cruise's comes from the
    # bundled offline index; Q1 is in neither.
    WikidataCacheEntry.objects.create(
        kind="entity",
        key="en:Q193048",
        response={"entity": {"id": "Q193048", "label": "Val Kilmer"}},
        fetched_at="2026-01-01T00:00:00Z",
        expires_at="2099-01-01T00:00:00Z",
    )
    context, page = _log_in(browser, live_server, "alice", width)
    try:
        page.goto("/campaigns/links/review/")
        section = page.locator("#link-review")
        section.wait_for()
        entry = section.locator(f"#link-item-{item.pk}")
        columns = entry.locator(".annotator:not(.annotator-custom)")
        assert columns.count() == 3
        if width >= 1280:  # side by side: one row of columns
            tops = {round(columns.nth(n).bounding_box()["y"]) for n in range(3)}
            assert len(tops) == 1
        first, second, third = columns.nth(0), columns.nth(1), columns.nth(2)
        # Each span highlighted in the text of each annotator.
        assert first.locator("mark.link-hl").all_inner_texts() == ["Tom Cruise", "Val Kilmer"]
        assert "link-nil" in (second.locator("mark.link-hl").nth(1).get_attribute("class") or "")
        # Each id with its label and a link to Wikidata; agreement marked.
        tom = first.get_by_role("link", name="Tom Cruise (Q37079)")
        assert tom.get_attribute("href") == "https://www.wikidata.org/wiki/Q37079"
        assert first.get_by_role("link", name="Val Kilmer (Q193048)").is_visible()
        assert "label not known here" in third.inner_text()
        assert "not in Wikidata" in second.inner_text()
        assert first.locator("li.link-agreed").count() == 1  # Tom Cruise: all three
        assert first.locator("li.link-differs").count() == 1
        assert_person_can_use(page, where=f"link review at {width} px", touch=False)
        screenshot(page, "review-links")

        # The keyboard: j onto the item, 2 picks the second annotator, d decides.
        # j walks the queue (the three annotators' assignments, then the item).
        page.locator("h1").click()
        for _ in range(4):
            page.keyboard.press("j")
        assert "focused" in (entry.get_attribute("class") or "")
        page.keyboard.press("k")
        assert "focused" not in (entry.get_attribute("class") or "")
        page.keyboard.press("j")
        page.keyboard.press("2")
        assert second.get_by_role("radio").is_checked()
        navigations: list[str] = []
        page.on("framenavigated", lambda frame: navigations.append(frame.url))
        page.keyboard.press("d")
        status = entry.locator(".decide-status")
        status.get_by_text("decided with 2 links").wait_for()
        assert navigations == []  # no page reload
        resolution = EntityLinkResolution.objects.get(item=item)
        assert resolution.status == ResolutionStatus.DECIDED
        assert [link.get("none") for link in resolution.links or []] == [False, True]

        # A refused decision says why, in place.
        entry.get_by_label("Enter links yourself").check()
        entry.locator(".link-json summary").click()  # the JSON, a click away
        entry.get_by_label('JSON: start, end, text, qid or "none": true').fill("[{")
        entry.get_by_role("button", name="Decide again").click()
        status.get_by_text("not valid JSON").wait_for()
        assert navigations == []
    finally:
        context.close()


@pytest.mark.parametrize("width", [390, 1280])
def test_review_queue_rules_in_words_and_select_all(browser, live_server, width):
    owner = UserFactory.create(username="alice")
    stage, made = reviewed_stage(owner)
    _h1, h2 = hits(stage)
    extra = submit(h2, worker(f"d{owner.pk}"), {"choice": 1})
    context, page = _log_in(browser, live_server, "alice", width)
    try:
        page.goto(f"/campaigns/{stage.campaign.slug}/review/")
        lone = page.locator(f"#assignment-{made['lone'].pk}")
        lone.wait_for()
        verdicts = lone.locator(".verdict-table")
        assert "Agreement with the majority" in verdicts.inner_text()
        assert_person_can_use(page, where=f"review queue at {width} px", touch=False)
        screenshot(page, "review-queue")

        # The worker's page of a row is fetched when its box is opened, not before.
        as_worker = lone.locator("details.as-worker-saw-it")
        assert as_worker.locator(".worker-view").count() == 0
        as_worker.locator("summary").click()
        as_worker.locator(".worker-view").wait_for()
        assert as_worker.locator(".worker-view input, .worker-view textarea").count() > 0
        screenshot(page, "review-queue-as-worker")

        boxes = page.locator('input[name="ids"]')
        assert boxes.count() == 2
        select_all = page.get_by_label("Select all on this page (2)")
        select_all.check()
        assert all(boxes.nth(n).is_checked() for n in range(2))
        page.locator("h1").click()
        page.keyboard.press("*")
        assert not any(boxes.nth(n).is_checked() for n in range(2))
        page.keyboard.press("*")
        page.once("dialog", lambda dialog: dialog.accept())
        page.get_by_role("button", name="Approve selected").click()
        page.wait_for_load_state()
        page.get_by_text("Nothing awaits a decision").wait_for()
        assert Assignment.objects.get(pk=extra.pk).status == "approved"
        assert Assignment.objects.get(pk=made["lone"].pk).status == "approved"
    finally:
        context.close()
