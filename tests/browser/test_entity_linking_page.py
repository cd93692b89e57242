"""Entity linking on the text itself, in Debian's chromium (issue 20, points 12 and 13).

A worker links the entities of "Is The Godfather or Star Wars longer than Titanic?":
the three proposed spans (the whole "The Godfather or Star Wars" beside "The Godfather"
and "Star Wars") are highlighted in the text; clicking a highlight opens its row; the
search box starts empty (typing never becomes "TitanicTitanic"); candidates show their
label, id and description (from the offline index); an overlap of two linked spans is
shown with "Keep …" buttons and a Submit then says why nothing was sent; "Titanic" is
added by selecting it in the text, "longer" typed in "Add words" and removed again; a
Submit right after picking a suggestion submits. The stored answer is checked.
"""

from __future__ import annotations

import pytest

from campaigns.models import Assignment, AssignmentStatus
from tests.browser.a11y import assert_person_can_use
from tests.browser.pages import accept, live_stage, screenshot, start

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

QUESTION = "Is The Godfather or Star Wars longer than Titanic?"


def _span(words: str) -> dict:
    start = QUESTION.index(words)
    return {"start": start, "end": start + len(words), "text": words}


ITEM = {
    "external_id": "godfather-starwars",
    "data": {
        "question": QUESTION,
        "proposed_spans": [
            _span("The Godfather or Star Wars"),
            _span("The Godfather"),
            _span("Star Wars"),
        ],
    },
}


