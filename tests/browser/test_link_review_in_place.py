"""The review page of a linking stage in Debian's chromium (issue 36, point 4).

From the top, a summary points to the entity links to decide (a link, and ``l`` on the
keyboard). Each linking submission reads as the text the worker linked, their spans
highlighted with each id and label. Approve and reject happen in place, by click and by
keyboard (``a``; ``r``, feedback, Ctrl+Enter), and so do link decisions (``d``): no
navigation at all. "Enter links yourself" is the worker page's own block: select words
in the text, press "Add", pick a candidate from the suggestions; the JSON stays a click
away. A refused request says why in place and keeps what was entered. Without
JavaScript the same forms post and come back to the same place on the page. axe-core
finds no violation of any impact in any state visited, at 1280 and 390 px.
"""

from __future__ import annotations

import json
import re

import pytest

from campaigns.design.services import campaign_create, stage_add
from campaigns.models import HIT, Assignment, AssignmentStatus, Item, ItemSource
from campaigns.work.publishing import stage_publish
from linking.models import EntityLinkResolution, ResolutionStatus, WikidataCacheEntry
from tests.browser.a11y import AXE, axe_violations, layout_problems
from tests.browser.pages import screenshot
from tests.campaigns.api.review_builders import LINK_ITEM, TOM, VAL, VAL_NIL, VAL_OTHER
from tests.factories import UserFactory
from tests.validation.db_helpers import submit, worker

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct horse battery"
ALL_IMPACTS = ("minor", "moderate", "serious", "critical")


def _linking_stage(owner, *, slug: str):
    """A linking stage of ``owner``: item "topgun" three annotators linked three ways
    (none linked Tom Cruise), in the review queue; and item "second", linked by one
    worker. Its four submissions await a decision."""
    campaign = campaign_create(owner=owner, name=f"Links {slug}", slug=slug)
    stage = stage_add(
        campaign=campaign,
        name="Link answers",
        task_type="answer_entity_linking",
        assignments_per_hit=3,
        escalation_rule={"rule": "entity_agreement", "annotators": 2, "max": 3},
    )
    item = Item.objects.create(
        stage=stage, external_id="topgun", data=LINK_ITEM, source=ItemSource.UPLOADED
    )
    second = Item.objects.create(
        stage=stage,
        external_id="second",
        data={"question": "Who played Maverick?", "answer": "Tom Cruise"},
        source=ItemSource.UPLOADED,
    )
    stage_publish(stage=stage)
    hit = HIT.objects.get(stage=stage, items=item)
    made = [
        submit(hit, worker(f"{slug}-{n}"), {"links": links})
        for n, links in enumerate([[VAL], [VAL_NIL], [VAL_OTHER]])
    ]
    made.append(
        submit(HIT.objects.get(stage=stage, items=second), worker(f"{slug}-x"), {"links": [TOM]})
    )
    EntityLinkResolution.objects.create(
        item=item, stage=stage, hit=hit, status=ResolutionStatus.REVIEW, annotators=3
    )
    WikidataCacheEntry.objects.create(
        kind="entity",
        key="en:Q193048",
        response={"entity": {"id": "Q193048", "label": "Val Kilmer"}},
        fetched_at="2026-01-01T00:00:00Z",
        expires_at="2099-01-01T00:00:00Z",
    )
    return stage, item, made


def _log_in(browser, live_server, width: int, *, javascript: bool = True):
    context = browser.new_context(
        base_url=live_server.url,
        viewport={"width": width, "height": 900},
        java_script_enabled=javascript,
    )
    # axe-core from the start: checking a state never reloads the page.
    context.add_init_script(path=str(AXE))
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/")
    return context, page


def _clean(page, where: str) -> None:
    """No axe violation of any impact, no sideways scrolling."""
    problems = axe_violations(page, impacts=ALL_IMPACTS) + layout_problems(page, touch_min=0)
    assert not problems, f"{where}:\n" + "\n".join(problems)


class NoScriptChecker:
    """axe-core on the pages a context without JavaScript was shown. The browser runs no
    script there (not even Playwright's), so each document it received is shown again,
    its scripts taken out, to a page that runs axe-core: the same markup and styles."""

    def __init__(self, browser, live_server, width: int, page) -> None:
        self.context = browser.new_context(
            base_url=live_server.url, viewport={"width": width, "height": 900}
        )
        self.context.add_init_script(path=str(AXE))
        self.page = self.context.new_page()
        self.documents: list = []
        page.on(
            "response",
            lambda r: (
                self.documents.append(r)
                if r.request.resource_type == "document" and r.status == 200
                else None
            ),
        )

    def check(self, where: str) -> None:
        response = self.documents[-1]
        html = re.sub(r"<script\b[^>]*>.*?</script>", "", response.text(), flags=re.S)
        url = response.url.split("#")[0]
        self.page.route(url, lambda route: route.fulfill(body=html, content_type="text/html"))
        self.page.goto(url)
        assert self.page.evaluate("() => !document.documentElement.classList.contains('tt-js')")
        _clean(self.page, where)
        self.page.unroute(url)

    def close(self) -> None:
        self.context.close()


