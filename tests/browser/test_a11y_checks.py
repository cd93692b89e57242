"""The page checks themselves can fail: axe-core (vendored) reports a serious
violation, and the layout check reports sideways scrolling and small targets."""

from __future__ import annotations

import pytest

from tests.browser.a11y import AXE, axe_violations, layout_problems

pytestmark = pytest.mark.browser

BAD_PAGE = """<!doctype html><html lang="en"><head><title>Bad</title></head><body><main>
<h1>Bad page</h1><img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">
<button style="min-height:0;height:20px;padding:0">Go</button>
<div style="width:900px">wide</div></main></body></html>"""


def test_axe_is_the_vendored_release():
    head = AXE.read_text(encoding="utf-8")[:40]
    assert head.startswith("/*! axe v4.14.1")


def test_the_checks_find_what_a_person_would_stumble_on(browser):
    context = browser.new_context(viewport={"width": 390, "height": 844})
    context.add_init_script(path=str(AXE))
    page = context.new_page()
    try:
        page.set_content(BAD_PAGE)
        problems = axe_violations(page)
        assert any(p.startswith("critical: image-alt") for p in problems), problems
        layout = layout_problems(page)
        assert any("scrolls sideways" in p for p in layout)
        assert any("target under 44 px: <button" in p for p in layout)
    finally:
        context.close()
