"""The linking page's search box with live Wikidata search and the empty-state wording
(issue 36, point 6), in Debian's chromium at 1280 and 390 px, axe-core clean.

"Ada Lovelace" is a common entity the offline (Mintaka) index does not hold. In the
embedded default the box searches the offline list only and says so: no suggestion
here does not mean the entity is missing from Wikidata. With ``LINKING_LIVE_SEARCH``
and a Wikidata endpoint (the fake of ``tests/linking``) the same search finds the
item, and a search that finds nothing asks the worker to try other names before
ticking "Not in Wikidata".
"""

from __future__ import annotations

import pytest
from django.core.cache import cache

from linking.wikidata import reset_host_gates
from tests.browser.a11y import assert_person_can_use
from tests.browser.pages import accept, live_stage, start
from tests.linking.fake_wikidata import SAMPLE_ITEMS, FakeWikidata

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AGENT = "qaportal-tests/1.0 (https://example.org/qaportal; tests@example.org)"
QUESTION = "Did Ada Lovelace write about the Analytical Engine?"
START = QUESTION.index("Ada Lovelace")
ITEM = {
    "external_id": "lovelace",
    "data": {
        "question": QUESTION,
        "proposed_spans": [{"start": START, "end": START + 12, "text": "Ada Lovelace"}],
    },
}
LOVELACE = {
    "Q7259": {
        "label": "Ada Lovelace",
        "description": "English mathematician (1815-1852)",
        "aliases": ["Augusta Ada King"],
        "instance_of": ["Q5"],
    }
}
ONLY_IF = "tick “Not in Wikidata” only if it truly has no item."


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Suggestion lists live in the shared cache (Redis): each test asks afresh."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def fake(settings):
    reset_host_gates()
    with FakeWikidata(items={**SAMPLE_ITEMS, **LOVELACE}) as server:
        settings.WIKIDATA_OFFLINE = True
        settings.WIKIDATA_API_URL = server.url
        settings.WIKIDATA_USER_AGENT = AGENT
        settings.LINKING_LIVE_SEARCH = True
        yield server
    reset_host_gates()


def _open_row(browser, live_server, width):
    _stage, invite_path = live_stage(
        task_type="question_entity_linking", config={}, items=[ITEM], name="Link entities"
    )
    context = browser.new_context(
        base_url=live_server.url, viewport={"width": width, "height": 900}
    )
    page = context.new_page()
    page.set_default_timeout(10_000)
    start(page, invite_path)
    accept(page)
    row = page.locator(".tt-link-row").filter(has_text="Ada Lovelace").first
    return context, page, row


@pytest.mark.parametrize("width", [390, 1280])
def test_offline_only_the_empty_list_does_not_read_as_missing(browser, live_server, width):
    context, page, row = _open_row(browser, live_server, width)
    try:
        row.get_by_role("combobox").fill("Ada Lovelace")
        status = row.locator(".tt-suggest-status")
        status.filter(has_text="No suggestion found here").wait_for()
        text = status.inner_text()
        assert "this list holds only some Wikidata items" in text
        assert text.endswith(ONLY_IF)
        assert row.get_by_role("option").count() == 0
        # The instructions say it before any search.
        notes = page.locator(".tt-instructions").inner_text()
        assert "Tick “Not in Wikidata” only if the entity truly has no Wikidata item" in notes
        assert_person_can_use(page, where=f"offline search, nothing found, at {width} px")
    finally:
        context.close()


@pytest.mark.parametrize("width", [390, 1280])
def test_live_search_finds_what_the_offline_index_lacks(browser, live_server, fake, width):
    context, page, row = _open_row(browser, live_server, width)
    try:
        search = row.get_by_role("combobox")
        search.fill("Ada Lovelace")
        option = row.get_by_role("option").filter(has_text="Q7259")
        option.wait_for()
        assert "English mathematician" in option.inner_text()
        assert_person_can_use(page, where=f"live suggestions at {width} px")
        # The check may take the focus from the box, which closes the list; back in the
        # box the list opens again, as for a worker coming back to it.
        search.focus()
        option.click()
        assert row.locator('input[name$="/qid"]').input_value() == "Q7259"
        assert fake.calls("wbsearchentities")
        # Nothing anywhere: other names first, "Not in Wikidata" only for the truly missing.
        search.fill("Zqxwv Lovelaceish")
        status = row.locator(".tt-suggest-status")
        status.filter(has_text="No suggestion found for").wait_for()
        assert status.inner_text() == (
            "No suggestion found for “Zqxwv Lovelaceish”. Search by another name or spelling; "
            + ONLY_IF
        )
        assert_person_can_use(page, where=f"live search, nothing found, at {width} px")
    finally:
        context.close()