def _select_in_text(page, words: str) -> None:
    """Select ``words`` in the linked text, as a drag of the mouse or a long press does."""
    page.evaluate(
        """(words) => {
          const root = document.querySelector("[data-tt-linktext]");
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
        words,
    )


def _pick(page, row, typed: str, label: str) -> None:
    search = row.get_by_role("combobox")
    assert search.input_value() == ""  # not pre-filled: typing is the whole query
    search.fill(typed)
    assert search.input_value() == typed
    option = row.get_by_role("option").filter(has_text=label).first
    option.wait_for()
    option.click()


@pytest.mark.parametrize("width", [390, 1280])
def test_worker_links_entities_on_the_text(browser, live_server, width):
    stage, invite_path = live_stage(
        task_type="question_entity_linking", config={}, items=[ITEM], name="Link entities"
    )
    context = browser.new_context(
        base_url=live_server.url, viewport={"width": width, "height": 900}
    )
    page = context.new_page()
    page.set_default_timeout(10_000)
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    try:
        start(page, invite_path)
        accept(page)
        text = page.locator("[data-tt-linktext]")
        marks = text.locator("mark.tt-hl")
        # Every proposed span highlighted in place: "The Godfather", " or ", "Star Wars".
        assert marks.all_inner_texts() == ["The Godfather", " or ", "Star Wars"]
        assert text.inner_text() == QUESTION
        assert_person_can_use(page, where=f"linking page at {width} px")
        rows = page.locator(".tt-link-row")
        outer, godfather, star_wars = rows.nth(0), rows.nth(1), rows.nth(2)

        # A click on a highlight opens the narrowest span's row, its search box focused.
        marks.nth(0).click()
        assert "tt-active" in (godfather.get_attribute("class") or "")
        focused = page.evaluate("() => document.activeElement.getAttribute('placeholder')")
        assert focused == "The Godfather"
        _pick(page, godfather, "Godfather", "Q47703")
        option_text = godfather.locator(".tt-picked").inner_text()
        assert "The Godfather (Q47703)" in option_text
        assert "Movies" in option_text
        assert godfather.locator('input[name$="/qid"]').input_value() == "Q47703"
        assert marks.nth(0).get_attribute("data-state") == "linked"

        # The whole phrase, marked "not in Wikidata", overlaps the linked "The Godfather".
        marks.nth(1).click()  # " or " is covered by the outer span only
        assert "tt-active" in (outer.get_attribute("class") or "")
        outer.get_by_label("Not in Wikidata").check()
        assert outer.locator(".tt-conflict").is_visible()
        assert "overlaps" in outer.locator(".tt-conflict").inner_text()
        screenshot(page, "worker-linking-overlap")
        # Submit says why nothing is sent, and sends nothing.
        before = len(posts)
        page.get_by_role("button", name="Submit").click()
        alert = page.locator("[data-tt-conflicts]")
        alert.wait_for()
        assert "Nothing was sent yet" in alert.inner_text()
        assert len(posts) == before
        # Resolved by the worker: keep "The Godfather".
        godfather.get_by_role("button", name="Keep “The Godfather”").click()
        assert outer.get_attribute("data-state") == "skip"
        assert outer.locator(".tt-row-state").inner_text() == "not an entity"
        assert page.locator(".tt-conflict").count() == 0

        # Add "Titanic" by selecting it in the text.
        _select_in_text(page, "Titanic")
        add = page.get_by_role("button", name="Add “Titanic”")
        add.click()
        titanic = rows.nth(3)
        assert titanic.locator(".tt-link-caption").inner_text().startswith("“Titanic”")
        assert text.locator("mark.tt-hl").all_inner_texts()[-1] == "Titanic"
        _pick(page, titanic, "Titanic", "Q44578")
        assert titanic.locator('input[name$="/qid"]').input_value() == "Q44578"

        # Add a word by typing it (keyboard, touch), then remove it again.
        page.get_by_label("Add words").fill("longer")
        page.get_by_role("button", name="Add", exact=True).click()
        longer = rows.nth(4)
        assert longer.get_attribute("data-start") == str(QUESTION.index("longer"))
        longer.get_by_role("button", name="Remove this span").click()
        assert rows.count() == 4
        assert "longer" not in text.locator("mark.tt-hl").all_inner_texts()

        # (A full-page screenshot restores the scroll position late: taken here, it
        # cannot move the page between the press and the release of the Submit click.)
        screenshot(page, "worker-linking-ready")

        # "Star Wars": the highlight also covers the outer span; a click starts narrow.
        text.locator("mark.tt-hl", has_text="Star Wars").click()
        assert "tt-active" in (star_wars.get_attribute("class") or "")
        search = star_wars.get_by_role("combobox")
        search.fill("star")
        star_wars.get_by_role("option").filter(has_text="Q462").first.wait_for()
        # One more keystroke starts a search; the pick comes before it answers, and
        # Submit follows at once: the click submits.
        search.press_sequentially(" w")
        star_wars.get_by_role("option").filter(has_text="Q462").first.click()
        page.get_by_role("button", name="Submit").click()
        page.get_by_role("heading", name="Thank you!").wait_for()
    finally:
        context.close()

    stored = Assignment.objects.get(hit__stage=stage)
    assert stored.status == AssignmentStatus.SUBMITTED
    assert stored.answers is not None
    links = stored.answers["items"][0]["links"]
    assert sorted((lk["text"], lk["qid"], lk["none"]) for lk in links) == [
        ("Star Wars", "Q462", False),
        ("The Godfather", "Q47703", False),
        ("Titanic", "Q44578", False),
    ]
    titanic_link = next(lk for lk in links if lk["text"] == "Titanic")
    assert QUESTION[titanic_link["start"] : titanic_link["end"]] == "Titanic"


def test_a_refused_answer_keeps_the_links_and_the_overlap_can_be_resolved(page, live_server):
    """Without the page's check (a script blocked, an old tab), the server refuses the
    overlap, names both spans, keeps every id typed, and the worker resolves it there."""
    stage, invite_path = live_stage(
        task_type="question_entity_linking", config={}, items=[ITEM], name="Link entities"
    )
    start(page, invite_path)
    accept(page)
    rows = page.locator(".tt-link-row")
    rows.nth(0).locator('input[name$="/qid"]').fill("Q999999")
    rows.nth(1).locator('input[name$="/qid"]').fill("Q47703")
    page.evaluate("() => document.getElementById('task-form').submit()")  # no checks
    page.wait_for_load_state()
    error = page.locator(".tt-error", has_text="overlaps")
    assert "“The Godfather or Star Wars” overlaps “The Godfather”" in error.first.inner_text()
    assert rows.nth(0).locator('input[name$="/qid"]').input_value() == "Q999999"
    assert rows.nth(1).locator('input[name$="/qid"]').input_value() == "Q47703"
    rows.nth(1).get_by_role("button", name="Keep “The Godfather”").click()
    page.get_by_role("button", name="Submit").click()
    # "Star Wars" is still to decide: asked once (issue 36), then sent undecided.
    page.locator("[data-tt-conflicts]", has_text="still to decide").wait_for()
    page.get_by_role("button", name="Submit").click()
    page.get_by_role("heading", name="Thank you!").wait_for()
    answers = Assignment.objects.get(hit__stage=stage).answers
    assert answers is not None
    links = answers["items"][0]["links"]
    assert [(lk["text"], lk["qid"]) for lk in links] == [("The Godfather", "Q47703")]


@pytest.mark.parametrize("width", [390, 1280])
def test_submit_asks_once_about_spans_left_to_decide(browser, live_server, width):
    """Issue 36, point 6: rows left "to decide" are not sent silently: the first Submit
    names them and sends nothing; a second Submit sends them undecided."""
    stage, invite_path = live_stage(
        task_type="question_entity_linking", config={}, items=[ITEM], name="Link entities"
    )
    context = browser.new_context(
        base_url=live_server.url, viewport={"width": width, "height": 900}
    )
    page = context.new_page()
    page.set_default_timeout(10_000)
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    try:
        start(page, invite_path)
        accept(page)
        # axe-core loads with a reload: before the worker's clicks, not after them.
        assert_person_can_use(page, where=f"linking page at {width} px")
        if width == 390:  # a highlight is a touch target on a phone
            heights = page.locator("mark.tt-hl").evaluate_all(
                "(ms) => ms.map((m) => m.getBoundingClientRect().height)"
            )
            assert heights
            assert min(heights) >= 44, heights
        rows = page.locator(".tt-link-row")
        rows.nth(0).get_by_role("button", name="Not an entity").click()
        rows.nth(1).locator('input[name$="/qid"]').fill("Q47703")
        before = len(posts)

        page.get_by_role("button", name="Submit").click()

        alert = page.locator("[data-tt-conflicts]")
        alert.wait_for()
        assert "1 span is still to decide: “Star Wars”" in alert.inner_text()
        assert "Nothing was sent yet" in alert.inner_text()
        assert len(posts) == before
        assert "tt-active" in (rows.nth(2).get_attribute("class") or "")
        assert_person_can_use(page, where=f"spans to decide at {width} px")
        page.get_by_role("button", name="Submit").click()
        page.get_by_role("heading", name="Thank you!").wait_for()
    finally:
        context.close()
    assert Assignment.objects.get(hit__stage=stage).status == AssignmentStatus.SUBMITTED


@pytest.mark.parametrize("width", [390, 1280])
def test_a_reload_keeps_the_draft_of_the_links(browser, live_server, width):
    """Issue 36, point 6: spans added, ids given and rows marked survive a reload of the
    assignment page (a draft per assignment in the tab's sessionStorage)."""
    stage, invite_path = live_stage(
        task_type="question_entity_linking", config={}, items=[ITEM], name="Link entities"
    )
    context = browser.new_context(
        base_url=live_server.url, viewport={"width": width, "height": 900}
    )
    page = context.new_page()
    page.set_default_timeout(10_000)
    try:
        start(page, invite_path)
        accept(page)
        assert_person_can_use(page, where=f"linking page at {width} px")  # loads axe first
        rows = page.locator(".tt-link-row")
        rows.nth(0).get_by_role("button", name="Not an entity").click()
        rows.nth(1).locator('input[name$="/qid"]').fill("Q47703")
        _select_in_text(page, "Titanic")
        page.get_by_role("button", name="Add “Titanic”").click()
        rows.nth(3).locator('input[name$="/qid"]').fill("Q44578")

        page.reload()

        rows = page.locator(".tt-link-row")
        assert rows.count() == 4
        assert rows.nth(0).get_attribute("data-state") == "skip"
        assert rows.nth(1).locator('input[name$="/qid"]').input_value() == "Q47703"
        assert rows.nth(3).locator(".tt-link-caption").inner_text().startswith("“Titanic”")
        assert rows.nth(3).locator('input[name$="/qid"]').input_value() == "Q44578"
        assert page.locator("mark.tt-hl").all_inner_texts()[-1] == "Titanic"
        assert_person_can_use(page, where=f"linking draft after a reload at {width} px")
        rows.nth(2).locator('input[name$="/qid"]').fill("Q462")
        page.get_by_role("button", name="Submit").click()
        page.get_by_role("heading", name="Thank you!").wait_for()
    finally:
        context.close()
    stored = Assignment.objects.get(hit__stage=stage).answers
    assert stored is not None
    assert sorted(lk["qid"] for lk in stored["items"][0]["links"]) == ["Q44578", "Q462", "Q47703"]