def _select_in(page, selector: str, words: str) -> None:
    """Select ``words`` inside the element ``selector``, as a mouse drag does."""
    page.evaluate(
        """([selector, words]) => {
          const root = document.querySelector(selector);
          const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
          let node;
          while ((node = walker.nextNode())) {
            const at = node.textContent.indexOf(words);
            if (at >= 0) {
              const range = document.createRange();
              range.setStart(node, at);
              range.setEnd(node, at + words.length);
              const sel = window.getSelection();
              sel.removeAllRanges();
              sel.addRange(range);
              return;
            }
          }
          throw new Error("not in the text: " + words);
        }""",
        [selector, words],
    )


@pytest.mark.parametrize("width", [390, 1280])
def test_linking_review_in_place(browser, live_server, width):
    owner = UserFactory.create(username="alice")
    stage, item, made = _linking_stage(owner, slug=f"lr{width}")
    first, second, _third, lone = made
    context, page = _log_in(browser, live_server, width)
    navigations: list[str] = []
    try:
        page.goto(f"/campaigns/{stage.campaign.slug}/review/?stage={stage.pk}")
        # A new document (a reload, a form's post) is a navigation; "#link-review" is not.
        page.on(
            "request",
            lambda r: navigations.append(r.url) if r.resource_type == "document" else None,
        )

        # From the top: a summary points to the links to decide.
        summary = page.locator("#review-summary")
        assert summary.is_visible()
        assert summary.bounding_box()["y"] < 900  # in the first screen
        jump = summary.get_by_role("link", name="1 entity-link item to decide")
        assert "4 submitted assignments" in summary.inner_text()
        assert "4 on this page are linking submissions" in summary.inner_text()

        # A linking submission: the text with the worker's spans, each id with its label.
        row = page.locator(f"#assignment-{lone.pk}")
        marks = row.locator(".linked-text mark.link-hl")
        assert marks.all_inner_texts() == ["Tom Cruise"]
        assert "Tom Cruise · Q37079" in row.locator(".linked-text").inner_text()
        assert row.get_by_role("link", name="Tom Cruise (Q37079)").is_visible()
        kilmer = page.locator(f"#assignment-{first.pk}")
        assert "Val Kilmer · Q193048" in kilmer.locator(".linked-text").inner_text()
        assert "Who starred in Top Gun?" in kilmer.inner_text()
        nil = page.locator(f"#assignment-{second.pk}")
        assert "link-nil" in (nil.locator("mark.link-hl").get_attribute("class") or "")
        _clean(page, f"linking review, top, at {width} px")
        screenshot(page, "review-linking-stage")

        jump.click()
        section = page.locator("#link-review")
        assert page.evaluate("() => location.hash") == "#link-review"
        assert section.bounding_box()["y"] < 200  # scrolled to it
        entry = section.locator(f"#link-item-{item.pk}")

        # Approve by click: in place, the row says so; no navigation.
        row.get_by_role("button", name="Approve").click()
        row.locator(".decide-status").get_by_text(f"Assignment #{lone.pk} approved").wait_for()
        assert "decided" in (row.get_attribute("class") or "")
        assert row.locator(".status").inner_text() == "approved"
        assert Assignment.objects.get(pk=lone.pk).status == AssignmentStatus.APPROVED
        _clean(page, f"after an approval in place at {width} px")

        # Keyboard: j onto the first submission, a approves it, the focus moves on.
        page.locator("h1").click()
        page.keyboard.press("j")
        assert "focused" in (kilmer.get_attribute("class") or "")
        page.keyboard.press("a")
        kilmer.locator(".decide-status").get_by_text("approved").wait_for()
        assert Assignment.objects.get(pk=first.pk).status == AssignmentStatus.APPROVED
        assert "focused" in (nil.get_attribute("class") or "")
        # r without feedback: refused in place, what is typed stays; Ctrl+Enter rejects.
        page.keyboard.press("r")
        feedback = nil.get_by_label("Feedback")
        assert page.evaluate("() => document.activeElement.name") == "feedback"
        page.keyboard.press("a")  # typing in a field: no shortcut fires
        assert feedback.input_value() == "a"
        assert Assignment.objects.get(pk=second.pk).status == AssignmentStatus.SUBMITTED
        feedback.fill("")
        page.keyboard.press("Control+Enter")
        nil.locator(".decide-status").get_by_text("Say why you reject").wait_for()
        assert "error" in (nil.locator(".decide-status").get_attribute("class") or "")
        _clean(page, f"a refused rejection at {width} px")
        feedback.fill("Val Kilmer is in Wikidata (Q193048).")
        page.keyboard.press("Control+Enter")
        nil.locator(".decide-status").get_by_text("rejected").wait_for()
        assert Assignment.objects.get(pk=second.pk).status == AssignmentStatus.REJECTED
        assert "Q193048" in (Assignment.objects.get(pk=second.pk).feedback or "")

        # l: to the links to decide.
        page.locator("h1").click()
        page.keyboard.press("l")
        assert "focused" in (entry.get_attribute("class") or "")

        # Enter links yourself: the span clicked opens its row, its search focused.
        editor = entry.locator(".link-editor")
        text = editor.locator("[data-tt-linktext]")
        assert text.locator("mark.tt-hl").all_inner_texts() == ["Val Kilmer"]
        text.locator("mark.tt-hl").click()
        assert entry.get_by_label("Enter links yourself").is_checked() is False
        focused = page.evaluate("() => document.activeElement.getAttribute('placeholder')")
        assert focused == "Val Kilmer"
        # Select "Tom Cruise" in the text, add it, pick the candidate.
        _select_in(page, f"#link-item-{item.pk} [data-tt-linktext]", "Tom Cruise")
        add = editor.get_by_role("button", name="Add “Tom Cruise”")
        add.click()
        tom_row = editor.locator('.tt-link-row[data-start="0"]')
        search = tom_row.get_by_role("combobox")
        search.fill("Tom Cruise")
        option = tom_row.get_by_role("option").filter(has_text="Q37079").first
        option.wait_for()
        _clean(page, f"link editor with suggestions at {width} px")
        screenshot(page, "review-links-editor")
        option.click()
        assert entry.get_by_label("Enter links yourself").is_checked()
        assert text.locator("mark.tt-hl").all_inner_texts() == ["Tom Cruise", "Val Kilmer"]
        # The JSON a click away holds what was picked.
        entry.locator(".link-json summary").click()
        links = json.loads(entry.locator('textarea[name="links"]').input_value())
        assert [(lk["text"], lk.get("qid")) for lk in links] == [
            ("Tom Cruise", "Q37079"),
            ("Val Kilmer", "Q193048"),
        ]
        _clean(page, f"links as JSON at {width} px")

        # A failed request (the server unreachable) says so in place and keeps the state.
        page.route("**/link-review/*/decide/", lambda route: route.abort())
        entry.get_by_role("button", name="Decide these links").click()
        status = entry.locator(".decide-status")
        status.get_by_text("could not be reached").wait_for()
        assert entry.get_by_label("Enter links yourself").is_checked()
        assert text.locator("mark.tt-hl").all_inner_texts() == ["Tom Cruise", "Val Kilmer"]
        page.unroute("**/link-review/*/decide/")
        # d decides (the item focused).
        page.locator("h1").click()
        page.keyboard.press("l")
        page.keyboard.press("d")
        status.get_by_text("decided with 2 links").wait_for()
        resolution = EntityLinkResolution.objects.get(item=item)
        assert resolution.status == ResolutionStatus.DECIDED
        assert [(lk["text"], lk.get("qid")) for lk in resolution.links or []] == [
            ("Tom Cruise", "Q37079"),
            ("Val Kilmer", "Q193048"),
        ]
        assert "decided" in (entry.get_attribute("class") or "")
        assert "0 entity-link items to decide" in page.locator("#review-summary").inner_text()
        _clean(page, f"links decided at {width} px")
        assert navigations == []  # nothing reloaded the page
    finally:
        context.close()


