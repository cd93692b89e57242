"""The page checks themselves can fail: axe-core (vendored) reports a critical
violation and, since acceptance wants 0 violations of any impact, a moderate one too;
the layout check reports sideways scrolling and small targets."""

from __future__ import annotations

import pytest

from tests.browser.a11y import AXE, IMPACTS, axe_violations, layout_problems

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


# Clean but for one moderate violation: the heading jumps from h1 to h3.
MODERATE_PAGE = """<!doctype html><html lang="en"><head><title>Skips</title></head><body><main>
<h1>A page</h1><h3>A heading one level too deep</h3><p>Text.</p></main></body></html>"""


def test_every_impact_fails_by_default():
    assert IMPACTS == ("minor", "moderate", "serious", "critical")


def test_a_moderate_violation_now_fails(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.add_init_script(path=str(AXE))
    page = context.new_page()
    try:
        page.set_content(MODERATE_PAGE)
        problems = axe_violations(page)
        assert problems == [
            "moderate: heading-order (Heading levels should only increase by one) at h3"
        ]
        # Only serious and critical, as before: this page would have passed.
        assert axe_violations(page, impacts=("serious", "critical")) == []
    finally:
        context.close()