@pytest.mark.parametrize("width", [390, 1280])
def test_linking_review_without_javascript(browser, live_server, width):
    owner = UserFactory.create(username="alice")
    stage, item, made = _linking_stage(owner, slug=f"nojs{width}")
    first, second, _third, _lone = made
    context, page = _log_in(browser, live_server, width, javascript=False)
    checker = NoScriptChecker(browser, live_server, width, page)
    try:
        page.goto(f"/campaigns/{stage.campaign.slug}/review/?stage={stage.pk}")
        assert page.locator("#review-summary").get_by_role("link").first.is_visible()
        # The editor needs the script: without it, the JSON box is the way.
        assert not page.locator(".link-editor").first.is_visible()
        checker.check(f"review without JavaScript at {width} px")

        # Approve posts and comes back at the next row.
        page.locator(f"#assignment-{first.pk}").get_by_role("button", name="Approve").click()
        page.wait_for_url(re.compile(rf"/review/\?stage={stage.pk}&page=1#assignment-{second.pk}$"))
        assert page.get_by_text(f"Assignment #{first.pk} approved.").is_visible()
        assert Assignment.objects.get(pk=first.pk).status == AssignmentStatus.APPROVED
        checker.check(f"after a plain approval at {width} px")

        # The links, through the JSON a click away: back at the link review.
        entry = page.locator(f"#link-item-{item.pk}")
        entry.get_by_label("Enter links yourself").check()
        entry.locator(".link-json summary").click()
        entry.get_by_label('JSON: start, end, text, qid or "none": true').fill(
            json.dumps([TOM, VAL_NIL])
        )
        entry.get_by_role("button", name="Decide these links").click()
        page.wait_for_url(re.compile(rf"/review/\?stage={stage.pk}#link-review$"))
        assert page.get_by_text("decided with 2 links").is_visible()
        resolution = EntityLinkResolution.objects.get(item=item)
        assert resolution.status == ResolutionStatus.DECIDED
        checker.check(f"after a plain link decision at {width} px")
    finally:
        checker.close()
        context.close()
